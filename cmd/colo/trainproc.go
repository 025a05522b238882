package main

// Training on a cluster of processes: the machine side (colo node --role
// machine --job train), the scheduler's routing by a placement, and the
// deployment of colo train --processes and --netns. Every mode runs the
// same per-worker code, train.Work, so a BSP job gives the same passes
// and evaluation bit for bit in this process, as processes on loopback
// and in network namespaces.

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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"colo/app"
	"colo/cluster"
	"colo/cluster/netns"
	"colo/graph"
	"colo/placement"
	"colo/ps/node"
	"colo/ps/route"
	"colo/train"
	"colo/transport"
)

// registerNode registers the flags of colo train that colo node's
// training job needs and does not already have: --updater, --lr, --l1,
// --l2, --batch and --seed are the node's own, the factors' dimension is
// --mf-rank (--rank is the node's rank).
func (t *trainFlags) registerNode(f *cmdFlags) {
	def := train.DefaultConfig()
	f.StringVar(&t.app, "app", "lr", "--job train: application: "+strings.Join(app.Names(), " or "))
	f.StringVar(&t.test, "test", "", "--job train: test file, as colo train --test")
	f.StringVar(&t.features, "features", "log1p-l2", "--job train, lr: feature values: raw, l2 (unit-norm samples) or log1p-l2")
	f.Float64Var(&t.epsilon, "epsilon", def.Epsilon, "--job train: stop when the training loss changes by less than this fraction between passes")
	f.IntVar(&t.maxPasses, "max-passes", def.MaxPasses, "--job train: stop after this many passes over the data")
	f.IntVar(&t.mf.Rank, "mf-rank", 16, "--job train, mf: dimension of the factors (colo train --rank)")
	f.Float64Var(&t.mf.HoldOut, "holdout", 0.1, "--job train, mf: fraction of the entries held out when there is no --test")
	f.StringVar(&t.jobFile, "job-file", "", "--job train and the scheduler: read the training job from this JSON file (as colo train --processes writes it) instead of the training flags")
}

// trainJob returns the training job of colo node: --job-file's, or the
// one the flags describe on --num-workers machines.
func (nf *nodeFlags) trainJob() (train.Job, error) {
	if nf.train.jobFile != "" {
		job, err := train.ReadJobFile(nf.train.jobFile)
		if err != nil {
			return job, fmt.Errorf("--job-file: %w", err)
		}
		return job, nil
	}
	switch {
	case nf.numWorkers < 1:
		return train.Job{}, usageError("--job train needs --num-workers, the number of machines K of the placement")
	case nf.numServers > 0 && nf.numServers != nf.numWorkers:
		return train.Job{}, usageError("--job train runs on machines: --num-servers %d and --num-workers %d differ", nf.numServers, nf.numWorkers)
	case nf.data == "" || nf.place == "":
		return train.Job{}, usageError("--job train needs --data FILE and --placement DIR (or --job-file)")
	}
	t := nf.train
	t.machines, t.place, t.consistency = nf.numWorkers, nf.place, "bsp"
	t.updater, t.lr, t.l1, t.l2, t.batch, t.seed = nf.updater, nf.lr, nf.l1, nf.l2, nf.batch, nf.seed
	t.bandwidth, t.matrix = nf.linkRate, nf.matrix
	if t.updater == "" {
		t.updater = train.DefaultConfig().Rule.Name
	}
	job, err := t.job(nf.data, nf.df)
	if err != nil {
		return job, err
	}
	job.Config.Rule.Beta = nf.beta
	return job, job.Validate()
}

// machineJob is one machine's share of a training job, ready to run.
type machineJob struct {
	rank int
	job  train.Job
	app  train.App
	p    *placement.Placement
}

// newMachineJob reads the job and the placement of machine --rank.
func newMachineJob(nf *nodeFlags) (*machineJob, error) {
	if nf.rank < 0 {
		return nil, usageError("--job train needs --rank: the machine's rank is its machine in the placement")
	}
	job, err := nf.trainJob()
	if err != nil {
		return nil, err
	}
	if nf.numWorkers > 0 && nf.numWorkers != job.Config.Machines {
		return nil, usageError("--num-workers %d: the job has %d machines", nf.numWorkers, job.Config.Machines)
	}
	opened, p, err := app.OpenPlaced(job)
	if err != nil {
		return nil, err
	}
	if nf.rank >= p.K {
		return nil, usageError("--rank %d: the placement %s has %d machines", nf.rank, job.Placement, p.K)
	}
	return &machineJob{rank: nf.rank, job: job, app: opened.App, p: p}, nil
}

