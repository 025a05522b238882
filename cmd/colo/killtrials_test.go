package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"colo/checkpoint"
	"colo/train"
)

// killJob is a small BSP job of processes that the kill trials fail.
type killJob struct {
	name  string
	args  []string // colo train's data and flags, without checkpoints
	every int      // rounds between two checkpoints; divides the rounds
	roles []string // the roles whose processes a trial kills
	ranks int      // of each role
}

// killTrialJobs returns the jobs of the kill trials: lr on 2 co-located
// machines (a server and a worker in each process), and an mlp whose 2
// servers run apart from its 2 workers and whose evaluator scores the
// model every epoch.
func killTrialJobs(t *testing.T) []killJob {
	dir := t.TempDir()
	lr := filepath.Join(dir, "powerlaw.libsvm")
	if out, err := exec.Command(coloBin, "gen", "powerlaw", "-n", "3000", "--seed", "7", "-o", lr).CombinedOutput(); err != nil {
		t.Fatalf("colo gen: %v\n%s", err, out)
	}
	return []killJob{
		{name: "co-located", args: []string{lr, "--machines", "2", "--batch", "100", "--max-passes", "3", "--epsilon", "0",
			"--link-bandwidth", "4mbit"}, every: 3, roles: []string{"machine"}, ranks: 2},
		{name: "servers apart", args: []string{blobsCSV(t, 600), "--app", "mlp", "--label-col", "-1", "--hidden", "16",
			"--machines", "2", "--servers", "2", "--epochs", "6", "--batch", "30"}, every: 4, roles: []string{"server", "worker"}, ranks: 2},
	}
}

// nodePID returns the pid of the child of parent that runs the colo
// node of role and rank (any rank when rank is −1: the scheduler), 0
// when there is none (yet).
func nodePID(parent int, role string, rank int) int {
	for _, c := range children(parent) {
		if strings.Contains(c.args, "--role "+role+" ") && (rank < 0 || strings.Contains(c.args, "--rank "+strconv.Itoa(rank)+" ")) {
			return c.pid
		}
	}
	return 0
}

// proc is a child process: its pid and command line, the arguments
// joined by spaces.
type proc struct {
	pid  int
	args string
}

// children returns the child processes of parent.
func children(parent int) []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, ppid.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, proc{pid, strings.Join(strings.Split(string(cmdline), "\x00"), " ")})
	}
	return out
}

// killTrial is one seeded failure: the process of role and rank is
// killed with SIGKILL delay after the manifest of checkpoint round after
// appears, so that it dies in one of the rounds that follow.
type killTrial struct {
	role  string
	rank  int
	after int
	delay time.Duration
	// final, when set, is the unfailed run's last round: the kill is
	// placed only while no checkpoint of that round exists, so that it
	// lands while the job trains (see runKilled).
	final int
	// whole restarts the whole job (--recovery restart) instead of
	// replacing the killed process.
	whole bool
	// failover is set for a job with replicated key ranges
	// (--replicas): the killed server's backup takes its ranges over,
	// and nothing is replaced or rolled back.
	failover bool
	// with, when set, names a machine ("machine 1") killed together
	// with the scheduler: a host that died with both.
	with string
	// second, with failover, kills a second server once colo train
	// reports the new copy of the first one's ranges in place: the
	// server that is neither the first nor the one holding that copy,
	// which serves the first one's ranges (3 servers, one backup each).
	second bool
}

func (k killTrial) String() string {
	how := "replaced"
	switch {
	case k.restarted():
		how = "whole job restarted"
	case k.failover:
		how = "its backup taking over"
	case k.takeover():
		how = "a new scheduler taking over"
	}
	if k.second {
		return fmt.Sprintf("%s killed %v after the checkpoint of round %d, then the server serving its ranges once they had a new copy, both taken over by their backups", k.name(), k.delay, k.after)
	}
	if k.with != "" {
		return fmt.Sprintf("%s and %s killed together %v after the checkpoint of round %d, taken over and replaced", k.name(), k.with, k.delay, k.after)
	}
	return fmt.Sprintf("%s killed %v after the checkpoint of round %d, %s", k.name(), k.delay, k.after, how)
}

// name is the killed process's name in colo train's reports.
func (k killTrial) name() string {
	if k.rank < 0 {
		return k.role
	}
	return fmt.Sprintf("%s %d", k.role, k.rank)
}

// restarted reports whether the trial's recovery is a whole-job restart.
func (k killTrial) restarted() bool { return k.whole }

// takeover reports whether the trial kills the scheduler alone of a job
// run to replace failed processes: a scheduler started again takes the
// job over, and nothing is rolled back.
func (k killTrial) takeover() bool { return k.role == "scheduler" && !k.whole && k.with == "" }

// killRun is what a run with a kill measured.
type killRun struct {
	res     *train.Result
	snaps   [][]byte // the final checkpoint's server snapshots
	killed  time.Time
	resumed time.Time // when the restarted run's training began
	from    int       // the checkpoint round it resumed from (−1: the start)
	// checkpointed is when the newest complete checkpoint at the kill,
	// of round last, was written: read just before the kill, so that
	// last is at most the newest at the kill; lastAfter, read just
	// after, at least.
	checkpointed    time.Time
	last, lastAfter int
	stderr          string
	// killed2 and resumed2 are those of the second kill (killTrial.
	// second); resumed2 is zero when the second server had left no
	// request unanswered.
	killed2, resumed2 time.Time
	// missed is set when no process was killed because the job's final
	// checkpoint appeared before the kill could be placed, or when the
	// kill of a replacement trial came after a worker had finished
	// (missedKill), or when the restart resumed from the job's final
	// checkpoint, completed after the kill; for a run without a kill, when it recovered from a
	// failure all the same (recovered). res is nil after a missed
	// kill, set for a run without a kill.
	missed bool
}

// resumedRE matches the report of colo train of a recovery: when
// training resumed, and what it resumed from after which failure, for a
// whole-job restart (fromRE) and a replacement (replacedRE, rolledRE).
var (
	resumedRE  = regexp.MustCompile(`training resumed at unix (\d+) ns`)
	fromRE     = regexp.MustCompile(`restart 1 of 1 after .*: from the checkpoint of round (-?\d+)`)
	replacedRE = regexp.MustCompile(`replacement 1 of 1 after (.*) failed: .* started again with --recover`)
	rolledRE   = regexp.MustCompile(`replacement 1: (.*) rolled back with the others to the checkpoint of round (\d+)`)
	// A failover (failedOverRE) and when the workers had sent the
	// backup what the failed server had not answered (failoverRE),
	// with replicated key ranges.
	failedOverRE = regexp.MustCompile(`(.*) failed \(.*\): its backup serves its key ranges, and the job goes on without it`)
	failoverRE   = regexp.MustCompile(`failover: (.*) failed: .*sent at unix (\d+) ns`)
	// A takeover of the scheduler (takeoverRE), and when the last node
	// heard the new scheduler (tookOverRE).
	takeoverRE = regexp.MustCompile(`takeover 1 of 1 (after|, the same failure event, after) scheduler failed: .* started again with --takeover`)
	tookOverRE = regexp.MustCompile(`takeover 1: the scheduler's job was taken over, nothing rolled back; .*training resumed at unix (\d+) ns`)
)

