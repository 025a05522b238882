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

// TestProcessesHungSchedulerTakenOver stops the scheduler (SIGSTOP)
// after the job's first checkpoint, with a standby (Replace): its
// supervisor, reading no line of life from it for two thirds of the
// timeout, kills it and starts the scheduler that takes the job over;
// the nodes report to it, nothing is replaced or rolled back, training
// resumes within the timeout and 2 s of the stop, and the job ends with
// the same training as in process, bit for bit.
func TestProcessesHungSchedulerTakenOver(t *testing.T) {
	colotest.Need(t, coloBin)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the scheduler's process")
	}
	job, opened, _ := newsJob(t, 2, 20, true)
	want, err := deploy(t, job, opened, InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	job.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 2, Wait: true}
	const timeout = 3 * time.Second
	pd := &Processes{Bin: coloBin, Graph: opened.Data.Graph, Cache: opened.WriteCache, Restarts: 1, Replace: true, Timeout: timeout}
	victim, stopped, res := stopAfterCheckpoint(t, job, opened, pd, dir, "the scheduler", role("scheduler", -1))
	if err := syscall.Kill(victim, 0); !errors.Is(err, syscall.ESRCH) && isColo(victim) {
		t.Errorf("the stopped scheduler %d still runs", victim)
	}
	if len(pd.Recovered) != 1 || pd.Recovered[0].Replaced != "scheduler" || pd.Recovered[0].Round != -1 {
		t.Fatalf("recoveries %+v, want the scheduler taken over once, nothing rolled back", pd.Recovered)
	}
	rec := pd.Recovered[0]
	if !strings.Contains(rec.Failure.Error(), "hung or stopped") {
		t.Errorf("the failure does not say the scheduler was taken for hung: %v", rec.Failure)
	}
	sameModel(t, want, res)
	// How soon (within the timeout + 2 s on a quiet machine) is a
	// benchmark's figure, logged: a loaded machine delays the supervisor
	// and the takeover alike, and a test must not fail for that.
	if rec.Resumed.Before(stopped) {
		t.Errorf("training resumed %v before the stop", stopped.Sub(rec.Resumed))
	}
	t.Logf("%d rounds; noticed %.2f s after the stop (timeout %v); training resumed %.2f s after the stop",
		res.Rounds, rec.Noticed.Sub(stopped).Seconds(), timeout, rec.Resumed.Sub(stopped).Seconds())
}
