package launch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Supervisor starts the processes of one cluster and waits for them. Set
// its fields before the first Start. Start the processes, then call Wait
// once; a Supervisor is not reused.
type Supervisor struct {
	// Grace is how long the other processes have to end on their own
	// after one failed (the scheduler tells them the job failed) before
	// they are killed. NewSupervisor sets 2 s.
	Grace time.Duration
	// StdoutLimit and StderrLimit bound what is kept of each process's
	// output: its last StdoutLimit bytes of standard output (when
	// Spec.Stdout) and StderrLimit bytes of standard error. NewSupervisor
	// sets 16 MiB and 64 KiB.
	StdoutLimit, StderrLimit int
	// Environ is the environment the processes inherit, without its COLO_*
	// variables; NewSupervisor sets os.Environ().
	Environ []string
	// OnExit, when set, is called by Wait as each process ends, in the
	// order Wait sees them end, before Wait acts on it.
	OnExit func(*Proc)
	// Replace, when set, is asked by Wait for the Spec of a process that
	// replaces p, a process that died of a signal the supervisor did not
	// send (kill -9, the OOM killer, a crash) after the scheduler of
	// StartScheduler printed that the job started and before it ended
	// the job (printed "job finished: …" or exited without an error),
	// while no other process had failed: with ok, Wait starts it in p's place instead of
	// failing the cluster, and the scheduler keeps the job waiting for it
	// (sched.Config.RecoverWait). It is asked for the scheduler too: one
	// started in its place takes its job over (Cluster.Standby), and its
	// lines are read as the first one's. It is called from Wait's
	// goroutine.
	Replace func(p *Proc) (spec Spec, ok bool)
	// Survive, when set, is asked by Wait about a process that died as
	// for Replace and was not replaced: with true the cluster goes on
	// without it (a server whose backup took its key ranges over,
	// sched.Config.Replicas), and it is not a failure of the cluster
	// (Proc.Survived). It is called from Wait's goroutine.
	Survive func(p *Proc) bool
	// ProcessOf, when set, names the process that runs the nodes the
	// scheduler of StartScheduler lost when it paused the job ("server
	// 1", "worker 1", as its line "job paused: …" names them), "" for
	// none of s's. Wait then kills that process (SIGKILL) if it still
	// runs, since the scheduler declared it failed: hung, stopped
	// (SIGSTOP) or cut off, it would hold its rank until the job gave up
	// waiting; killed, it is replaced like a process that died (see
	// Replace). A process that died by itself and was replaced already
	// is not killed again, nor its replacement.
	ProcessOf func(nodes []string) string
	// BackedUp, when set, is told each new copy of a server's ranges the
	// scheduler of StartScheduler reports in place after a failover
	// ("backup made: server B holds a copy of server S's ranges"), so
	// that Survive and Replace decide as the scheduler does about a
	// second failure (replica.Holders.BackedUp). A line read before a
	// process's exit is told before Survive or Replace is asked about
	// it. It is called from Wait's goroutine.
	BackedUp func(server, backup int)
	// KillHung makes Wait kill (SIGKILL) the scheduler of StartScheduler
	// when, while the job runs, it still runs but printed no line for
	// two thirds of the timeout its lines of life give ("scheduler
	// alive: timeout T", which a scheduler with a standby prints every
	// T/8): hung or stopped (SIGSTOP), it would hold the job until the
	// nodes' timeout ended it (and holds its address, so that no other
	// could take the job over); killed, its links close before the
	// nodes' timeout, the nodes report to the
	// scheduler that takes its job over, and Wait asks Replace for it as
	// for one that died (Proc.Declared says why it was killed). A
	// scheduler that printed no line of life is never taken for hung.
	KillHung bool

	bin    string
	binErr error
	st     Starter
	// hasScheduler is set once StartScheduler started the scheduler,
	// jobStarted once it printed that the job started, jobFinished once
	// it printed that the job finished.
	hasScheduler, jobStarted, jobFinished atomic.Bool
	// scheduler is the process of StartScheduler, or the last one
	// started in its place (Replace).
	scheduler *Proc

	mu      sync.Mutex
	procs   []*Proc
	waiting bool
	result  error
	// lastLine is when the scheduler last printed a line (monoNow), and
	// aliveTimeout the timeout of its last line of life (ns; 0: none
	// yet), for KillHung.
	lastLine, aliveTimeout atomic.Int64
	// pauses are the scheduler's pause lines not yet read by Wait;
	// pauseCh is signalled when one is added.
	pauses  []string
	pauseCh chan struct{}
}

