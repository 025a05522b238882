package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/transport"
)

// launchFlags are the flags of colo launch.
type launchFlags struct {
	machines, servers, workers int
	consistency                string
	tau                        int
	keys                       uint64
	batch, rounds              int
	token                      string
	heartbeat, timeout         time.Duration
	deadline                   time.Duration
	jsonOut                    bool
	bin                        string
}

func runLaunch(e *env, args []string) error {
	f := newFlags(e, "launch", "colo launch -n K [flags]",
		"Starts a parameter-server cluster of processes on loopback (a scheduler\n"+
			"and K machines, or --servers and --workers separately), runs the built-in\n"+
			"smoke job (every worker pushes known increments to random overlapping\n"+
			"keys; worker 0 checks that every value is the exact sum) and prints the\n"+
			"start time, the throughput and the traffic, inner- and inter-machine.")
	var lf launchFlags
	f.IntVar(&lf.machines, "n", 2, "number of machines (a server and a worker each)")
	f.IntVar(&lf.servers, "servers", 0, "run this many separate servers instead of machines")
	f.IntVar(&lf.workers, "workers", 0, "run this many separate workers instead of machines")
	f.StringVar(&lf.consistency, "consistency", "bsp", "bsp, async or bounded")
	f.IntVar(&lf.tau, "tau", 0, "delay bound of --consistency bounded")
	f.Uint64Var(&lf.keys, "keys", 100_000, "key space of the smoke job")
	f.IntVar(&lf.batch, "batch", 10_000, "keys per push")
	f.IntVar(&lf.rounds, "rounds", 20, "rounds per worker")
	f.StringVar(&lf.token, "token", "", "cluster token (random when empty)")
	f.DurationVar(&lf.heartbeat, "heartbeat", 100*time.Millisecond, "heartbeat period")
	f.DurationVar(&lf.timeout, "timeout", 2*time.Second, "a node silent this long is dead")
	f.DurationVar(&lf.deadline, "deadline", 2*time.Minute, "kill the cluster after this long")
	f.BoolVar(&lf.jsonOut, "json", false, "print the summary as JSON")
	f.StringVar(&lf.bin, "bin", "", "the colo binary to run (default: this one)")
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	separate := lf.servers > 0 || lf.workers > 0
	if separate && (lf.servers < 1 || lf.workers < 1) {
		return usageError("--servers %d and --workers %d must both be at least 1", lf.servers, lf.workers)
	}
	if !separate && lf.machines < 1 {
		return usageError("-n %d: at least 1 machine", lf.machines)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, lf.deadline)
	defer cancel()
	sum, err := launch(ctx, lf)
	if sum != nil {
		if lf.jsonOut {
			if err := json.NewEncoder(e.out).Encode(sum); err != nil {
				return err
			}
		} else {
			printLaunchSummary(e, sum)
		}
	}
	return err
}

// launchSummary is the outcome of a launch.
type launchSummary struct {
	Servers      int     `json:"servers"`
	Workers      int     `json:"workers"`
	Machines     int     `json:"machines"`
	Consistency  string  `json:"consistency"`
	StartSeconds float64 `json:"start_s"`
	// KeysPushed and KeysPerSec are summed over workers; the rate divides
	// by the slowest worker's time.
	KeysPushed   uint64              `json:"keys_pushed"`
	Seconds      float64             `json:"seconds"`
	KeysPerSec   float64             `json:"keys_per_s"`
	Checked      bool                `json:"checked"`
	Inner        transport.LinkStats `json:"inner"`
	Inter        transport.LinkStats `json:"inter"`
	TotalSeconds float64             `json:"total_s"`
	Nodes        []nodeSummary       `json:"nodes"`
	Error        string              `json:"error,omitempty"`
}

// proc is a child process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
	done   chan struct{}
	err    error
}