// placedTable reads the scheduler's routing table from the job's
// placement (--job-file) or --placement: the owner of each parameter of
// the data in DIR/param.part. It also returns the number of keys and, for
// a job file, the consistency model and the width of its application.
func (nf *nodeFlags) placedTable() (*route.Table, uint64, *train.Job, int, error) {
	if nf.train.jobFile != "" {
		job, err := nf.trainJob()
		if err != nil {
			return nil, 0, nil, 0, err
		}
		opened, p, err := app.OpenPlaced(job)
		if err != nil {
			return nil, 0, nil, 0, err
		}
		table, err := route.FromPlacement(p.Param, p.K)
		if err != nil {
			return nil, 0, nil, 0, fmt.Errorf("placement %s: %w", job.Placement, err)
		}
		return table, uint64(len(p.Param)), &job, opened.App.Width(), nil
	}
	if nf.data == "" {
		return nil, 0, nil, 0, usageError("--placement needs --data, the training data whose parameter ids param.part names")
	}
	if nf.numServers < 1 {
		return nil, 0, nil, 0, usageError("--placement needs --num-servers, the number of machines of the placement")
	}
	lopt, err := nf.df.options()
	if err != nil {
		return nil, 0, nil, 0, err
	}
	g, err := graph.Load(nf.data, lopt)
	if err != nil {
		return nil, 0, nil, 0, err
	}
	param, err := placement.LoadParamPart(filepath.Join(nf.place, placement.ParamPartFile), g, nf.numServers)
	if err != nil {
		return nil, 0, nil, 0, fmt.Errorf("--placement: %w", err)
	}
	table, err := route.FromPlacement(param, nf.numServers)
	if err != nil {
		return nil, 0, nil, 0, fmt.Errorf("--placement %s: %w", nf.place, err)
	}
	return table, uint64(len(param)), nil, 0, nil
}

// rates returns the emulated rates of --link-bandwidth and
// --bandwidth-matrix, or of the job's links.
func (nf *nodeFlags) rates(job *train.Job) (node.Rates, error) {
	if job != nil {
		return node.Rates{Link: job.Config.LinkBandwidth, Matrix: job.Config.Bandwidth}, nil
	}
	var r node.Rates
	if nf.linkRate != "" {
		link, err := transport.ParseRate(nf.linkRate)
		if err != nil {
			return r, usageError("--link-bandwidth: %v", err)
		}
		r.Link = link
	}
	if nf.matrix != "" {
		b, err := readBandwidth(nf.matrix)
		if err != nil {
			return r, err
		}
		if k := max(nf.numServers, nf.numWorkers); b.K < k {
			return r, usageError("--bandwidth-matrix %s is for %d machines, the cluster has %d", nf.matrix, b.K, k)
		}
		r.Matrix = b
	}
	return r, nil
}

// deployment says where colo train runs its cluster: in this process
// (neither flag), as processes on loopback, or in network namespaces.
type deployment struct {
	processes, netns bool
	deadline         time.Duration
}

func (d *deployment) register(f *cmdFlags) {
	f.BoolVar(&d.processes, "processes", false, "run the scheduler and the K machines as processes of this binary on loopback; --link-bandwidth and --bandwidth-matrix then limit each TCP link to another machine separately")
	f.BoolVar(&d.netns, "netns", false, "run the scheduler and each machine as a process in its own network namespace, joined by veth links that tc shapes at --link-bandwidth (required); needs root and iproute2")
	f.DurationVar(&d.deadline, "deadline", 0, "--processes, --netns: stop the cluster after this long (0: no limit; failed or silent nodes end the job anyway)")
}

