package deploy

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// TestProcessesHungSchedulerTakenOver stops the scheduler (SIGSTOP)
// after the job's first checkpoint, with a standby (Replace): its
// supervisor, reading no line of life from it for two thirds of the
// timeout, kills it and starts the scheduler that takes the job over;
// the nodes report to it, nothing is replaced or rolled back, training
// resumes within the timeout and 2 s of the stop, and the job ends with
// the same training as in process, bit for bit.
func TestProcessesHungSchedulerTakenOver(t *testing.T) {
	st := stopTrial(t, "the scheduler", role("scheduler", -1))
	if err := syscall.Kill(st.victim, 0); !errors.Is(err, syscall.ESRCH) && isColo(st.victim) {
		t.Errorf("the stopped scheduler %d still runs", st.victim)
	}
	if len(st.pd.Recovered) != 1 || st.pd.Recovered[0].Replaced != "scheduler" || st.pd.Recovered[0].Round != -1 {
		t.Fatalf("recoveries %+v, want the scheduler taken over once, nothing rolled back", st.pd.Recovered)
	}
	rec := st.pd.Recovered[0]
	if !strings.Contains(rec.Failure.Error(), "hung or stopped") {
		t.Errorf("the failure does not say the scheduler was taken for hung: %v", rec.Failure)
	}
	sameModel(t, "without failure", st.want, st.res)
	// How soon (within the timeout + 2 s on a quiet machine) is a
	// benchmark's figure, logged: a loaded machine delays the supervisor
	// and the takeover alike, and a test must not fail for that.
	if rec.Resumed.Before(st.stopped) {
		t.Errorf("training resumed %v before the stop", st.stopped.Sub(rec.Resumed))
	}
	t.Logf("%d rounds; noticed %.2f s after the stop (timeout %v); training resumed %.2f s after the stop",
		st.res.Rounds, rec.Noticed.Sub(st.stopped).Seconds(), st.pd.Timeout, rec.Resumed.Sub(st.stopped).Seconds())
}