// launch runs a cluster of processes and collects their summaries.
func launch(ctx context.Context, lf launchFlags) (*launchSummary, error) {
	bin := lf.bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	token := lf.token
	if token == "" {
		token = newToken()
	}
	ns, nw := lf.machines, lf.machines
	if lf.servers > 0 {
		ns, nw = lf.servers, lf.workers
	}
	common := []string{
		"--token", token, "--num-servers", strconv.Itoa(ns), "--num-workers", strconv.Itoa(nw),
		"--keys", strconv.FormatUint(lf.keys, 10),
	}
	t0 := time.Now()
	var procs []*proc
	var wg sync.WaitGroup
	start := func(name string, args ...string) (*proc, error) {
		p := &proc{name: name, cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
		p.cmd.Stderr = &p.errOut
		p.cmd.WaitDelay = time.Second
		procs = append(procs, p)
		return p, nil
	}
	// The scheduler first: it prints its address.
	sp, _ := start("scheduler", append([]string{"node", "--role", "scheduler", "--scheduler", "127.0.0.1:0",
		"--consistency", lf.consistency, "--tau", strconv.Itoa(lf.tau),
		"--heartbeat", lf.heartbeat.String(), "--timeout", lf.timeout.String()}, common...)...)
	addr, rd, err := startSchedulerCmd(sp.cmd, &sp.errOut)
	if err != nil {
		return nil, err
	}
	wg.Go(func() {
		io.Copy(&sp.out, rd)
		sp.err = sp.cmd.Wait()
		close(sp.done)
	})
	nodeArgs := func(role string, rank int) []string {
		return append([]string{"node", "--role", role, "--scheduler", addr, "--rank", strconv.Itoa(rank), "--json",
			"--batch", strconv.Itoa(lf.batch), "--rounds", strconv.Itoa(lf.rounds)}, common...)
	}
	var specs [][2]string
	if lf.servers > 0 {
		for i := range ns {
			specs = append(specs, [2]string{"server", strconv.Itoa(i)})
		}
		for i := range nw {
			specs = append(specs, [2]string{"worker", strconv.Itoa(i)})
		}
	} else {
		for i := range ns {
			specs = append(specs, [2]string{"machine", strconv.Itoa(i)})
		}
	}
	for _, s := range specs {
		rank, _ := strconv.Atoi(s[1])
		p, _ := start(s[0]+" "+s[1], nodeArgs(s[0], rank)...)
		p.cmd.Stdout = &p.out
		if err := p.cmd.Start(); err != nil {
			close(p.done)
			p.err = err
			continue
		}
		wg.Go(func() {
			p.err = p.cmd.Wait()
			close(p.done)
		})
	}
	wg.Wait()
	sum := &launchSummary{Servers: ns, Workers: nw, Consistency: lf.consistency, TotalSeconds: time.Since(t0).Seconds()}
	if lf.servers == 0 {
		sum.Machines = lf.machines
	}
	var errs []error
	var lastStart int64
	for _, p := range procs {
		if p.err != nil {
			errs = append(errs, fmt.Errorf("%s: %v: %s", p.name, p.err, lastLines(p.errOut.String(), 3)))
		}
		if p == sp {
			continue
		}
		var ns nodeSummary
		if err := json.Unmarshal(p.out.Bytes(), &ns); err != nil {
			if p.err == nil {
				errs = append(errs, fmt.Errorf("%s: bad summary: %v", p.name, err))
			}
			continue
		}
		sum.Nodes = append(sum.Nodes, ns)
		lastStart = max(lastStart, ns.StartedUnixNano)
		sum.Inner = sum.Inner.Add(ns.Stats.Inner)
		sum.Inter = sum.Inter.Add(ns.Stats.Inter)
		if s := ns.Smoke; s != nil {
			sum.KeysPushed += s.KeysPushed
			sum.Seconds = max(sum.Seconds, s.Seconds)
			sum.Checked = sum.Checked || s.Checked
		}
	}
	if lastStart > 0 {
		sum.StartSeconds = float64(lastStart-t0.UnixNano()) / 1e9
	}
	if sum.Seconds > 0 {
		sum.KeysPerSec = float64(sum.KeysPushed) / sum.Seconds
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("launch: %w", ctx.Err()))
	}
	if len(errs) == 0 && !sum.Checked {
		errs = append(errs, errors.New("launch: no worker checked the sums"))
	}
	err = errors.Join(errs...)
	if err != nil {
		sum.Error = err.Error()
	}
	return sum, err
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func printLaunchSummary(e *env, s *launchSummary) {
	shape := fmt.Sprintf("%d machines", s.Machines)
	if s.Machines == 0 {
		shape = fmt.Sprintf("%d servers, %d workers", s.Servers, s.Workers)
	}
	fmt.Fprintf(e.out, "cluster of %s (%s) on loopback: all nodes running %.3f s after launch\n", shape, s.Consistency, s.StartSeconds)
	fmt.Fprintf(e.out, "smoke job: %d keys pushed in %.3f s: %.2fM keys/s", s.KeysPushed, s.Seconds, s.KeysPerSec/1e6)
	if s.Checked {
		fmt.Fprint(e.out, "; every value is the exact sum")
	}
	fmt.Fprintln(e.out)
	fmt.Fprintf(e.out, "traffic: inner-machine %d messages, %s; inter-machine %d messages, %s (sent)\n",
		s.Inner.MsgsSent, bytesText(s.Inner.BytesSent), s.Inter.MsgsSent, bytesText(s.Inter.BytesSent))
	fmt.Fprintf(e.out, "total %.3f s\n", s.TotalSeconds)
}