// pauseChan returns the channel signalled when the scheduler prints a
// pause line.
func (s *Supervisor) pauseChan() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pauseCh == nil {
		s.pauseCh = make(chan struct{}, 1)
	}
	return s.pauseCh
}

// paused records a pause line of the scheduler for Wait.
func (s *Supervisor) paused(line string) {
	ch := s.pauseChan()
	s.mu.Lock()
	s.pauses = append(s.pauses, line)
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

// takePauses returns and clears the pause lines not yet read.
func (s *Supervisor) takePauses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pauses
	s.pauses = nil
	return p
}

// takeBackups returns and clears the backup lines not yet read
// (parseBackup), leaving the others.
func (s *Supervisor) takeBackups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	s.pauses = slices.DeleteFunc(s.pauses, func(line string) bool {
		if strings.HasPrefix(line, backupPrefix) {
			out = append(out, line)
			return true
		}
		return false
	})
	return out
}

// NewSupervisor returns a supervisor that runs bin through st; bin "" is
// this binary (os.Executable).
func NewSupervisor(bin string, st Starter) *Supervisor {
	s := &Supervisor{
		Grace: 2 * time.Second, StdoutLimit: 16 << 20, StderrLimit: 64 << 10,
		Environ: os.Environ(), bin: bin, st: st,
	}
	if bin == "" {
		s.bin, s.binErr = os.Executable()
	}
	return s
}

// Proc is a process of a Supervisor.
type Proc struct {
	spec   Spec
	cmd    *exec.Cmd
	stdout *tail
	stderr *tail
	done   chan struct{}
	err    error // set before done is closed

	mu     sync.Mutex
	exited bool
	killed bool
	// declared is why the supervisor killed the process as failed: the
	// scheduler declared it so (Supervisor.ProcessOf), or it is the
	// scheduler and was taken for hung (Supervisor.KillHung).
	declared string
	// survived: the cluster went on without it (Supervisor.Survive).
	survived bool
}

// Survived reports whether the process died and the cluster went on
// without it (Supervisor.Survive).
func (p *Proc) Survived() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.survived
}

// Name returns the process's Spec.Name.
func (p *Proc) Name() string { return p.spec.Name }

// Pid returns the process id, 0 if the process did not start.
func (p *Proc) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stdout returns the last bytes of the process's standard output when
// its Spec asked to keep it, nil otherwise. It is complete once the
// process has ended (after Wait).
func (p *Proc) Stdout() []byte { return p.stdout.Bytes() }

// Stderr returns the last bytes of the process's standard error.
func (p *Proc) Stderr() string { return string(p.stderr.Bytes()) }

