package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/train"
)

// TestProcessesHungMachineReplaced stops machine 1 (SIGSTOP) after the
// job's first checkpoint: under BSP the job cannot go on without it, the
// scheduler declares it failed after the timeout, the supervisor kills
// it and starts its replacement, and the job ends with the same training
// as in process, bit for bit, without a whole-job restart.
func TestProcessesHungMachineReplaced(t *testing.T) {
	// Machine 1 cannot be stopped before the first checkpoint: the
	// replacement rolls back to a checkpoint.
	st := stopTrial(t, "machine 1", role("machine", 1))
	if err := syscall.Kill(st.victim, 0); !errors.Is(err, syscall.ESRCH) && isColo(st.victim) {
		t.Errorf("the stopped machine %d still runs", st.victim)
	}
	if len(st.pd.Recovered) != 1 || st.pd.Recovered[0].Replaced != "machine 1" {
		t.Fatalf("recoveries %+v, want machine 1 replaced once", st.pd.Recovered)
	}
	rec := st.pd.Recovered[0]
	if !strings.Contains(rec.Failure.Error(), "declared it lost") || !strings.Contains(rec.Failure.Error(), "no heartbeat") {
		t.Errorf("the failure does not say the scheduler declared machine 1 failed for its silence: %v", rec.Failure)
	}
	sameModel(t, "without failure", st.want, st.res)
	t.Logf("%d rounds; stopped at %v; noticed %.2f s later (timeout %v); training resumed %.2f s after the stop, from the checkpoint of round %d",
		st.res.Rounds, st.stopped.Format(time.StampMilli), rec.Noticed.Sub(st.stopped).Seconds(), st.pd.Timeout, rec.Resumed.Sub(st.stopped).Seconds(), rec.Round)
}

// sameModel fails unless got trained as want, the run named what (in
// process, without failure): the same passes, losses and test
// measures, bit for bit (after a failure the traffic differs: the rounds
// since the checkpoint were sent again).
func sameModel(t *testing.T, what string, want, got *train.Result) {
	t.Helper()
	if got.Passes != want.Passes || got.Rounds != want.Rounds || len(got.RoundsDetail) != len(want.RoundsDetail) {
		t.Fatalf("%d passes, %d rounds; %s %d, %d", got.Passes, got.Rounds, what, want.Passes, want.Rounds)
	}
	for i, p := range want.RoundsDetail {
		if q := got.RoundsDetail[i]; q.TrainLoss != p.TrainLoss || q.TrainAccuracy != p.TrainAccuracy {
			t.Errorf("pass %d: loss %v accuracy %v, %s %v %v", p.Pass, q.TrainLoss, q.TrainAccuracy, what, p.TrainLoss, p.TrainAccuracy)
		}
	}
	if got.Accuracy == nil || *got.Accuracy != *want.Accuracy || *got.LogLoss != *want.LogLoss || *got.AUC != *want.AUC {
		t.Errorf("test measures %+v, %s %+v", got.Eval, what, want.Eval)
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
	sameModel(t, "without failure", want, r.res)
	if recs := r.res.Recoveries; len(recs) != 2 || recs[0].Event != 1 || recs[1].Event != 1 || recs[0].Replaced != pd.Recovered[0].Replaced ||
		recs[0].Seconds <= 0 || recs[0].Round != pd.Recovered[0].Round || !strings.Contains(recs[0].Failure, "failed") {
		t.Errorf("the result's recoveries %+v, want two replacements of one event with the times and round of %+v", recs, pd.Recovered)
	}
	rec := pd.Recovered[0]
	t.Logf("%d rounds; killed %v at %v; noticed %.3f s later; training resumed %.2f s after the kill, from the checkpoint of round %d",
		r.res.Rounds, victims, killed.Format(time.StampMilli), rec.Noticed.Sub(killed).Seconds(), rec.Resumed.Sub(killed).Seconds(), rec.Round)
}

// stopped is a job of stopTrial, once it ended.
type stopped struct {
	want, res *train.Result // the run in process, the one with the stop
	pd        *Processes    // its deployment: its recoveries
	victim    int           // the process stopped
	stopped   time.Time     // when
}

// stopTrial trains 20 Newsgroups on 2 machines for 20 passes in
// process, then as processes with a checkpoint every 2 rounds, a
// timeout of 3 s and one recovery that replaces a failed process
// (Replace); once the first checkpoint is written it stops (SIGSTOP)
// the child process whose command line match accepts (what names it in
// failures). It fails the test if the job ended before, failed, or
// still ran 3 minutes after the stop.
func stopTrial(t *testing.T, what string, match func(line string) bool) stopped {
	t.Helper()
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc to find %s's process", what)
	}
	job, opened, _ := newsJob(t, 2, 20, true)
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	if want.Rounds < 8 {
		t.Fatalf("%d rounds: too few to stop %s after the first checkpoint and before the end", want.Rounds, what)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 2, Wait: true}
	st := stopped{want: want, pd: &Processes{Bin: coloBin, Graph: opened.Data.Graph, Cache: opened.WriteCache, Restarts: 1, Replace: true, Timeout: 3 * time.Second}}
	run := deployInBackground(t, job, opened, st.pd)
	st.victim = run.awaitCheckpoint(t, dir, 0, match)[0]
	signal(t, syscall.SIGSTOP, st.victim)
	st.stopped = time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			syscall.Kill(st.victim, syscall.SIGKILL)
		}
	})
	r := run.wait(t, 3*time.Minute, what+" was stopped")
	if r.err != nil {
		t.Fatalf("stopped %s: the job failed: %v", what, r.err)
	}
	st.res = r.res
	return st
}