// runKilled runs colo train args with checkpoints every every rounds in
// dir and one restart, kills the process of k (none when k.role is ""),
// and returns what it measured.
func runKilled(t *testing.T, args []string, every int, k killTrial) *killRun {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ck")
	out := filepath.Join(t.TempDir(), "run.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recovery := "replace"
	if k.whole {
		recovery = "restart"
	}
	cmd := exec.CommandContext(ctx, coloBin, append(append([]string{"train"}, args...), "--processes",
		// Every due checkpoint is taken (--checkpoint-wait): the jobs
		// are so small that a writer takes longer than the rounds
		// between two, so that without it the jobs would skip all but
		// the first and the last, and leave no round to kill in.
		"--checkpoint", dir, "--checkpoint-every", strconv.Itoa(every), "--checkpoint-wait", "--restarts", "1", "--recovery", recovery, "--json", out)...)
	var errOut syncBuffer
	cmd.Stderr = &errOut
	// A job that hangs: every node dumps its goroutines (relayed by colo
	// train) before colo train is killed.
	cmd.Cancel = func() error {
		for _, c := range children(cmd.Process.Pid) {
			syscall.Kill(c.pid, syscall.SIGQUIT)
		}
		time.Sleep(2 * time.Second)
		return cmd.Process.Kill()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &killRun{from: -1}
	late := -1 // the final checkpoint seen before the kill could be placed
	if k.role != "" {
		for r.killed.IsZero() && late < 0 && ctx.Err() == nil {
			// The checkpoint of round k.after, or a later one when this
			// loop, slowed by a loaded machine, missed it before it was
			// pruned (or it was skipped while the one before was being
			// written); but not the final one: the job has trained.
			last, _ := newestManifest(dir)
			if k.final > 0 && last >= k.final {
				late = last
				break
			}
			if last >= k.after {
				time.Sleep(k.delay)
				var with int
				if k.with != "" {
					var rank int
					fmt.Sscanf(k.with, "machine %d", &rank)
					with = nodePID(cmd.Process.Pid, "machine", rank)
				}
				// The newest manifest and the time are read before the
				// kill, and the manifest again after it: read only
				// after it, on a loaded machine, they were of a moment
				// the job had already recovered and trained on (round
				// 54's manifest for a kill after round 27's, the resume
				// 159 ms "before" the kill, at load 45-50); read only
				// before, the final checkpoint could complete between
				// the read and the kill.
				pid := nodePID(cmd.Process.Pid, k.role, k.rank)
				last, checkpointed := newestManifest(dir)
				killed := time.Now()
				if pid > 0 && (k.with == "" || with > 0) && syscall.Kill(pid, syscall.SIGKILL) == nil {
					if with > 0 {
						syscall.Kill(with, syscall.SIGKILL)
					}
					r.killed, r.last, r.checkpointed = killed, last, checkpointed
					r.lastAfter, _ = newestManifest(dir)
					if k.final > 0 && r.lastAfter >= k.final {
						// The job had written its final checkpoint
						// when the kill came: it had trained.
						late = r.lastAfter
					}
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	second := ""
	if k.second && !r.killed.IsZero() {
		late, second, r.killed2 = killSecond(ctx, cmd.Process.Pid, dir, k, &errOut)
	}
	err := cmd.Wait()
	r.stderr = errOut.String()
	if err == nil && missedKill(k, r.stderr, late) {
		r.missed = true
		return r
	}
	if err == nil && k.role != "" && r.killed.IsZero() {
		err = errors.New("no process killed: the job ended first, or no checkpoint appeared")
	}
	if err != nil {
		t.Fatalf("colo train, %v: %v\n%s", k, err, r.stderr)
	}
	r.res, _ = readResult(t, out)
	if k.role == "" && recovered(r.res, r.stderr) {
		r.missed = true
		return r
	}
	if k.role != "" && k.restarted() {
		m := fromRE.FindStringSubmatch(r.stderr)
		n := resumedRE.FindStringSubmatch(r.stderr)
		if m == nil || n == nil {
			t.Fatalf("%v: no restart reported:\n%s", k, r.stderr)
		}
		if !strings.Contains(m[0], fmt.Sprintf("after %s failed", k.name())) {
			t.Errorf("%v: the restart blames another process: %s", k, m[0])
		}
		r.from, _ = strconv.Atoi(m[1])
		ns, _ := strconv.ParseInt(n[1], 10, 64)
		r.resumed = time.Unix(0, ns)
		if k.final > 0 && r.from >= k.final && r.lastAfter < k.final {
			// The job's final checkpoint, whose files the killed process
			// had written, was completed by the others after the kill
			// (a loaded machine placed the kill late): the job had
			// trained, and its restart had nothing left to recover.
			r.missed = true
			return r
		}
	}
	if k.role != "" && k.failover {
		// The backup took over: nothing started again, nothing rolled
		// back.
		a := failedOverRE.FindStringSubmatch(r.stderr)
		if a == nil || strings.Contains(r.stderr, "replacement 1") || strings.Contains(r.stderr, "restart 1 of 1") || len(r.res.Recoveries) > 0 {
			t.Fatalf("%v: no failover reported, or a process was replaced or the job restarted (recoveries %+v):\n%s", k, r.res.Recoveries, r.stderr)
		}
		if n := len(failedOverRE.FindAllString(r.stderr, -1)); k.second && n != 2 {
			t.Fatalf("%v: %d failovers reported, want 2:\n%s", k, n, r.stderr)
		}
		// Each killed server failed over, in the order the supervisor
		// saw the exits: under load the second's may come first (its
		// kill follows the first's new copy, which the scheduler may
		// report before the supervisor reports the first exit).
		for _, name := range []string{k.name(), second} {
			if name != "" && !slices.ContainsFunc(failedOverRE.FindAllStringSubmatch(r.stderr, -1), func(m []string) bool { return strings.HasSuffix(m[1], name) }) {
				t.Errorf("%v: no failover of %s reported, the first of another process: %s", k, name, a[0])
			}
		}
		// A kill between two rounds leaves the backup nothing to be sent.
		for _, n := range failoverRE.FindAllStringSubmatch(r.stderr, -1) {
			ns, _ := strconv.ParseInt(n[2], 10, 64)
			switch n[1] {
			case k.name():
				r.resumed = time.Unix(0, ns)
			case second:
				r.resumed2 = time.Unix(0, ns)
			}
		}
	}
	if k.takeover() {
		// A scheduler took the job over: nothing replaced, restarted or
		// rolled back.
		a, n := takeoverRE.FindStringSubmatch(r.stderr), tookOverRE.FindStringSubmatch(r.stderr)
		if a == nil || n == nil || strings.Contains(r.stderr, "replacement 1") || strings.Contains(r.stderr, "restart 1 of 1") || strings.Contains(r.stderr, "rolled back with") ||
			len(r.res.Recoveries) != 1 || r.res.Recoveries[0].Replaced != "scheduler" {
			t.Fatalf("%v: no takeover reported, or a process was replaced or the job restarted (recoveries %+v):\n%s", k, r.res.Recoveries, r.stderr)
		}
		ns, _ := strconv.ParseInt(n[1], 10, 64)
		r.resumed = time.Unix(0, ns)
	}
	if k.with != "" {
		// The scheduler taken over and the machine replaced, in one
		// event: every worker rolled back with the replacement.
		a, b, n := takeoverRE.FindStringSubmatch(r.stderr), rolledRE.FindStringSubmatch(r.stderr), resumedRE.FindStringSubmatch(r.stderr)
		if a == nil || b == nil || n == nil || !strings.Contains(r.stderr, "replacement 1 of 1") || strings.Contains(r.stderr, "restart 1 of 1") {
			t.Fatalf("%v: no takeover and replacement reported, or the whole job restarted:\n%s", k, r.stderr)
		}
		if names := strings.Split(b[1], " and "); len(names) != 2 || !slices.Contains(names, "scheduler") || !slices.Contains(names, k.with) {
			t.Errorf("%v: the event recovered %s", k, b[1])
		}
		r.from, _ = strconv.Atoi(b[2])
		ns, _ := strconv.ParseInt(n[1], 10, 64)
		r.resumed = time.Unix(0, ns)
	}
	if k.role != "" && !k.restarted() && !k.failover && !k.takeover() && k.with == "" {
		// Only the killed process was started again: no whole-job
		// restart, and every worker rolled back.
		a, b, n := replacedRE.FindStringSubmatch(r.stderr), rolledRE.FindStringSubmatch(r.stderr), resumedRE.FindStringSubmatch(r.stderr)
		if a == nil || b == nil || n == nil || strings.Contains(r.stderr, "restart 1 of 1") {
			t.Fatalf("%v: no replacement reported, or the whole job restarted:\n%s", k, r.stderr)
		}
		if name := k.name(); a[1] != name || b[1] != name {
			t.Errorf("%v: the replacement was of another process: %s; %s", k, a[0], b[0])
		}
		r.from, _ = strconv.Atoi(b[2])
		ns, _ := strconv.ParseInt(n[1], 10, 64)
		r.resumed = time.Unix(0, ns)
	}
	if r.res.Rounds%every != 0 {
		t.Fatalf("%d rounds, not a multiple of the %d between checkpoints: the final model is not in a checkpoint", r.res.Rounds, every)
	}
	// Each server's snapshot as a resume restores it: its file, or with
	// --checkpoint-incremental its delta applied to its chain.
	m, err := checkpoint.Open(dir, r.res.Rounds)
	if err != nil {
		t.Fatalf("%v: %v", k, err)
	}
	snaps, _ := filepath.Glob(filepath.Join(m.Dir, "server-*"))
	if len(snaps) == 0 {
		t.Fatalf("%v: no server snapshots in the final checkpoint %s", k, m.Dir)
	}
	for s := range snaps {
		snap, err := m.ReadSnapshot(s)
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		r.snaps = append(r.snaps, checkpoint.EncodeSnapshot(snap))
	}
	return r
}

// copiedRE matches colo train's report of a new copy of a server's
// ranges in place after a failover: the server holding it, and the
// server whose ranges it copies.
var copiedRE = regexp.MustCompile(`server (\d+) holds a new copy of server (\d+)'s key ranges`)

// killSecond kills the second server of trial k (killTrial.second),
// once colo train, of pid parent, reported in errOut the new copy of
// the first one's ranges, after k.delay. It returns the round of the
// job's final checkpoint (in dir) when that appeared first, so that no
// second kill was placed (−1 otherwise), and the server it killed and
// when.
func killSecond(ctx context.Context, parent int, dir string, k killTrial, errOut *syncBuffer) (late int, name string, at time.Time) {
	for ctx.Err() == nil {
		if last, _ := newestManifest(dir); k.final > 0 && last >= k.final {
			return last, "", time.Time{}
		}
		for _, m := range copiedRE.FindAllStringSubmatch(errOut.String(), -1) {
			holder, _ := strconv.Atoi(m[1])
			if m[2] != strconv.Itoa(k.rank) {
				continue
			}
			time.Sleep(k.delay)
			// Of servers 0, 1 and 2: neither the first killed nor the
			// holder of the copy.
			if pid := nodePID(parent, "server", 3-k.rank-holder); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
				return -1, fmt.Sprintf("server %d", 3-k.rank-holder), time.Now()
			}
		}
		time.Sleep(time.Millisecond)
	}
	return -1, "", time.Time{}
}

// syncBuffer is a bytes.Buffer that one process writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// missedKill reports whether a run of trial k that ended without an
// error missed its kill, and is to be run again, from its standard
// error stderr and late, the round of the job's final checkpoint that
// the run saw before it could place the kill (−1: none). A run without
// a kill (k.role "") misses none: whether it ran unfailed is told by
// its result (recovered).
func missedKill(k killTrial, stderr string, late int) bool {
	if k.role == "" {
		return false
	}
	// The kill came so late (a loaded machine placed it late) that a
	// worker had finished its rounds: the whole job restarted, in the
	// same event, instead of a replacement to check.
	if !k.whole && strings.Contains(stderr, "after the replacement could not work") {
		return true
	}
	// Under load the kill loop first looked after the job's last
	// checkpoint.
	return late >= 0
}

// recovered reports whether a run without a kill, of result res and
// standard error stderr, recovered from a failure all the same: a
// process ended or was declared failed (a loaded machine that stalled
// it past the job's timeout, or a defect: its standard error says), and
// was replaced, or the whole job restarted, or a backup took a server's
// ranges over. Such a run is not the unfailed run the trials compare
// with.
func recovered(res *train.Result, stderr string) bool {
	return len(res.Recoveries) > 0 || failedOverRE.MatchString(stderr)
}

// stallRE matches the failure of a process that a loaded machine
// stalled past the job's timeout: the scheduler declared it lost for its
// silence, the process found on waking that it had not run for longer
// than the timeout, or the supervisor found the scheduler silent.
var stallRE = regexp.MustCompile(`no heartbeat for [0-9]|did not run for .*, longer than the scheduler's timeout|it printed no line for .*: hung or stopped`)

// stalled reports whether the failures that a run without a kill, of
// result res and standard error stderr, recovered from were stalls
// (stallRE): the cause of each failure event (its first recovery; the
// whole-job restart after a replacement that could not work is part of
// the same event) and each failover. Any other failure of a process that
// no kill ended (an error, a crash) is a defect.
func stalled(res *train.Result, stderr string) bool {
	seen := map[int]bool{}
	for _, r := range res.Recoveries {
		if !seen[r.Event] && !stallRE.MatchString(r.Failure) {
			return false
		}
		seen[r.Event] = true
	}
	for _, line := range failedOverRE.FindAllString(stderr, -1) {
		if !stallRE.MatchString(line) {
			return false
		}
	}
	return true
}

// runUnfailed is runKilled without a kill: the run the trials compare
// with. A run that recovered from a failure all the same (recovered) is
// run again, logged, up to 3 times, only when every failure was a stall
// of a loaded machine (stalled); any other failure fails the test.
func runUnfailed(t *testing.T, args []string, every int) *killRun {
	t.Helper()
	for try := 1; ; try++ {
		r := runKilled(t, args, every, killTrial{})
		if !r.missed {
			return r
		}
		if !stalled(r.res, r.stderr) {
			t.Fatalf("a process of the run without a kill failed, not stalled past the job's timeout: recoveries %+v, standard error:\n%s", r.res.Recoveries, r.stderr)
		}
		if try == 3 {
			t.Fatalf("in %d runs without a kill a process stalled past the job's timeout each time; the last run's recoveries %+v and standard error:\n%s", try, r.res.Recoveries, r.stderr)
		}
		t.Logf("a process of the run without a kill stalled past the job's timeout (a loaded machine) and was recovered from (recoveries %+v); running it again. Its standard error:\n%s", r.res.Recoveries, r.stderr)
	}
}

// TestMissedKill checks which runs the kill trials run again: a trial
// whose kill came too late, and a run without a kill that recovered
// from a failure under load (whose result the trials compare with, so
// it is never left without one), with colo train's own lines.
func TestMissedKill(t *testing.T) {
	const (
		fallback = "restart 1 of 1, the same failure event, after the replacement could not work: worker 2 failed: exit status 1: from the checkpoint of round 9"
		failover = "server 1 failed (exit status 1): its backup serves its key ranges, and the job goes on without it"
	)
	server := killTrial{role: "server", rank: 1, after: 6}
	for _, c := range []struct {
		name   string
		k      killTrial
		stderr string
		late   int
		want   bool
	}{
		{"a kill placed in time", server, "", -1, false},
		{"a kill after a worker finished", server, fallback, -1, true},
		{"a kill of a whole-job trial after a worker finished", killTrial{role: "server", whole: true}, fallback, -1, false},
		{"a kill after the final checkpoint", server, "", 18, true},
		{"no kill, a replacement that could not work", killTrial{}, fallback, -1, false},
	} {
		if got := missedKill(c.k, c.stderr, c.late); got != c.want {
			t.Errorf("%s: missedKill %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name   string
		res    train.Result
		stderr string
		want   bool
	}{
		{"unfailed", train.Result{}, "", false},
		{"a restart", train.Result{Recoveries: []train.Recovery{{Event: 1, Round: 9}}}, fallback, true},
		{"a replacement", train.Result{Recoveries: []train.Recovery{{Event: 1, Replaced: "worker 2", Round: 9}}}, "", true},
		{"a failover", train.Result{}, failover, true},
	} {
		if got := recovered(&c.res, c.stderr); got != c.want {
			t.Errorf("%s: recovered %v, want %v", c.name, got, c.want)
		}
	}
	// Which recovered runs without a kill are run again: those whose
	// failures were all stalls.
	const (
		declared = "worker 1 failed, the scheduler said: no heartbeat for 30.2s (worker 1, node 5 at 127.0.0.1:40000); then signal: killed, sent by the supervisor: the scheduler had declared it lost: no heartbeat for 30.2s"
		woke     = "machine 1 failed: exit status 1: colo node: node: replaced: this process did not run for 31.5s, longer than the scheduler's timeout 30s, and has not heard the scheduler since"
		crashed  = "worker 2 failed: exit status 2: panic: runtime error: index out of range [3] with length 3"
	)
	for _, c := range []struct {
		name   string
		res    train.Result
		stderr string
		want   bool
	}{
		{"declared lost", train.Result{Recoveries: []train.Recovery{{Event: 1, Replaced: "worker 1", Failure: declared}}}, "", true},
		{"woke past its timeout", train.Result{Recoveries: []train.Recovery{{Event: 1, Failure: woke}}}, "", true},
		{"a stall, then the same event's restart", train.Result{Recoveries: []train.Recovery{{Event: 1, Replaced: "worker 1", Failure: declared}, {Event: 1, Failure: crashed}}}, "", true},
		{"a crash", train.Result{Recoveries: []train.Recovery{{Event: 1, Replaced: "worker 2", Failure: crashed}}}, "", false},
		{"a stall, then a crash", train.Result{Recoveries: []train.Recovery{{Event: 1, Failure: woke}, {Event: 2, Failure: crashed}}}, "", false},
		{"a failover after an exit", train.Result{}, failover, false},
		{"a failover after a stall", train.Result{}, "server 1 failed (signal: killed, sent by the supervisor: the scheduler had declared it lost: no heartbeat for 30.4s): its backup serves its key ranges, and the job goes on without it", true},
	} {
		if got := stalled(&c.res, c.stderr); got != c.want {
			t.Errorf("%s: stalled %v, want %v", c.name, got, c.want)
		}
	}
}

// runKilledTraining is runKilled for a trial whose kill must land while
// the job trains (before the checkpoint of the unfailed run's last round
// final): a run in which a loaded machine kept the kill from being
// placed before that checkpoint is run again, up to 3 times.
func runKilledTraining(t *testing.T, args []string, every, final int, k killTrial) *killRun {
	t.Helper()
	k.final = final
	for try := 1; ; try++ {
		r := runKilled(t, args, every, k)
		if !r.missed {
			return r
		}
		if try == 3 {
			t.Fatalf("%v: in %d runs the job had trained (its final checkpoint of round %d, or a worker's last round) before the kill could be placed: the machine is too loaded", k, try, final)
		}
		t.Logf("%v: the job had trained (its final checkpoint, or a worker's last round) before the kill could be placed; running it again", k)
	}
}

// resumedWrong says which condition the checkpoint a run with a kill
// resumed from fails, "" when none: it must be of round k.after or later
// (the kill came after that checkpoint's manifest), at least the newest
// complete one when the process was killed (got.last; a checkpoint
// whose files were all written when the process died may be completed
// after the kill, so a newer one is allowed), and before the unfailed
// run's last round final unless that checkpoint was complete at the
// kill.
func resumedWrong(k killTrial, got *killRun, final int) string {
	switch {
	case got.from < k.after:
		return fmt.Sprintf("resumed from the checkpoint of round %d, older than the one of round %d after whose manifest the kill came", got.from, k.after)
	case got.from < got.last:
		return fmt.Sprintf("resumed from the checkpoint of round %d, older than the newest complete one at the kill, of round %d", got.from, got.last)
	case got.from >= final && got.lastAfter < final:
		return fmt.Sprintf("resumed from the checkpoint of round %d, the job's last round, which was not complete at the kill (the newest then was of round %d)", got.from, got.lastAfter)
	}
	return ""
}

// newestManifest returns the round and time of the newest checkpoint
// manifest in dir.
func newestManifest(dir string) (int, time.Time) {
	ms, _ := filepath.Glob(filepath.Join(dir, "round-*", checkpoint.ManifestName))
	if len(ms) == 0 {
		return -1, time.Time{}
	}
	slices.Sort(ms)
	fi, err := os.Stat(ms[len(ms)-1])
	if err != nil {
		return -1, time.Time{}
	}
	round, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(ms[len(ms)-1])), "round-"))
	return round, fi.ModTime()
}

// TestKillTrials kills a server, a machine or a worker with SIGKILL in
// 20 seeded trials, each at a seeded round of a small BSP job of
// processes run with --restarts 1: a co-located job (machines) and one
// with servers apart (servers or workers). In 16 trials only the killed
// process is started again, in its rank, and the others roll back to the
// last checkpoint (--recovery replace); in 4 the whole job restarts
// (--recovery restart). Every job completes and ends as the unfailed
// run: the same passes, losses and test measures, and the final
// checkpoint's server snapshots (every key's values and update-rule
// state) equal byte for byte. It logs the time from each kill to
// training resuming.
func TestKillTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	jobs := killTrialJobs(t)
	rng := rand.New(rand.NewPCG(18, 20))
	const trials = 20
	recovery := map[bool][]time.Duration{}
	for _, job := range jobs {
		want := runUnfailed(t, job.args, job.every)
		t.Logf("%s: the unfailed run trained %d rounds in %.3f s; %d checkpoints taken, %d skipped while the one before was being written",
			job.name, want.res.Rounds, want.res.TrainSeconds, want.res.Checkpoints, want.res.CheckpointsSkipped)
		checkpoints := want.res.Rounds / job.every
		if checkpoints < 6 {
			t.Fatalf("%s: %d rounds, want at least %d", job.name, want.res.Rounds, 6*job.every)
		}
		for i := range trials / len(jobs) {
			k := killTrial{role: job.roles[rng.IntN(len(job.roles))], rank: rng.IntN(job.ranks),
				// Not in the last 3 checkpoints' rounds: the kill lands
				// while the job trains (and the job may end soon after
				// the replacement).
				after: job.every * (1 + rng.IntN(checkpoints-3)),
				delay: time.Duration(rng.IntN(10)) * time.Millisecond,
				whole: i%5 == 4}
			got := runKilledTraining(t, job.args, job.every, want.res.Rounds, k)
			name := fmt.Sprintf("%s trial %d (%v)", job.name, i+1, k)
			if msg := resumedWrong(k, got, want.res.Rounds); msg != "" {
				t.Errorf("%s: %s", name, msg)
			}
			if !sameKilled(t, name, want.res, got.res) {
				continue
			}
			sameSnapshots(t, name, want.snaps, got.snaps)
			d := got.resumed.Sub(got.killed)
			recovery[k.whole] = append(recovery[k.whole], d)
			t.Logf("%s: resumed from round %d, training again %v after the kill", name, got.from, d.Round(time.Millisecond))
		}
	}
	for _, whole := range []bool{false, true} {
		logResumed(t, map[bool]string{false: " (replaced)", true: " (whole job restarted)"}[whole], recovery[whole])
	}
}

// ratingsText returns n distinct `row col rating` lines over 300 rows
// and 200 columns, integer ratings 1 to 5 drawn from seed.
func ratingsText(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 3))
	var b strings.Builder
	seen := map[[2]int]bool{}
	for len(seen) < n {
		e := [2]int{1 + rng.IntN(300), 1 + rng.IntN(200)}
		if !seen[e] {
			seen[e] = true
			fmt.Fprintf(&b, "%d %d %d\n", e[0], e[1], 1+rng.IntN(5))
		}
	}
	return b.String()
}

// edgesText returns n edges `u v` over 300 nodes drawn from seed (a
// SNAP edge list; repeats and self-loops are dropped by the loader).
func edgesText(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 5))
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "%d\t%d\n", rng.IntN(300), rng.IntN(300))
	}
	return b.String()
}