// Err returns why the process failed: it could not start, exited with a
// non-zero status or was killed (Killed says whether by the
// supervisor). It is nil while the process runs and after it succeeded.
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Done is closed when the process has ended and been reaped (or failed
// to start).
func (p *Proc) Done() <-chan struct{} { return p.done }

// Killed reports whether the supervisor killed the process, because
// another failed or the context of Wait was done.
func (p *Proc) Killed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// kill kills the process if it still runs, and notes it was killed.
func (p *Proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited && p.cmd != nil && p.cmd.Process != nil {
		p.killed = true
		p.cmd.Process.Kill()
	}
}

// killDeclared kills the process, which failed for why (the scheduler
// declared it lost, or it is the scheduler and hung), if it still runs;
// it is not Killed: it failed by itself. It returns true when the
// process had ended by itself already (exited, or a zombie), neither
// killed nor declared before.
func (p *Proc) killDeclared(why string) (diedBefore bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil || p.killed || p.declared != "" {
		return false
	}
	if p.exited || dead(p.cmd.Process.Pid) {
		return true
	}
	p.declared = why
	p.cmd.Process.Kill()
	return false
}

// lostLines matches the scheduler's lines naming a lost process ("job
// paused: …", parsePause) with the exits of the processes that died by
// themselves, in whichever order the two are read: a process that died
// by itself is replaced at its exit, and the line that names it, read
// before or after, must not kill its replacement; a later line naming
// the process (its replacement hung) must. Counts are by process name.
// The zero value is ready; it is used by Wait's goroutine alone.
type lostLines struct {
	// expected counts the replacements started for a process that died
	// by itself whose line has not been read.
	expected map[string]int
	// early counts the lines read for a process that had died by itself
	// before its exit was handled.
	early map[string]int
}

// line reports whether a line naming process name is news: not the
// line of a death already replaced, which it consumes.
func (l *lostLines) line(name string) (news bool) {
	if l.expected[name] > 0 {
		l.expected[name]--
		return false
	}
	return true
}

// diedBefore notes that the process a line named, for which line
// returned true, had ended by itself before its exit was handled: the
// line is the one of that death, and exited will meet it.
func (l *lostLines) diedBefore(name string) {
	if l.early == nil {
		l.early = make(map[string]int)
	}
	l.early[name]++
}

// exited notes the exit of process name, which died by itself (the
// supervisor neither killed it nor declared it lost), and whether it was
// replaced: its line is the one read before, or for a replaced process
// the next one.
func (l *lostLines) exited(name string, replaced bool) {
	switch {
	case l.early[name] > 0:
		l.early[name]--
	case replaced:
		if l.expected == nil {
			l.expected = make(map[string]int)
		}
		l.expected[name]++
	}
}

// dead reports whether process pid has ended but is not reaped yet (a
// zombie), as far as /proc tells: a process that died by itself just
// before the scheduler noticed is not the supervisor's kill.
func dead(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// Declared returns why the supervisor killed the process as failed
// ("the scheduler had declared it lost: …", or for the scheduler "it
// printed no line for …: hung or stopped"), "" when it did not.
func (p *Proc) Declared() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.declared
}

// Start starts the process of spec. A failure to start is that process's
// failure: Err and Wait report it. Start returns once the process runs.
//
// The process is forked, and later reaped, by one goroutine locked to its
// OS thread for the process's whole life: on Linux the kernel kills a
// child when the thread that forked it exits (PR_SET_PDEATHSIG, set by
// Loopback and Netns), and a locked thread does not exit under its child.
// Each running process thus holds an OS thread.
func (s *Supervisor) Start(ctx context.Context, spec Spec) *Proc {
	var out *tail
	if spec.Stdout {
		out = newTail(s.StdoutLimit)
	}
	return s.start(ctx, spec, out, nil)
}

// start starts the process of spec and adds it to s. Its standard output
// is kept in stdout (nil: discarded), or written to w when w is set.
func (s *Supervisor) start(ctx context.Context, spec Spec, stdout *tail, w io.Writer) *Proc {
	return s.startProc(ctx, spec, stdout, w, false)
}

// startProc is start; replacing starts a process while Wait runs (a
// replacement, see Replace).
func (s *Supervisor) startProc(ctx context.Context, spec Spec, stdout *tail, w io.Writer, replacing bool) *Proc {
	p := &Proc{spec: spec, stdout: stdout, stderr: newTail(s.StderrLimit), done: make(chan struct{})}
	s.mu.Lock()
	if p.spec.Name == "" {
		p.spec.Name = fmt.Sprintf("process %d", len(s.procs))
	}
	waiting := s.waiting && !replacing
	if !waiting {
		s.procs = append(s.procs, p)
	}
	s.mu.Unlock()
	fail := func(err error) *Proc {
		p.mu.Lock()
		p.exited, p.err = true, err
		p.mu.Unlock()
		close(p.done)
		return p
	}
	switch {
	case waiting:
		return fail(errors.New("start: started after Wait"))
	case spec.Bin == "" && s.binErr != nil:
		return fail(fmt.Errorf("start: the colo binary: %w", s.binErr))
	}
	p.cmd = s.st.Command(ctx, cmp.Or(spec.Bin, s.bin), spec)
	p.cmd.Env = childEnv(s.Environ, spec.Env)
	p.cmd.Stderr = p.stderr
	switch {
	case w != nil:
		p.cmd.Stdout = w
	case stdout != nil:
		p.cmd.Stdout = stdout
	}
	if spec.Output != nil {
		p.cmd.Stderr = io.MultiWriter(p.stderr, spec.Output)
		if p.cmd.Stdout == nil {
			p.cmd.Stdout = spec.Output
		} else {
			p.cmd.Stdout = io.MultiWriter(p.cmd.Stdout, spec.Output)
		}
	}
	// A child that leaves a grandchild holding its pipes does not hold
	// up Wait for more than this.
	p.cmd.WaitDelay = time.Second
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := p.cmd.Wait()
		p.mu.Lock()
		if p.declared != "" && err != nil {
			err = fmt.Errorf("%w, sent by the supervisor: %s", err, p.declared)
		}
		p.exited, p.err = true, err
		p.mu.Unlock()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	return p
}

// Procs returns the processes started so far, in the order they were
// started.
func (s *Supervisor) Procs() []*Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.procs)
}