// check validates the flags of d with the training configuration, before
// anything is loaded.
func (d *deployment) check(cfg train.Config) error {
	if !d.netns {
		return nil
	}
	if cfg.Bandwidth != nil {
		return usageError("--netns shapes every machine's link at one rate: use --link-bandwidth, not --bandwidth-matrix")
	}
	if cfg.LinkBandwidth == 0 {
		return usageError("--netns needs --link-bandwidth, the rate tc gives each machine's link")
	}
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, fmt.Sprintf("root (running as uid %d)", os.Geteuid()))
	}
	var tools []string
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			tools = append(tools, tool)
		}
	}
	if len(tools) > 0 {
		missing = append(missing, fmt.Sprintf("iproute2 (%s not in PATH; apt-get install iproute2)", strings.Join(tools, " and ")))
	}
	if len(missing) > 0 {
		return fmt.Errorf("--netns needs %s", strings.Join(missing, " and "))
	}
	if err := netns.Available(); err != nil {
		return fmt.Errorf("--netns: %w", err)
	}
	return nil
}

// deployer returns the deployer of d for jobs on the training graph g.
func (d *deployment) deployer(g *graph.Graph) train.Deployer {
	if !d.processes && !d.netns {
		return cluster.InProcess{}
	}
	return &procDeployer{graph: g, netns: d.netns, deadline: d.deadline}
}

// procDeployer deploys training jobs as processes of this binary: on
// loopback, or each in its own network namespace.
type procDeployer struct {
	graph    *graph.Graph
	netns    bool
	deadline time.Duration
}

// trainProc is one process of a deployment.
type trainProc struct {
	name   string
	cmd    *exec.Cmd
	errOut bytes.Buffer
	result string
	err    error
	exited bool
	killed bool // by the launcher, after another node failed
}

// Heartbeat and timeout of a deployment's scheduler, as the in-process
// cluster's: a killed process is noticed at once (its sockets close); the
// timeout bounds silent nodes (data messages take as long as their link
// needs).
const (
	procJoin = 60 * time.Second
	// procGrace is how long the other processes have to end on their own
	// after one failed (they do, told by the scheduler) before they are
	// killed.
	procGrace = 2 * time.Second
)

