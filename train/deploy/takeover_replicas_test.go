package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"colo/checkpoint"
	"colo/internal/colotest"
	"colo/train"
)

// TestProcessesSchedulerKilledAfterFailover kills server 1 of three
// servers apart (SIGKILL) while 20 Newsgroups trains on three workers
// under BSP with one backup per server and a standby scheduler; once
// the new copies the failover led to are in place (server 0 holds
// server 1's ranges, now served by server 2's process, and server 2
// holds server 0's), it kills the scheduler. The scheduler started
// again takes the job over from the nodes' reports, which carry the
// failover and the copies: no whole-job restart, no rollback, no
// process replaced, and the job ends with the passes, losses and test
// measures of the run in process without failure, and its final
// checkpoint's server snapshots equal to that run's byte for byte. It
// logs the times from each kill to training resumed.
func TestProcessesSchedulerKilledAfterFailover(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the processes")
	}
	const passes, every = 60, 5
	job, opened, _ := newsJob(t, 3, passes, true)
	job.Config.Servers = 3
	wantDir := filepath.Join(t.TempDir(), "want")
	job.Config.Checkpoint = train.Checkpoint{Dir: wantDir, Every: every, Wait: true}
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	job.Config.Replicas, job.Config.Checkpoint = 1, train.Checkpoint{Dir: dir, Every: every, Wait: true}
	var mu sync.Mutex
	copies := 0
	copied := make(chan struct{})
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.Contains(format, "holds a new copy of server") {
			mu.Lock()
			if copies++; copies == 2 {
				close(copied)
			}
			mu.Unlock()
		}
	}
	pd := &Processes{Bin: coloBin, Graph: opened.Data.Graph, Cache: opened.WriteCache, Restarts: 1, Replace: true, Logf: logf}
	run := deployInBackground(t, job, opened, pd)
	pids := run.awaitCheckpoint(t, dir, 2*every, role("server", 1), role("scheduler", -1))
	server, scheduler := pids[0], pids[1]
	signal(t, syscall.SIGKILL, server)
	killedServer := time.Now()
	select {
	case <-copied:
	case r := <-run.done:
		t.Fatalf("the job ended (%v) before the new copies after server 1's failover were in place", r.err)
	case <-time.After(time.Minute):
		t.Fatal("no new copies in place a minute after server 1 was killed")
	}
	round := -1
	if m, _, err := checkpoint.Latest(dir); err == nil {
		round = m.Round
	}
	signal(t, syscall.SIGKILL, scheduler)
	killedScheduler := time.Now()
	r := run.wait(t, 3*time.Minute, "the scheduler was killed")
	if r.err != nil {
		t.Fatalf("the job failed: %v", r.err)
	}
	if len(pd.Failovers) != 1 || !strings.Contains(pd.Failovers[0].Failure.Error(), "server 1") {
		t.Fatalf("failovers %+v, want server 1's", pd.Failovers)
	}
	if len(pd.Recovered) != 1 || pd.Recovered[0].Replaced != "scheduler" || pd.Recovered[0].Round != -1 {
		t.Fatalf("recoveries %+v, want the scheduler taken over once, nothing restarted or rolled back", pd.Recovered)
	}
	sameModel(t, "without failure", want, r.res)
	if r.res.Rounds%every != 0 {
		t.Fatalf("%d rounds, not a multiple of the %d between checkpoints", r.res.Rounds, every)
	}
	for s := range 3 {
		name := checkpoint.SnapshotName(s)
		w, err1 := os.ReadFile(filepath.Join(checkpoint.RoundDir(wantDir, want.Rounds), name))
		g, err2 := os.ReadFile(filepath.Join(checkpoint.RoundDir(dir, r.res.Rounds), name))
		if err1 != nil || err2 != nil {
			t.Fatalf("server %d's final snapshots: %v; %v", s, err1, err2)
		}
		if !bytes.Equal(w, g) {
			t.Errorf("server %d's final snapshot differs from the run in process (%d and %d bytes)", s, len(g), len(w))
		}
	}
	// How soon is a benchmark's figure, logged: a loaded machine delays
	// the processes, and a test must not fail for it.
	f, rec := pd.Failovers[0], pd.Recovered[0]
	if rec.Resumed.Before(killedScheduler) {
		t.Errorf("training resumed %v before the scheduler's kill", killedScheduler.Sub(rec.Resumed))
	}
	t.Logf("%d rounds; server 1 killed after the checkpoint of round %d, requests sent again to its backup %.3f s after; scheduler killed %.3f s after the server (checkpoint of round %d), taken over, training resumed %.3f s after its kill",
		r.res.Rounds, 2*every, f.Resumed.Sub(killedServer).Seconds(), killedScheduler.Sub(killedServer).Seconds(), round, rec.Resumed.Sub(killedScheduler).Seconds())
}