// remove drops p from s.
func (s *Supervisor) remove(p *Proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = slices.DeleteFunc(s.procs, func(q *Proc) bool { return q == p })
}

// setScheduler records p as the scheduler's process.
func (s *Supervisor) setScheduler(p *Proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scheduler = p
}

// isScheduler reports whether p is the scheduler's process.
func (s *Supervisor) isScheduler(p *Proc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scheduler == p
}

// schedulerPrefix starts the first line colo node --role scheduler prints.
const schedulerPrefix = "scheduler listening on "

// jobStartedPrefix starts the line the scheduler prints once every node
// is ready, jobFinishedPrefix the line it prints when every node's job
// succeeded.
const (
	jobStartedPrefix  = "job started: "
	jobFinishedPrefix = "job finished: "
)

// pausedPrefix starts the line the scheduler prints when the job pauses
// for a failed process (pauseLine), abortedPrefix the line it prints
// when the job ends for a node's failure (abortLine).
const (
	pausedPrefix  = "job paused: "
	abortedPrefix = "job aborted: "
)

// alivePrefix starts the line of life of a scheduler with a standby
// (aliveLine): "scheduler alive: timeout 30s".
const alivePrefix = "scheduler alive: "

// parseAlive returns the timeout a line of life gives.
func parseAlive(line string) (time.Duration, bool) {
	rest, ok := strings.CutPrefix(line, alivePrefix+"timeout ")
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(rest)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

// backupPrefix starts the line the scheduler prints when a new copy of
// a server's ranges is in place (backupLine).
const backupPrefix = "backup made: "

// parseBackup returns the server whose ranges a backup line says were
// copied, and the server holding the copy.
func parseBackup(line string) (server, backup int, ok bool) {
	rest, ok := strings.CutPrefix(line, backupPrefix)
	if !ok {
		return 0, 0, false
	}
	if n, err := fmt.Sscanf(rest, "server %d holds a copy of server %d's ranges", &backup, &server); err != nil || n != 2 || server < 0 || backup < 0 || rest != fmt.Sprintf("server %d holds a copy of server %d's ranges", backup, server) {
		return 0, 0, false
	}
	return server, backup, true
}

// parsePause returns the nodes a pause line says were lost and why.
func parsePause(line string) (nodes []string, cause string, ok bool) {
	rest, ok := strings.CutPrefix(line, pausedPrefix)
	if !ok {
		return nil, "", false
	}
	_, rest, ok = strings.Cut(rest, ": lost ")
	if !ok {
		return nil, "", false
	}
	return parseLost(rest)
}

// parseAbort returns the node an abort line says was lost and why.
func parseAbort(line string) (nodes []string, cause string, ok bool) {
	rest, ok := strings.CutPrefix(line, abortedPrefix+"lost ")
	if !ok {
		return nil, "", false
	}
	return parseLost(rest)
}

// parseLost reads "NODE and NODE: WHY".
func parseLost(rest string) (nodes []string, cause string, ok bool) {
	lost, cause, ok := strings.Cut(rest, ": ")
	if !ok || lost == "" {
		return nil, "", false
	}
	return strings.Split(lost, " and "), cause, true
}

// StartScheduler starts the scheduler of spec (colo node --role
// scheduler) and returns the address it prints first ("scheduler
// listening on ADDR"); the rest of its output is kept (Spec.Stdout) or
// drained. If the scheduler exits, prints something else first, or ctx
// is done before it prints, StartScheduler kills and reaps it and says
// why, with the last lines of its standard error; Wait then does not see
// it.
func (s *Supervisor) StartScheduler(ctx context.Context, spec Spec) (addr string, err error) {
	var out *tail
	if spec.Stdout {
		out = newTail(s.StdoutLimit)
	}
	fl := s.schedulerLines(out)
	p := s.start(ctx, spec, out, fl)
	if p.Pid() == 0 {
		s.remove(p)
		return "", fmt.Errorf("%s did not start: %w", p.Name(), p.err)
	}
	// addrOf reads the address off the first line.
	addrOf := func(line string) (string, error) {
		if a, ok := strings.CutPrefix(strings.TrimSpace(line), schedulerPrefix); ok && a != "" {
			return a, nil
		}
		return "", fmt.Errorf("it printed %q, not %q", line, schedulerPrefix+"ADDR")
	}
	var why error
	select {
	case line := <-fl.line:
		if addr, why = addrOf(line); why == nil {
			s.hasScheduler.Store(true)
			s.setScheduler(p)
			return addr, nil
		}
	case <-p.done:
		// Its output was copied before it was reaped: a line it printed
		// is in the channel.
		select {
		case line := <-fl.line:
			if addr, why = addrOf(line); why == nil {
				s.hasScheduler.Store(true)
				s.setScheduler(p)
				return addr, nil
			}
		default:
			status := "exit status 0"
			if p.err != nil {
				status = p.err.Error()
			}
			why = fmt.Errorf("it ended (%s) before printing its address", status)
			if len(fl.buf) > 0 {
				why = fmt.Errorf("it ended (%s) after printing %q, not %q", status, fl.buf, schedulerPrefix+"ADDR")
			}
		}
	case <-ctx.Done():
		why = fmt.Errorf("it had not printed its address: %w", context.Cause(ctx))
	}
	p.kill()
	<-p.done
	s.remove(p)
	msg := fmt.Sprintf("%s did not start: %%w", p.Name())
	if t := lastLines(p.Stderr(), 3); t != "" {
		msg += ": " + t
	}
	return "", fmt.Errorf(msg, why)
}

// schedulerLines returns the writer of a scheduler's standard output,
// which passes it on to out (if any); a scheduler started in the place
// of another starts its watch for KillHung afresh.
func (s *Supervisor) schedulerLines(out *tail) *firstLine {
	s.lastLine.Store(monoNow())
	s.aliveTimeout.Store(0)
	return &firstLine{w: out, line: make(chan string, 1), started: &s.jobStarted, finished: &s.jobFinished, paused: s.paused,
		lastLine: &s.lastLine, aliveTimeout: &s.aliveTimeout}
}

// hungPoll is how often Wait looks whether the scheduler is hung
// (KillHung).
const hungPoll = 20 * time.Millisecond

// monoBase is the origin of monoNow, set once.
var monoBase = time.Now()

// monoNow returns the nanoseconds since monoBase on the monotonic
// clock: a step of the wall clock (NTP, a date set by hand) neither
// makes a scheduler look silent nor hides its silence.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// hung returns why the scheduler is taken for hung (KillHung), "" if
// it is not.
func (s *Supervisor) hung() string {
	d := time.Duration(s.aliveTimeout.Load())
	silent := time.Duration(monoNow() - s.lastLine.Load())
	if !s.KillHung || d <= 0 || silent <= 2*d/3 || !s.jobStarted.Load() || s.jobFinished.Load() {
		return ""
	}
	return fmt.Sprintf("it printed no line for %v, over two thirds of its timeout of %v: hung or stopped", silent.Round(time.Millisecond), d)
}

// firstLine passes what it is written on to w (if any) and sends the
// first line, without its newline, on line; a first line longer than
// 4 KiB is sent cut. It sets started when a later line starts with
// jobStartedPrefix, finished when one starts with jobFinishedPrefix, and
// passes the later lines that start with pausedPrefix, abortedPrefix or
// backupPrefix to paused.
type firstLine struct {
	w        *tail
	buf      []byte
	line     chan string
	sent     bool
	started  *atomic.Bool
	finished *atomic.Bool
	paused   func(line string)
	// lastLine, when set, is when a later line last ended (monoNow), and
	// aliveTimeout the timeout of the last line of life.
	lastLine, aliveTimeout *atomic.Int64
	// next is the start of the current line after the first, up to
	// maxLine bytes; more is set once it is longer.
	next []byte
	more bool
}

// maxLine bounds the later lines of the scheduler that firstLine reads.
const maxLine = 4 << 10

func (f *firstLine) Write(p []byte) (int, error) {
	rest := p
	if !f.sent {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			f.buf = append(f.buf, p...)
			rest = nil
		} else {
			f.buf = append(f.buf, p[:i]...)
			rest = p[i+1:]
		}
		if i >= 0 || len(f.buf) > 4<<10 {
			f.sent = true
			f.line <- string(f.buf)
		}
	}
	for _, c := range rest {
		switch {
		case c == '\n':
			if f.lastLine != nil {
				f.lastLine.Store(monoNow())
				if d, ok := parseAlive(string(f.next)); ok && !f.more {
					f.aliveTimeout.Store(int64(d))
				}
			}
			if !f.more && f.paused != nil && (bytes.HasPrefix(f.next, []byte(pausedPrefix)) || bytes.HasPrefix(f.next, []byte(abortedPrefix)) || bytes.HasPrefix(f.next, []byte(backupPrefix))) {
				f.paused(string(f.next))
			}
			f.next, f.more = f.next[:0], false
		case f.more:
		case len(f.next) < maxLine:
			f.next = append(f.next, c)
			if len(f.next) == len(jobStartedPrefix) && string(f.next) == jobStartedPrefix {
				f.started.Store(true)
			}
			if len(f.next) == len(jobFinishedPrefix) && string(f.next) == jobFinishedPrefix && f.finished != nil {
				f.finished.Store(true)
			}
		default:
			f.more = true
		}
	}
	if f.w != nil {
		return f.w.Write(p)
	}
	return len(p), nil
}