// clicksText returns a table of n rows of three categories, a number
// and a click drawn from seed (rows of day ≥ 20 a spec's test split).
func clicksText(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("day,a,b,c,x,click\n")
	for range n {
		a, c := rng.IntN(6), rng.IntN(4)
		x := rng.NormFloat64()
		click := 0
		if rng.Float64() < 1/(1+math.Exp(-(float64(a-c)/2+x))) {
			click = 1
		}
		fmt.Fprintf(&b, "%d,a%d,b%d,c%d,%.4f,%d\n", rng.IntN(25), a, rng.IntN(5), c, x, click)
	}
	return b.String()
}

// TestKillTrialsShares kills a machine of a job on 2 co-located machines
// with SIGKILL in 3 seeded trials per application that trains a
// replacement on its share of the data (app.Spec.Shares): matrix
// factorisation (6,000 ratings, 10% held out), node embeddings (3,000
// edges, 5% held out, 8 values a node: with 32, the pulls' time on the
// 4 Mbit/s links was most of the test's) and ctr (a table of 1,500 rows
// with a test split), each at a seeded round, run as processes with
// --restarts 1 --recovery replace. The replacement reads only its share of the
// training graph from the job's data cache (mf with the whole graph's
// mean rating recorded beside the shares), and every job ends as its
// unfailed run: the same losses and test measures, and the final
// checkpoint's server snapshots equal byte for byte.
func TestKillTrialsShares(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	const every = 3
	common := []string{"--machines", "2", "--epsilon", "0", "--link-bandwidth", "4mbit"}
	jobs := []struct {
		name string
		args []string
		eval func(*train.Result) *float64 // a test measure the unfailed run must report
	}{
		{"mf", []string{writeFile(t, "ratings.tsv", ratingsText(6000, 3)), "--app", "mf", "--format", "ratings", "--batch", "30", "--max-passes", "9"},
			func(r *train.Result) *float64 { return r.RMSE }},
		{"embed", []string{writeFile(t, "edges.txt", edgesText(3000, 4)), "--app", "embed", "--dim", "8", "--batch", "300", "--max-passes", "9"},
			func(r *train.Result) *float64 { return r.AUC }},
		{"ctr", []string{writeFile(t, "clicks.csv", clicksText(1500, 5)), "--app", "ctr", "--spec", "click ~ a + b + hash(c, 3) + std(x) + 1; test: day >= 20",
			"--dim", "4", "--hidden", "8", "--batch", "100", "--max-passes", "9"}, func(r *train.Result) *float64 { return r.AUC }},
	}
	rng := rand.New(rand.NewPCG(34, 2))
	var resumed []time.Duration
	for _, job := range jobs {
		args := append(job.args, common...)
		want := runUnfailed(t, args, every)
		if job.eval(want.res) == nil {
			t.Fatalf("%s: the unfailed run reports no test measure: %v", job.name, want.res.Eval)
		}
		checkpoints := want.res.Rounds / every
		if checkpoints < 6 {
			t.Fatalf("%s: %d rounds, want at least %d", job.name, want.res.Rounds, 6*every)
		}
		for i := range 3 {
			k := killTrial{role: "machine", rank: rng.IntN(2), after: every * (1 + rng.IntN(checkpoints-3)),
				delay: time.Duration(rng.IntN(10)) * time.Millisecond}
			got := runKilledTraining(t, args, every, want.res.Rounds, k)
			name := fmt.Sprintf("%s trial %d (%v)", job.name, i+1, k)
			if msg := resumedWrong(k, got, want.res.Rounds); msg != "" {
				t.Errorf("%s: %s", name, msg)
			}
			if !sameKilled(t, name, want.res, got.res) {
				continue
			}
			sameSnapshots(t, name, want.snaps, got.snaps)
			d := got.resumed.Sub(got.killed)
			resumed = append(resumed, d)
			t.Logf("%s: resumed from round %d, training again %v after the kill", name, got.from, d.Round(time.Millisecond))
		}
	}
	logResumed(t, " (mf, embed and ctr, replaced)", resumed)
}

