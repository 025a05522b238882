package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/app"
	"colo/internal/colotest"
	"colo/train"
)

// TestProcessesHungMachineReplaced stops machine 1 (SIGSTOP) after the
// job's first checkpoint: under BSP the job cannot go on without it, the
// scheduler declares it failed after the timeout, the supervisor kills
// it and starts its replacement, and the job ends with the same training
// as in process, bit for bit, without a whole-job restart.
func TestProcessesHungMachineReplaced(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the machine's process")
	}
	job, opened, _ := newsJob(t, 2, 20, true)
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	if want.Rounds < 8 {
		t.Fatalf("%d rounds: too few to stop a machine after the first checkpoint and before the end", want.Rounds)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 2, Wait: true}
	const timeout = 3 * time.Second
	pd := &Processes{Bin: coloBin, Graph: opened.Data.Graph, Cache: opened.WriteCache, Restarts: 1, Replace: true, Timeout: timeout}
	// Machine 1 cannot be stopped before the first checkpoint: the
	// replacement rolls back to a checkpoint.
	victim, stopped, res := stopAfterCheckpoint(t, job, opened, pd, dir, "machine 1", role("machine", 1))
	if err := syscall.Kill(victim, 0); !errors.Is(err, syscall.ESRCH) && isColo(victim) {
		t.Errorf("the stopped machine %d still runs", victim)
	}
	if len(pd.Recovered) != 1 || pd.Recovered[0].Replaced != "machine 1" {
		t.Fatalf("recoveries %+v, want machine 1 replaced once", pd.Recovered)
	}
	rec := pd.Recovered[0]
	if !strings.Contains(rec.Failure.Error(), "declared it lost") || !strings.Contains(rec.Failure.Error(), "no heartbeat") {
		t.Errorf("the failure does not say the scheduler declared machine 1 failed for its silence: %v", rec.Failure)
	}
	sameModel(t, want, res)
	t.Logf("%d rounds; stopped at %v; noticed %.2f s later (timeout %v); training resumed %.2f s after the stop, from the checkpoint of round %d",
		res.Rounds, stopped.Format(time.StampMilli), rec.Noticed.Sub(stopped).Seconds(), timeout, rec.Resumed.Sub(stopped).Seconds(), rec.Round)
}

// sameModel fails unless a run with a failure trained as the run
// without: the same passes, losses and test measures, bit for bit (the
// traffic differs: the rounds since the checkpoint were sent again).
func sameModel(t *testing.T, want, got *train.Result) {
	t.Helper()
	if got.Passes != want.Passes || got.Rounds != want.Rounds || len(got.RoundsDetail) != len(want.RoundsDetail) {
		t.Fatalf("%d passes, %d rounds; without failure %d, %d", got.Passes, got.Rounds, want.Passes, want.Rounds)
	}
	for i, p := range want.RoundsDetail {
		if q := got.RoundsDetail[i]; q.TrainLoss != p.TrainLoss || q.TrainAccuracy != p.TrainAccuracy {
			t.Errorf("pass %d: loss %v accuracy %v, without failure %v %v", p.Pass, q.TrainLoss, q.TrainAccuracy, p.TrainLoss, p.TrainAccuracy)
		}
	}
	if got.Accuracy == nil || *got.Accuracy != *want.Accuracy || *got.LogLoss != *want.LogLoss || *got.AUC != *want.AUC {
		t.Errorf("test measures %+v, without failure %+v", got.Eval, want.Eval)
	}
}

// TestProcessesTwoMachinesKilledOneEvent kills machines 1 and 2 of three
// together (SIGKILL) after the job's first checkpoint, with one restart:
// the two failures are one event, both are replaced in one pause, and the
// job ends with the same training as in process, bit for bit.
func TestProcessesTwoMachinesKilledOneEvent(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the machines' processes")
	}
	job, opened, _ := newsJob(t, 3, 20, true)
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 2, Wait: true}
	pd := &Processes{Bin: coloBin, Graph: opened.Data.Graph, Cache: opened.WriteCache, Restarts: 1, Replace: true}
	run := deployInBackground(t, job, opened, pd)
	victims := run.awaitCheckpoint(t, dir, 0, role("machine", 1), role("machine", 2))
	signal(t, syscall.SIGKILL, victims...)
	killed := time.Now()
	r := run.wait(t, 3*time.Minute, "machines 1 and 2 were killed")
	if r.err != nil {
		t.Fatalf("two machines killed together, one restart: the job failed: %v", r.err)
	}
	if len(pd.Recovered) != 2 || pd.Recovered[0].Joined || !pd.Recovered[1].Joined || pd.Recovered[0].Replaced == pd.Recovered[1].Replaced {
		t.Fatalf("recoveries %+v, want machines 1 and 2 replaced in one event", pd.Recovered)
	}
	sameModel(t, want, r.res)
	if recs := r.res.Recoveries; len(recs) != 2 || recs[0].Event != 1 || recs[1].Event != 1 || recs[0].Replaced != pd.Recovered[0].Replaced ||
		recs[0].Seconds <= 0 || recs[0].Round != pd.Recovered[0].Round || !strings.Contains(recs[0].Failure, "failed") {
		t.Errorf("the result's recoveries %+v, want two replacements of one event with the times and round of %+v", recs, pd.Recovered)
	}
	rec := pd.Recovered[0]
	t.Logf("%d rounds; killed %v at %v; noticed %.3f s later; training resumed %.2f s after the kill, from the checkpoint of round %d",
		r.res.Rounds, victims, killed.Format(time.StampMilli), rec.Noticed.Sub(killed).Seconds(), rec.Resumed.Sub(killed).Seconds(), rec.Round)
}

// stopAfterCheckpoint deploys job on pd in the background and, once its
// first checkpoint in dir is written, stops (SIGSTOP) the child process
// whose command line match accepts (what names it in failures). It
// returns that process, when it was stopped, and the job's result: it
// fails the test if the job ended before, failed, or still ran 3
// minutes after the stop.
func stopAfterCheckpoint(t *testing.T, job train.Job, opened *app.Opened, pd *Processes, dir, what string, match func(line string) bool) (victim int, stopped time.Time, res *train.Result) {
	t.Helper()
	run := deployInBackground(t, job, opened, pd)
	victim = run.awaitCheckpoint(t, dir, 0, match)[0]
	signal(t, syscall.SIGSTOP, victim)
	stopped = time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			syscall.Kill(victim, syscall.SIGKILL)
		}
	})
	r := run.wait(t, 3*time.Minute, what+" was stopped")
	if r.err != nil {
		t.Fatalf("stopped %s: the job failed: %v", what, r.err)
	}
	return victim, stopped, r.res
}
