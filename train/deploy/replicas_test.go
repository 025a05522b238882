package deploy

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/train"
)

// TestProcessesServerKilledReplicas kills server 1 of three servers apart
// (SIGKILL) while 20 Newsgroups trains on three workers under BSP with one backup per
// server: the job goes on without a restart or a rollback, server 2
// serving server 1's keys, and trains the same passes, rounds, losses and
// test measures, bit for bit, as the run in process without replicas
// and without failure. The kill comes once the job's checkpoint of round
// 10 (of 60) is complete.
func TestProcessesServerKilledReplicas(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the server's process")
	}
	job, opened, _ := newsJob(t, 3, 60, true)
	job.Config.Servers = 3
	t0 := time.Now()
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in process: %v", time.Since(t0).Round(time.Millisecond))
	dir := t.TempDir()
	job.Config.Replicas, job.Config.Checkpoint = 1, train.Checkpoint{Dir: dir, Every: 5}
	pd := &Processes{Bin: coloBin, Graph: opened.Data.Graph, Logf: t.Logf}
	run := deployInBackground(t, job, opened, pd)
	victim := run.awaitCheckpoint(t, dir, 10, role("server", 1))[0]
	signal(t, syscall.SIGKILL, victim)
	killed := time.Now()
	got := run.wait(t, time.Minute, "server 1 was killed")
	t.Logf("the job ended %v after the kill", time.Since(killed).Round(time.Millisecond))
	if got.err != nil {
		t.Fatalf("the job failed: %v", got.err)
	}
	if len(pd.Failovers) != 1 || !strings.Contains(pd.Failovers[0].Failure.Error(), "server 1") {
		t.Fatalf("failovers %v, want server 1's", pd.Failovers)
	}
	if len(pd.Recovered) != 0 {
		t.Fatalf("the job restarted: %v", pd.Recovered)
	}
	sameModel(t, "without failure", want, got.res)
}