// TestKillTrialsReplicas kills a server with SIGKILL in 4 seeded trials,
// each at a seeded round of lr on the embedded 20 Newsgroups, BSP, 18
// full-batch passes, 3 workers and 3 servers apart with one backup each (--replicas 1), run
// as processes with --restarts 1 --recovery replace. Only servers are
// killed: a worker that dies is replaced and the job rolls back to its
// checkpoint, replicas or not. In every trial the killed server's
// backup takes its key ranges over: no process is started again, no
// recovery is reported (the JSON's recoveries), no round is computed
// again (the same rounds and passes as the unfailed run, and the
// servers replicated no more rounds' sums than in it), and the job ends
// as the unfailed run: the same losses, and the final checkpoint's
// server snapshots equal byte for byte. It logs the time from each kill
// to the workers having sent the backup what the killed server had not
// answered.
func TestKillTrialsReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	const every = 3
	args := []string{news20(t), "--machines", "3", "--servers", "3", "--replicas", "1", "--max-passes", "18", "--epsilon", "0"}
	want := runUnfailed(t, args, every)
	t.Logf("the unfailed run trained %d rounds in %.3f s", want.res.Rounds, want.res.TrainSeconds)
	checkpoints := want.res.Rounds / every
	if checkpoints < 6 {
		t.Fatalf("%d rounds, want at least %d", want.res.Rounds, 6*every)
	}
	if want.res.Replication == nil || want.res.Replication.Sums == 0 {
		t.Fatalf("the unfailed run replicated %+v, want the rounds' sums", want.res.Replication)
	}
	rng := rand.New(rand.NewPCG(18, 23))
	var resumed []time.Duration
	for i := range 4 {
		k := killTrial{role: "server", rank: rng.IntN(3), after: every * (1 + rng.IntN(checkpoints-3)),
			delay: time.Duration(rng.IntN(10)) * time.Millisecond, failover: true}
		got := runKilledTraining(t, args, every, want.res.Rounds, k)
		name := fmt.Sprintf("trial %d (%v)", i+1, k)
		if rep := got.res.Replication; rep == nil || rep.Sums == 0 || rep.Sums > want.res.Replication.Sums {
			t.Errorf("%s: the servers replicated %+v, without failure %+v: rounds' sums replicated again", name, rep, want.res.Replication)
		}
		if !sameKilled(t, name, want.res, got.res) {
			continue
		}
		sameSnapshots(t, name, want.snaps, got.snaps)
		if got.resumed.IsZero() {
			t.Logf("%s: the backup took over; the killed server had left no request unanswered", name)
			continue
		}
		d := got.resumed.Sub(got.killed)
		resumed = append(resumed, d)
		t.Logf("%s: the backup took over, the workers had sent it what was unanswered %v after the kill", name, d.Round(time.Millisecond))
	}
	logResumed(t, "", resumed)
}