// Wait waits for every process started. When one fails, the others have
// Grace to end on their own, then are killed; but when it fails before
// the scheduler of StartScheduler printed "job started: …" (before every
// node was ready), the others are killed at once, as they could only wait
// for the node that failed until their join timeout. When ctx is done first, it
// kills them all and returns an error that wraps context.Cause(ctx) and
// says the cluster was stopped. Otherwise it returns nil if every process
// succeeded, or a *Failure naming the first that failed. Every process
// has been reaped when Wait returns. Later calls return the same.
func (s *Supervisor) Wait(ctx context.Context) error {
	s.mu.Lock()
	if s.waiting {
		s.mu.Unlock()
		for _, p := range s.Procs() {
			<-p.done
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.result
	}
	s.waiting = true
	procs := slices.Clone(s.procs)
	s.mu.Unlock()

	exits := make(chan *Proc, len(procs))
	watch := func(p *Proc) {
		go func() {
			<-p.done
			exits <- p
		}()
	}
	for _, p := range procs {
		watch(p)
	}
	var live sync.Mutex // procs grows with replacements
	killAll := func() {
		live.Lock()
		defer live.Unlock()
		for _, p := range procs {
			p.kill()
		}
	}
	var failed []*Proc
	var grace <-chan time.Time
	graced, stopped := false, false
	done := ctx.Done()
	// lost matches the pause lines with the exits of the processes that
	// died by themselves: a line names the replacement's rank too, and
	// must not kill it. handled are the processes whose exit was handled.
	var lost lostLines
	handled := make(map[*Proc]bool)
	pauses := s.pauseChan()
	// blamed is the process whose failure the scheduler ended the job
	// for ("job aborted: …", the failure that started a pause when no
	// replacement came), and why: the cause of the cluster's failure,
	// when no process was killed from outside.
	var blamed, blamedWhy string
	// schedulerEnded is set once the scheduler exited without an error:
	// with its line "job finished: …" (s.jobFinished), the job ended,
	// and a process that dies then is not replaced: no scheduler would
	// take its replacement in, nor a takeover come.
	schedulerEnded := false
	verdicts := func() []string {
		var kill []string
		for _, line := range s.takePauses() {
			if server, backup, ok := parseBackup(line); ok {
				if s.BackedUp != nil {
					s.BackedUp(server, backup)
				}
				continue
			}
			if s.ProcessOf == nil {
				continue
			}
			if nodes, cause, ok := parseAbort(line); ok {
				if name := s.ProcessOf(nodes); name != "" {
					blamed, blamedWhy = name, cause
				}
				continue
			}
			nodes, cause, ok := parsePause(line)
			if !ok {
				continue
			}
			name := s.ProcessOf(nodes)
			if name == "" {
				continue
			}
			kill = append(kill, name, cause)
		}
		return kill
	}
	var hungTick <-chan time.Time
	if s.KillHung {
		t := time.NewTicker(hungPoll)
		defer t.Stop()
		hungTick = t.C
	}
	for left := len(procs); left > 0; {
		select {
		case <-hungTick:
			if why := s.hung(); why != "" && !graced && !stopped && !schedulerEnded {
				s.mu.Lock()
				p := s.scheduler
				s.mu.Unlock()
				if p != nil {
					p.killDeclared(why)
				}
			}
		case <-pauses:
			kill := verdicts()
			for i := 0; i < len(kill); i += 2 {
				name, cause := kill[i], kill[i+1]
				live.Lock()
				named := slices.DeleteFunc(slices.Clone(procs), func(p *Proc) bool { return p.Name() != name })
				live.Unlock()
				if !lost.line(name) {
					continue
				}
				for _, p := range named {
					// The process whose exit is not handled yet may have
					// died by itself just before: then the line is its
					// death's, which its exit replaces.
					if p.killDeclared("the scheduler had declared it lost: "+cause) && !handled[p] {
						lost.diedBefore(name)
					}
				}
			}
		case p := <-exits:
			left--
			// The new copies reported before it ended count in
			// Survive's and Replace's decisions.
			for _, line := range s.takeBackups() {
				if server, backup, ok := parseBackup(line); ok && s.BackedUp != nil {
					s.BackedUp(server, backup)
				}
			}
			handled[p] = true
			byItself := p.Declared() == "" && !p.Killed()
			if s.OnExit != nil {
				s.OnExit(p)
			}
			if p.err == nil && s.isScheduler(p) {
				schedulerEnded = true
			}
			if p.err != nil && s.Replace != nil && !graced && !stopped && s.jobStarted.Load() && !s.jobFinished.Load() && !schedulerEnded && rank(p) == 0 {
				if spec, ok := s.Replace(p); ok {
					if byItself {
						lost.exited(p.Name(), true)
					}
					var out *tail
					if spec.Stdout {
						out = newTail(s.StdoutLimit)
					}
					var w io.Writer
					if s.isScheduler(p) {
						// A scheduler that takes the job over: its lines
						// are read as the first one's.
						w = s.schedulerLines(out)
					}
					np := s.startProc(ctx, spec, out, w, true)
					if w != nil {
						s.setScheduler(np)
					}
					live.Lock()
					procs = append(procs, np)
					live.Unlock()
					watch(np)
					left++
					continue
				}
			}
			if byItself {
				lost.exited(p.Name(), false)
			}
			if p.err != nil && s.Survive != nil && !graced && !stopped && s.jobStarted.Load() && rank(p) == 0 && s.Survive(p) {
				p.mu.Lock()
				p.survived = true
				p.mu.Unlock()
				continue
			}
			if p.err != nil {
				failed = append(failed, p)
				if s.hasScheduler.Load() && !s.jobStarted.Load() {
					// Before the job runs nobody can end on their own:
					// they would wait for a node that will never come.
					killAll()
				}
				if !graced {
					graced = true
					t := time.NewTimer(s.Grace)
					defer t.Stop()
					grace = t.C
				}
			}
		case <-grace:
			grace = nil
			killAll()
		case <-done:
			done, stopped = nil, true
			killAll()
		}
	}
	verdicts() // the lines read after the last exit
	var err error
	switch {
	case ctx.Err() != nil && (stopped || len(failed) > 0):
		err = fmt.Errorf("%w: the cluster was stopped", context.Cause(ctx))
	case len(failed) > 0:
		f := &Failure{Procs: causeFirst(failed, blamed)}
		if p := f.Procs[0]; p.Name() == blamed && rank(p) != 0 {
			f.Reason = blamedWhy
		}
		if s.hasScheduler.Load() && !s.jobStarted.Load() {
			// The job never ran: a member that ended well never joined
			// it, and the scheduler waited for it. A process the
			// supervisor killed has an error (its signal), even one
			// marked killed after it exited but before Wait had it.
			live.Lock()
			for _, p := range procs {
				if p.err == nil && !s.isScheduler(p) {
					f.Early = append(f.Early, p.Name())
				}
			}
			live.Unlock()
		}
		err = f
	}
	s.mu.Lock()
	s.result = err
	s.mu.Unlock()
	return err
}

// causeFirst orders failed processes, in the order they ended, so that
// those that died of a signal the supervisor did not send come first: a
// process killed from outside (by the OOM killer, an operator, a crash)
// is the cause, and the others, which exit with an error naming it a few
// milliseconds later, may be reaped before it. Then comes the last
// process named blamed, which the scheduler said the job failed for (a
// hung process it declared failed, killed after the grace period), before
// the scheduler and the others that only passed the failure on.
func causeFirst(failed []*Proc, blamed string) []*Proc {
	out := slices.Clone(failed)
	last := -1
	for i, p := range out {
		if blamed != "" && p.Name() == blamed {
			last = i
		}
	}
	order := func(i int) int {
		if r := rank(out[i]); r == 0 || i != last {
			return 2 * r
		}
		return 1
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(order(a), order(b)) })
	sorted := make([]*Proc, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

// rank is 0 for a process that died of a signal the supervisor did not
// send, 1 otherwise.
func rank(p *Proc) int {
	var ee *exec.ExitError
	if !p.Killed() && errors.As(p.Err(), &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 0
		}
	}
	return 1
}

// Failure is the error of a cluster in which a process failed.
type Failure struct {
	// Procs are the processes that failed, in the order they ended,
	// except that those killed by a signal the supervisor did not send
	// come first: the first is the cause, the others failed after it
	// (told by the scheduler that the job failed, or killed after the
	// grace period). When no process was killed from outside, the process
	// whose failure the scheduler ended the job for is first, not the
	// first to exit (often the scheduler).
	Procs []*Proc
	// Reason is why the scheduler declared the first process failed
	// ("no heartbeat for 30s (server 1, node 4 at ADDR)") when that
	// process did not die of a signal from outside (a hung process,
	// killed by the supervisor after the grace period), "" otherwise.
	Reason string
	// Early are the processes that exited without an error before the
	// job started (the scheduler's "job started: …"), so never joined it:
	// what the scheduler that timed out waiting for its nodes waited for
	// (a program under colo run that never calls colo.init()).
	Early []string
}

// Error names the first process that failed, why, and the last three
// lines of its standard error, then the others: "machine 1 failed: exit
// status 1: … (then machine 0: <its last line>; scheduler killed)". A
// line that ends by repeating an error already told (a node passing on
// another's failure) keeps what comes before it and says "the same" for
// the rest.
func (f *Failure) Error() string {
	first := f.Procs[0]
	msg := fmt.Sprintf("%s failed: %v", first.Name(), first.err)
	if f.Reason != "" {
		msg = fmt.Sprintf("%s failed, the scheduler said: %s; then %v", first.Name(), f.Reason, first.err)
	}
	var kept []string
	told := msg
	for _, l := range tailLines(first.Stderr(), 3) {
		l = sameAs(told, l)
		kept = append(kept, l)
		told += " " + l
	}
	if len(kept) > 0 {
		msg += ": " + strings.Join(kept, " | ")
	}
	var others []string
	for _, p := range f.Procs[1:] {
		if p.Killed() {
			others = append(others, p.Name()+" killed")
			continue
		}
		line := sameAs(msg, lastLines(p.Stderr(), 1))
		if line == "" {
			line = p.err.Error()
		}
		others = append(others, p.Name()+": "+line)
	}
	if len(others) > 0 {
		msg += " (then " + strings.Join(others, "; ") + ")"
	}
	if len(f.Early) > 0 {
		msg += "; " + textJoin(f.Early) + " had exited without an error before the job started, never joining it"
	}
	return msg
}

// Unwrap returns the first process's error.
func (f *Failure) Unwrap() error { return f.Procs[0].err }

// repeatTail is how much of a line's end must already have been told for
// the line to repeat it.
const repeatTail = 60

// sameAs returns line with its longest end that told already holds, if
// that is repeatTail bytes or more, replaced by "the same": cut after the
// first ": " in it, so that what the line adds (who passed the error on,
// and about whom) stays.
func sameAs(told, line string) string {
	if len(line) < repeatTail || !strings.Contains(told, line[len(line)-repeatTail:]) {
		return line
	}
	// The ends of line that told holds are those from some i on: find
	// the smallest.
	i := sort.Search(len(line)-repeatTail, func(i int) bool { return strings.Contains(told, line[i:]) })
	if j := strings.Index(line[i:], ": "); j >= 0 && len(line)-(i+j+2) >= repeatTail {
		i += j + 2
	}
	return line[:i] + "the same"
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string { return strings.Join(tailLines(s, n), " | ") }

// tail keeps the last max bytes written to it. A nil *tail keeps
// nothing.
type tail struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func newTail(max int) *tail { return &tail{max: max} }

// Write keeps p's last bytes; the buffer grows to twice max before it
// drops its head, so each byte is copied a bounded number of times.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if len(t.b)+len(p) > 2*t.max {
		keep := t.max - len(p)
		t.b = append(t.b[:0], t.b[len(t.b)-keep:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

// Bytes returns a copy of the last max bytes written.
func (t *tail) Bytes() []byte {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return bytes.Clone(b)
}