// Deploy trains d on a cluster of processes of this binary: it writes
// the placement and the job to a temporary directory, starts the
// scheduler and the K machines, waits for all of them and assembles their
// reports. The first process to fail is named in the error; the others
// are killed.
func (pd *procDeployer) Deploy(ctx context.Context, d *train.Deployment) (*train.Outcome, error) {
	k := d.Job.Config.Machines
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if pd.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pd.deadline)
		defer cancel()
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "colo-train-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pdir := filepath.Join(dir, "placement")
	if err := placement.WriteDir(pdir, pd.graph, d.Placement, map[string]any{"placement": d.Job.Placement, "machines": k}); err != nil {
		return nil, err
	}
	job := d.Job
	job.Placement = pdir
	if pd.netns {
		// tc shapes the links: the machines limit nothing themselves.
		job.Config.LinkBandwidth, job.Config.Bandwidth = 0, nil
	}
	jobFile := filepath.Join(dir, "job.json")
	if err := writeJSONFile(jobFile, job); err != nil {
		return nil, err
	}
	token := newToken()

	// Hosts: loopback, or namespace 0 for the scheduler and i+1 for
	// machine i.
	hosts := make([]string, k+1)
	command := func(i int, args ...string) *exec.Cmd { return exec.CommandContext(ctx, bin, args...) }
	schedAddr := "127.0.0.1:0"
	for i := range hosts {
		hosts[i] = "127.0.0.1"
	}
	if pd.netns {
		netns.Sweep()
		nn, err := netns.New(netns.Config{Machines: k + 1, Rate: fmt.Sprintf("%.0fbit", 8*d.Job.Config.LinkBandwidth)})
		if err != nil {
			return nil, err
		}
		defer nn.Close()
		for i := range hosts {
			hosts[i] = nn.Addr(i)
		}
		schedAddr = hosts[0] + ":7070"
		command = func(i int, args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nn.Namespace(i), bin}, args...)...)
		}
	}
	childEnv := withoutColoEnv(os.Environ())
	var procs []*trainProc
	newProc := func(i int, name string, args ...string) *trainProc {
		pr := &trainProc{name: name, cmd: command(i, args...)}
		pr.cmd.Stderr, pr.cmd.Env, pr.cmd.WaitDelay = &pr.errOut, childEnv, time.Second
		procs = append(procs, pr)
		return pr
	}
	exits := make(chan *trainProc, k+1)
	var wg sync.WaitGroup
	defer wg.Wait()

	t0 := time.Now()
	// The scheduler first: it prints the address it listens on.
	sp := newProc(0, "scheduler", "node", "--role", "scheduler", "--scheduler", schedAddr,
		"--token", token, "--num-servers", strconv.Itoa(k), "--num-workers", strconv.Itoa(k), "--job-file", jobFile,
		"--heartbeat", train.Heartbeat.String(), "--timeout", train.Timeout.String(), "--join-timeout", procJoin.String())
	addr, rd, err := startSchedulerCmd(sp.cmd, &sp.errOut)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return nil, err
	}
	wg.Go(func() {
		io.Copy(io.Discard, rd)
		sp.err = sp.cmd.Wait()
		exits <- sp
	})
	for i := range k {
		result := filepath.Join(dir, fmt.Sprintf("machine-%d.json", i))
		pr := newProc(i+1, fmt.Sprintf("machine %d", i), "node", "--role", "machine", "--job", "train", "--scheduler", addr,
			"--token", token, "--num-servers", strconv.Itoa(k), "--num-workers", strconv.Itoa(k),
			"--rank", strconv.Itoa(i), "--host", hosts[i+1], "--json", "--job-file", jobFile, "--result", result)
		pr.result = result
		if err := pr.cmd.Start(); err != nil {
			pr.err = fmt.Errorf("start: %w", err)
			pr.exited = true
			exits <- pr
			continue
		}
		wg.Go(func() {
			pr.err = pr.cmd.Wait()
			exits <- pr
		})
	}

	// Wait for every process; after the first failure the others have
	// procGrace to end before they are killed.
	var failed []*trainProc
	var grace <-chan time.Time
	done := ctx.Done()
	killRest := func() {
		for _, pr := range procs {
			if !pr.exited && pr.cmd.Process != nil {
				pr.killed = true
				pr.cmd.Process.Kill()
			}
		}
	}
	for left := len(procs); left > 0; {
		select {
		case pr := <-exits:
			pr.exited = true
			left--
			if pr.err != nil {
				failed = append(failed, pr)
				if grace == nil {
					grace = time.After(procGrace)
				}
			}
		case <-grace:
			killRest()
		case <-done:
			done = nil
			killRest()
		}
	}
	wall := time.Since(t0).Seconds()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%d processes: %w: the cluster was stopped", k+1, context.Cause(ctx))
	}
	if len(failed) > 0 {
		return nil, procFailure(failed)
	}

	out := &train.Outcome{Seconds: wall}
	var lastStart int64
	for i, pr := range procs[1:] {
		var r train.MachineReport
		b, err := os.ReadFile(pr.result)
		if err != nil {
			return nil, fmt.Errorf("%s: no result: %w", pr.name, err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: result %s: %w", pr.name, pr.result, err)
		}
		if i == 0 {
			out.Work = r.Work
		}
		out.Stats = append(out.Stats, r.Stats)
		lastStart = max(lastStart, r.StartedUnixNano)
		out.InterValues += r.InterValues
	}
	if lastStart > 0 {
		out.StartSeconds = float64(lastStart-t0.UnixNano()) / 1e9
	}
	return out, nil
}

// writeJSONFile writes v as indented JSON to path.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// procFailure names the first process that failed, with the last lines
// of its standard error, then the others.
func procFailure(failed []*trainProc) error {
	first := failed[0]
	msg := fmt.Sprintf("%s failed: %v", first.name, first.err)
	if tail := lastLines(first.errOut.String(), 3); tail != "" {
		msg += ": " + tail
	}
	var others []string
	for _, pr := range failed[1:] {
		if pr.killed {
			others = append(others, pr.name+" killed")
			continue
		}
		others = append(others, fmt.Sprintf("%s: %s", pr.name, firstOf(lastLines(pr.errOut.String(), 1), pr.err)))
	}
	if len(others) > 0 {
		msg += " (then " + strings.Join(others, "; ") + ")"
	}
	return errors.New(msg)
}

// firstOf returns s, or the first non-nil error's text when s is empty.
func firstOf(s string, errs ...error) string {
	if s != "" {
		return s
	}
	for _, err := range errs {
		if err != nil {
			return err.Error()
		}
	}
	return "no output"
}

// withoutColoEnv drops the COLO_ variables, which colo node would read
// for the flags the launcher does not give.
func withoutColoEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "COLO_") {
			out = append(out, kv)
		}
	}
	return out
}