// TestKillTrialsIncremental kills a server with SIGKILL in 4 seeded
// trials of lr on the embedded 20 Newsgroups, BSP, batches of 100, one
// pass, 3 workers and 3 servers apart with one backup each
// (--replicas 1), run as processes with --checkpoint-incremental and a
// checkpoint every round (113 checkpoints, most of them deltas), each
// kill at a seeded round and up to 50 ms into it. In every trial the
// killed server's backup takes its key ranges over, no process is
// started again, nothing rolls back, and the job ends as the unfailed
// run: the same losses, and every server's snapshot restored from the
// final checkpoint (a delta applied to its chain) equal byte for byte.
// A kill lands in a checkpoint's capture of the killed server (between
// its answer to the capture's begin and its answer to the end), which
// the worker then takes again whole of the backup, in about 1 trial in
// 5 (2 of 10 ended the job before that); ps/node's
// TestFailoverIncrementalCapture places such kills by hand.
func TestKillTrialsIncremental(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	const every = 1
	args := []string{news20(t), "--machines", "3", "--servers", "3", "--replicas", "1", "--batch", "100", "--max-passes", "1", "--epsilon", "0", "--checkpoint-incremental"}
	want := runUnfailed(t, args, every)
	t.Logf("the unfailed run trained %d rounds in %.3f s, %.3f s of them on checkpoints", want.res.Rounds, want.res.TrainSeconds, want.res.CheckpointSeconds)
	checkpoints := want.res.Rounds / every
	if checkpoints < 6 {
		t.Fatalf("%d rounds, want at least %d", want.res.Rounds, 6*every)
	}
	rng := rand.New(rand.NewPCG(18, 27))
	for i := range 4 {
		k := killTrial{role: "server", rank: rng.IntN(3), after: every * (1 + rng.IntN(checkpoints-3)),
			delay: time.Duration(rng.IntN(50)) * time.Millisecond, failover: true}
		got := runKilledTraining(t, args, every, want.res.Rounds, k)
		name := fmt.Sprintf("trial %d (%v)", i+1, k)
		if !sameKilled(t, name, want.res, got.res) {
			continue
		}
		sameSnapshots(t, name, want.snaps, got.snaps)
		t.Logf("%s: the backup took over, the same model", name)
	}
}

