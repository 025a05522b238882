package clib

import (
	"testing"

	"colo/launch/launchtest"
)

// TestJobSurvive: with replicas, colo run's launcher goes on without a
// dead server process only when a backup whose own process lives takes
// its keys over, as the scheduler decides; a second death that reaches
// keys with no live copy ends the job.
func TestJobSurvive(t *testing.T) {
	if (Job{Servers: 3}).Survive() != nil {
		t.Fatal("a Survive without replicas")
	}
	for _, tc := range []struct {
		replicas int
		deaths   []string
		want     []bool
	}{
		{1, []string{"server 1", "server 2"}, []bool{true, false}}, // server 2 served server 1's keys
		{1, []string{"server 1", "server 0"}, []bool{true, false}}, // server 0's backup is gone
		{2, []string{"server 1", "server 0"}, []bool{true, true}},  // its second backup, server 2, takes over
		{2, []string{"server 1", "server 2"}, []bool{true, false}},
		{1, []string{"worker 0", "server 3", "server 1x"}, []bool{false, false, false}},
	} {
		survive := Job{Servers: 3, Replicas: tc.replicas}.Survive()
		for i, name := range tc.deaths {
			if got := survive(name, nil); got != tc.want[i] {
				t.Errorf("%v: %s survived %v, want %v", tc.deaths, name, got, tc.want[i])
			}
		}
	}
}

// TestJobSurvivor: told the new copies the scheduler reports, colo
// run's launcher survives a second failure of the process serving keys
// taken over, as the scheduler does; without them it does not.
func TestJobSurvivor(t *testing.T) {
	if s, b := (Job{Servers: 3}).Survivor(); s != nil || b != nil {
		t.Fatal("a Survivor without replicas")
	}
	for _, told := range []bool{false, true} {
		survive, backedUp := Job{Servers: 3, Replicas: 1}.Survivor()
		if !survive("server 0", nil) {
			t.Fatal("server 0's death not survived")
		}
		if told {
			// The scheduler's copies after server 0 failed over to
			// server 1 (ps/sched rebackup).
			backedUp(0, 2)
			backedUp(2, 1)
		}
		if got := survive("server 1", nil); got != told {
			t.Errorf("told of the new copies %v: server 1's death survived %v", told, got)
		}
	}
}

// TestJobDigestLinkRate checks that the digest takes the link rate by
// its value, and that a rate that does not parse is refused naming the
// field.
func TestJobDigestLinkRate(t *testing.T) {
	launchtest.DigestsRate(t, "torch", func(rate string) (string, error) {
		j := DefaultJob()
		j.Machines, j.LinkBandwidth = 2, rate
		d, err := j.Digest()
		return d.Sum, err
	})
}