// TestKillTwoServers kills two servers one after the other, in 3
// seeded trials, of the job of TestKillTrialsReplicas (3 servers apart,
// one backup each): a seeded first server, then, once the new copy of
// its ranges is in place, the server that took them over. Both fail
// over to their backups: no process is started again, nothing rolls
// back or restarts, and the job ends as the unfailed run bit for bit
// (the same losses, and the final server snapshots). It logs, for each
// kill, the time to the workers having sent the backup what the killed
// server had not answered.
func TestKillTwoServers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	const every = 3
	args := []string{news20(t), "--machines", "3", "--servers", "3", "--replicas", "1", "--max-passes", "18", "--epsilon", "0"}
	want := runUnfailed(t, args, every)
	checkpoints := want.res.Rounds / every
	rng := rand.New(rand.NewPCG(18, 26))
	var resumed []time.Duration
	for i := range 3 {
		// In the first half: the second kill lands while the job trains.
		k := killTrial{role: "server", rank: rng.IntN(3), after: every * (1 + rng.IntN(checkpoints/2-1)),
			delay: time.Duration(rng.IntN(10)) * time.Millisecond, failover: true, second: true}
		got := runKilledTraining(t, args, every, want.res.Rounds, k)
		name := fmt.Sprintf("trial %d (%v)", i+1, k)
		if !sameKilled(t, name, want.res, got.res) {
			continue
		}
		sameSnapshots(t, name, want.snaps, got.snaps)
		if got.killed2.IsZero() {
			t.Errorf("%s: no second server killed", name)
			continue
		}
		d := func(killed, resumed time.Time) string {
			if resumed.IsZero() {
				return "nothing left unanswered"
			}
			gap := resumed.Sub(killed).Round(time.Millisecond)
			return "the workers had sent the backup what was unanswered " + gap.String() + " after the kill"
		}
		if !got.resumed2.IsZero() {
			resumed = append(resumed, got.resumed2.Sub(got.killed2))
		}
		t.Logf("%s: both taken over, the same model; first: %s; second: %s", name, d(got.killed, got.resumed), d(got.killed2, got.resumed2))
	}
	logResumed(t, " (second kills)", resumed)
}

// TestKillSchedulerTakeover kills the scheduler of the co-located job
// run to replace failed processes (--recovery replace) in 4 seeded
// trials: a scheduler started again at its address takes the job over
// from the nodes' reports, nothing is replaced, restarted or rolled
// back, and the job ends as the unfailed run bit for bit (the same
// passes, losses and test measures, and the final server snapshots).
// It logs the time from each kill to training resuming.
func TestKillSchedulerTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	job := killTrialJobs(t)[0]
	want := runUnfailed(t, job.args, job.every)
	checkpoints := want.res.Rounds / job.every
	rng := rand.New(rand.NewPCG(18, 24))
	var resumed []time.Duration
	for i := range 4 {
		k := killTrial{role: "scheduler", rank: -1, after: job.every * (1 + rng.IntN(checkpoints-3)),
			delay: time.Duration(rng.IntN(10)) * time.Millisecond}
		got := runKilledTraining(t, job.args, job.every, want.res.Rounds, k)
		name := fmt.Sprintf("trial %d (%v)", i+1, k)
		if !sameKilled(t, name, want.res, got.res) {
			continue
		}
		sameSnapshots(t, name, want.snaps, got.snaps)
		d := got.resumed.Sub(got.killed)
		resumed = append(resumed, d)
		t.Logf("%s: taken over, training again %v after the kill", name, d.Round(time.Millisecond))
	}
	logResumed(t, "", resumed)
}

// TestKillSchedulerWithMachine kills the scheduler and machine 1 of the
// co-located job run with --recovery replace together (a host that died
// with both), in 2 seeded trials: a scheduler started again takes the
// job over from machine 0's report and pauses it for machine 1's
// replacement, in one failure event; every worker rolls back to the
// checkpoint with it, and the job ends as the unfailed run bit for bit.
func TestKillSchedulerWithMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	job := killTrialJobs(t)[0]
	want := runUnfailed(t, job.args, job.every)
	checkpoints := want.res.Rounds / job.every
	rng := rand.New(rand.NewPCG(18, 25))
	for i := range 2 {
		k := killTrial{role: "scheduler", rank: -1, after: job.every * (1 + rng.IntN(checkpoints-3)),
			delay: time.Duration(rng.IntN(10)) * time.Millisecond, with: "machine 1"}
		got := runKilledTraining(t, job.args, job.every, want.res.Rounds, k)
		name := fmt.Sprintf("trial %d (%v)", i+1, k)
		if msg := resumedWrong(k, got, want.res.Rounds); msg != "" {
			t.Errorf("%s: %s", name, msg)
		}
		if !sameKilled(t, name, want.res, got.res) {
			continue
		}
		sameSnapshots(t, name, want.snaps, got.snaps)
		t.Logf("%s: rolled back to round %d, training again %v after the kill", name, got.from, got.resumed.Sub(got.killed).Round(time.Millisecond))
	}
}

// TestKillSchedulerFallsBack kills the scheduler of the co-located job
// run to restart whole (--recovery restart), which starts no scheduler
// to take its job over, in 2 seeded trials: the whole job restarts from
// its last checkpoint, and ends as the unfailed run bit for bit.
func TestKillSchedulerFallsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	job := killTrialJobs(t)[0]
	want := runUnfailed(t, job.args, job.every)
	checkpoints := want.res.Rounds / job.every
	rng := rand.New(rand.NewPCG(18, 22))
	for i := range 2 {
		k := killTrial{role: "scheduler", rank: -1, after: job.every * (1 + rng.IntN(checkpoints-3)),
			delay: time.Duration(rng.IntN(10)) * time.Millisecond, whole: true}
		got := runKilledTraining(t, job.args, job.every, want.res.Rounds, k)
		name := fmt.Sprintf("trial %d (%v)", i+1, k)
		if msg := resumedWrong(k, got, want.res.Rounds); msg != "" {
			t.Errorf("%s: %s", name, msg)
		}
		if !sameKilled(t, name, want.res, got.res) {
			continue
		}
		sameSnapshots(t, name, want.snaps, got.snaps)
		t.Logf("%s: resumed from round %d, training again %v after the kill", name, got.from, got.resumed.Sub(got.killed).Round(time.Millisecond))
	}
}

// sameSnapshots fails the trial name unless the final checkpoint's
// server snapshots of a run with a failure equal the unfailed run's byte
// for byte.
func sameSnapshots(t *testing.T, name string, want, got [][]byte) {
	t.Helper()
	for s := range want {
		if s >= len(got) || !bytes.Equal(got[s], want[s]) {
			t.Errorf("%s: server %d's final snapshot differs from the unfailed run's", name, s)
		}
	}
}

// logResumed logs the median and the largest of the times from a kill to
// training resuming (sorting them), what names the trials after "trials".
func logResumed(t *testing.T, what string, resumed []time.Duration) {
	t.Helper()
	if len(resumed) == 0 {
		return
	}
	slices.Sort(resumed)
	t.Logf("time from the kill to training resuming, %d trials%s: median %v, max %v", len(resumed), what,
		resumed[len(resumed)/2].Round(time.Millisecond), resumed[len(resumed)-1].Round(time.Millisecond))
}

// sameKilled reports whether a run with a failure trained as the run
// without: the same passes, losses and test measures, bit for bit.
func sameKilled(t *testing.T, name string, want, got *train.Result) bool {
	t.Helper()
	if got.Passes != want.Passes || got.Rounds != want.Rounds || len(got.RoundsDetail) != len(want.RoundsDetail) {
		t.Errorf("%s: %d passes, %d rounds; without failure %d, %d", name, got.Passes, got.Rounds, want.Passes, want.Rounds)
		return false
	}
	same := true
	for i, p := range want.RoundsDetail {
		if q := got.RoundsDetail[i]; q.TrainLoss != p.TrainLoss || q.TrainAccuracy != p.TrainAccuracy {
			t.Errorf("%s: pass %d: loss %v accuracy %v, without failure %v %v", name, p.Pass, q.TrainLoss, q.TrainAccuracy, p.TrainLoss, p.TrainAccuracy)
			same = false
		}
	}
	if !sameMeasure(want.Accuracy, got.Accuracy) || !sameMeasure(want.LogLoss, got.LogLoss) || !sameMeasure(want.AUC, got.AUC) || !sameMeasure(want.RMSE, got.RMSE) || !sameMeasure(want.MRR, got.MRR) {
		t.Errorf("%s: test measures %v, without failure %v", name, got.Eval, want.Eval)
		same = false
	}
	return same
}

// sameMeasure reports whether two optional measures are equal, bit for
// bit (both absent counts as equal).
func sameMeasure(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// TestKillAsync kills a machine of the co-located job run under async
// consistency in 3 seeded trials: every job completes its rounds after
// the machine's replacement, rolled back to the newest checkpoint at the
// kill (or to the next, when the kill came after its files were all
// written and worker 0 completed it with the manifest). What is lost is every update applied after that
// checkpoint, trained again after the restart (in an order that may
// differ, so the model need not equal the unfailed run's): the test logs
// the training time lost (from the checkpoint's manifest to the kill),
// the rounds it amounts to at the unfailed run's rate, and the final
// losses.
func TestKillAsync(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	job := killTrialJobs(t)[0]
	args := append(slices.Clip(job.args), "--consistency", "async")
	want := runUnfailed(t, args, job.every)
	checkpoints := want.res.Rounds / job.every
	rate := float64(want.res.Rounds) / want.res.TrainSeconds
	rng := rand.New(rand.NewPCG(18, 21))
	for i := range 3 {
		k := killTrial{role: "machine", rank: rng.IntN(job.ranks), after: job.every * (1 + rng.IntN(checkpoints-3)),
			delay: time.Duration(rng.IntN(10)) * time.Millisecond}
		got := runKilledTraining(t, args, job.every, want.res.Rounds, k)
		name := fmt.Sprintf("async trial %d (%v)", i+1, k)
		if got.res.Rounds != want.res.Rounds || got.res.Passes != want.res.Passes {
			t.Errorf("%s: %d rounds, %d passes; without failure %d, %d", name, got.res.Rounds, got.res.Passes, want.res.Rounds, want.res.Passes)
		}
		// A checkpoint whose files were all written when the process
		// died is completed by worker 0's manifest after the kill: the
		// job resumes from it, and loses nothing. It is the next one due
		// after the newest at the kill, or the one after that when the
		// next was skipped while the newest was still being pruned.
		if msg := resumedWrong(k, got, want.res.Rounds); msg != "" {
			t.Errorf("%s: %s", name, msg)
			continue
		}
		if got.from > got.lastAfter+2*job.every {
			t.Errorf("%s: resumed from the checkpoint of round %d, newer than any the job could complete after the kill (the newest at the kill was of round %d)", name, got.from, got.lastAfter)
			continue
		}
		lost := got.killed.Sub(got.checkpointed).Seconds()
		if got.from > got.last {
			lost = 0
		}
		t.Logf("%s: resumed from round %d; %.3f s of training lost, about %.1f rounds redone at %.0f rounds/s (at most %d); final loss %.6f, without failure %.6f",
			name, got.from, lost, min(lost*rate, float64(job.every)), rate, job.every, got.res.FinalTrainLoss, want.res.FinalTrainLoss)
	}
}
