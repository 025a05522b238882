package main

// Training on a cluster of processes: the machine side (colo node --role
// machine --job train), the scheduler's routing by a placement, and the
// launcher of colo train --processes and --netns. Every mode runs the same
// per-worker code, train.Work, so a BSP job gives the same passes and
// evaluation bit for bit in this process, as processes on loopback and in
// network namespaces.

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

	"colo/graph"
	"colo/launch/netns"
	"colo/placement"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
	"colo/train"
	"colo/transport"
	"colo/transport/tcp"
)

// registerNode registers the flags of colo train that colo node's
// training job needs and does not already have: --updater, --lr, --l1,
// --l2, --batch and --seed are the node's own, the factors' dimension is
// --mf-rank (--rank is the node's rank).
func (t *trainFlags) registerNode(f *cmdFlags) {
	def := train.DefaultConfig()
	f.StringVar(&t.app, "app", "lr", "--job train: application: lr (logistic regression) or mf (matrix factorisation)")
	f.StringVar(&t.test, "test", "", "--job train: test file, as colo train --test")
	f.StringVar(&t.features, "features", string(train.FeaturesLog1pL2), "--job train, lr: feature values: raw, l2 (unit-norm samples) or log1p-l2")
	f.Float64Var(&t.epsilon, "epsilon", def.Epsilon, "--job train: stop when the training loss changes by less than this fraction between passes")
	f.IntVar(&t.maxPasses, "max-passes", def.MaxPasses, "--job train: stop after this many passes over the data")
	t.mf = train.DefaultMFConfig()
	f.IntVar(&t.mf.Rank, "mf-rank", t.mf.Rank, "--job train, mf: dimension of the factors (colo train --rank)")
	f.Float64Var(&t.mf.HoldOut, "holdout", t.mf.HoldOut, "--job train, mf: fraction of the entries held out when there is no --test")
}

// trainJob is one machine's share of a training job, ready to run.
type trainJob struct {
	rank  int
	app   train.App
	p     *placement.Placement
	part  train.Part
	sched train.Schedule
	rule  update.Rule
}

// newTrainJob loads the data and the placement of machine --rank and
// builds its part, as train.Run does for each machine. set holds the
// flags given on the command line or in the environment: the node's
// defaults of --updater, --lr and --batch (for the smoke job) give way to
// colo train's.
func newTrainJob(e *env, nf *nodeFlags, set map[string]bool) (*trainJob, error) {
	switch {
	case nf.rank < 0:
		return nil, usageError("--job train needs --rank: the machine's rank is its machine in the placement")
	case nf.numWorkers < 1:
		return nil, usageError("--job train needs --num-workers, the number of machines K of the placement")
	case nf.numServers > 0 && nf.numServers != nf.numWorkers:
		return nil, usageError("--job train runs on machines: --num-servers %d and --num-workers %d differ", nf.numServers, nf.numWorkers)
	case nf.data == "" || nf.place == "":
		return nil, usageError("--job train needs --data FILE and --placement DIR")
	}
	t := nf.train
	t.machines, t.place, t.consistency = nf.numWorkers, nf.place, "bsp"
	t.updater, t.lr, t.l1, t.l2, t.batch, t.seed = nf.updater, nf.lr, nf.l1, nf.l2, nf.batch, nf.seed
	if !set["updater"] {
		t.updater = train.DefaultConfig().Rule.Name
	}
	if !set["lr"] {
		t.lr = 0
	}
	if !set["batch"] {
		t.batch = 0
	}
	cfg, err := t.config()
	if err != nil {
		return nil, err
	}
	if set["beta"] {
		cfg.Rule.Beta = nf.beta
	}
	rule, err := update.New(cfg.Rule)
	if err != nil {
		return nil, usageError("%v", err)
	}
	lopt, err := nf.df.options()
	if err != nil {
		return nil, err
	}
	g, _, err := loadGraph(nf.data, lopt)
	if err != nil {
		return nil, err
	}
	var test *graph.Graph
	if t.test != "" {
		if test, _, err = loadGraph(t.test, lopt); err != nil {
			return nil, err
		}
	}
	app, err := t.prepare(e, g, test)
	if err != nil {
		return nil, err
	}
	p, err := loadPlacementDir(g, nf.place, cfg.Machines)
	if err != nil {
		return nil, fmt.Errorf("--placement: %w", err)
	}
	if nf.rank >= p.K {
		return nil, usageError("--rank %d: the placement %s has %d machines", nf.rank, nf.place, p.K)
	}
	s := train.NewSchedule(app, cfg)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	part := app.Part(nf.rank, train.Shard(p, nf.rank), s.Batches, cfg.Seed)
	return &trainJob{rank: nf.rank, app: app, p: p, part: part, sched: s, rule: rule}, nil
}

// loadPlacementDir reads the placement of g on k machines from the part
// files of dir; errors name the file.
func loadPlacementDir(g *graph.Graph, dir string, k int) (*placement.Placement, error) {
	data, kd, err := placement.LoadDataPart(filepath.Join(dir, placement.DataPartFile), g.NumSamples(), k)
	if err != nil {
		return nil, err
	}
	if kd != k {
		return nil, fmt.Errorf("%s places the samples on %d machines, the cluster has %d", dir, kd, k)
	}
	p := &placement.Placement{K: k, Data: data}
	if p.Param, err = placement.LoadParamPart(filepath.Join(dir, placement.ParamPartFile), g, k); err != nil {
		return nil, err
	}
	return p, nil
}

// trainReport is what a machine of a training job writes to --result.
type trainReport struct {
	Rank            int                `json:"rank"`
	StartedUnixNano int64              `json:"started_unix_ns"`
	Work            train.WorkerResult `json:"work"`
	// InterValues is the machine's share of train.Result.InterValues.
	InterValues int64 `json:"inter_values"`
	// Stats are the node's counters at the end of training, before the
	// evaluation.
	Stats node.Stats `json:"stats"`
}

// run trains the machine's part on its worker.
func (j *trainJob) run(ctx context.Context, n *node.Node) (*trainReport, error) {
	w := n.Worker()
	a := n.Assignment()
	switch {
	case a.NumWorkers != j.p.K || a.NumServers != j.p.K:
		return nil, fmt.Errorf("train: the cluster has %d servers and %d workers, the placement %d machines", a.NumServers, a.NumWorkers, j.p.K)
	case w.Rank() != j.rank:
		return nil, fmt.Errorf("train: the scheduler assigned rank %d, --rank is %d", w.Rank(), j.rank)
	case w.Width() != j.app.Width():
		return nil, fmt.Errorf("train: the scheduler's width is %d, %s needs %d (its --width)", w.Width(), j.app.Name(), j.app.Width())
	}
	// The node's counters when training ends: the traffic of the training
	// rounds alone, as train.Run reports, not the evaluation's.
	var trained node.Stats
	counted := train.AfterTraining(j.app, func(int) { trained = n.Stats() })
	res, err := train.Work(ctx, w, counted, j.part, j.sched, nil)
	if err != nil {
		return nil, fmt.Errorf("train: machine %d: %w", j.rank, err)
	}
	r := &trainReport{Rank: j.rank, Work: res, Stats: trained}
	if k := len(res.Passes); k > 0 {
		r.InterValues = train.PartInterValues(j.part, j.rank, j.p, j.app.Width(), res.Passes[k-1].Pass)
	}
	return r, nil
}

// write writes r as JSON to path (atomically), if path is set.
func (r *trainReport) write(e *env, path string) error {
	if path == "" {
		return nil
	}
	return writeOutput(e, path, func(w io.Writer) error { return json.NewEncoder(w).Encode(r) })
}

// placedTable reads the scheduler's routing table from --placement: the
// owner of each parameter of --data in DIR/param.part.
func (nf *nodeFlags) placedTable() (*route.Table, uint64, error) {
	if nf.data == "" {
		return nil, 0, usageError("--placement needs --data, the training data whose parameter ids param.part names")
	}
	if nf.numServers < 1 {
		return nil, 0, usageError("--placement needs --num-servers, the number of machines of the placement")
	}
	lopt, err := nf.df.options()
	if err != nil {
		return nil, 0, err
	}
	g, _, err := loadGraph(nf.data, lopt)
	if err != nil {
		return nil, 0, err
	}
	param, err := placement.LoadParamPart(filepath.Join(nf.place, placement.ParamPartFile), g, nf.numServers)
	if err != nil {
		return nil, 0, fmt.Errorf("--placement: %w", err)
	}
	table, err := route.FromPlacement(param, nf.numServers)
	if err != nil {
		return nil, 0, fmt.Errorf("--placement %s: %w", nf.place, err)
	}
	return table, uint64(len(param)), nil
}

// tuneLinks returns the TCP tuning of --link-bandwidth and
// --bandwidth-matrix, nil without them. Every TCP link of a node other
// than the scheduler's leads to another process, hence another machine
// (a machine's worker reaches its own server through memory), so the rate
// applies to each such link separately: over TCP it is a per-peer-link
// limit, not a network interface shared by the links. The matrix is
// indexed by rank, the placement's machine (the address book's
// proto.Peer.Machine counts registrations and is not). Links to the
// scheduler are not limited.
func (nf *nodeFlags) tuneLinks() (func(*tcp.Config), error) {
	if nf.linkRate == "" && nf.matrix == "" {
		return nil, nil
	}
	var link float64
	if nf.linkRate != "" {
		r, err := transport.ParseRate(nf.linkRate)
		if err != nil {
			return nil, usageError("--link-bandwidth: %v", err)
		}
		link = r
	}
	var b *transport.Bandwidth
	if nf.matrix != "" {
		fh, err := os.Open(nf.matrix)
		if err != nil {
			return nil, err
		}
		b, err = transport.ParseBandwidth(fh, nf.matrix)
		fh.Close()
		if err != nil {
			return nil, err
		}
		if k := max(nf.numServers, nf.numWorkers); b.K < k {
			return nil, usageError("--bandwidth-matrix %s is for %d machines, the cluster has %d", nf.matrix, b.K, k)
		}
	}
	return func(tc *tcp.Config) {
		_, self := proto.Identify(tc.ID)
		prev := tc.Rate
		tc.Rate = func(peer transport.NodeID) float64 {
			_, other := proto.Identify(peer)
			if peer == proto.SchedulerID || other < 0 || self < 0 {
				return 0
			}
			r := link
			if b != nil && self < b.K && other < b.K && self != other {
				r = transport.MinRate(r, b.Rate(self, other))
			}
			if prev != nil {
				r = transport.MinRate(r, prev(peer))
			}
			return r
		}
	}, nil
}

// deployment says where colo train runs its cluster: in this process
// (nil, or neither flag), as processes on loopback, or in network
// namespaces.
type deployment struct {
	processes, netns bool
	deadline         time.Duration
	// data is the training file and t, df the flags, passed on to the
	// processes; runTrain fills them.
	data string
	t    *trainFlags
	df   dataFlags
}

func (d *deployment) register(f *cmdFlags) {
	f.BoolVar(&d.processes, "processes", false, "run the scheduler and the K machines as processes of this binary on loopback; --link-bandwidth and --bandwidth-matrix then limit each TCP link to another machine separately")
	f.BoolVar(&d.netns, "netns", false, "run the scheduler and each machine as a process in its own network namespace, joined by veth links that tc shapes at --link-bandwidth (required); needs root and iproute2")
	f.DurationVar(&d.deadline, "deadline", 0, "--processes, --netns: stop the cluster after this long (0: no limit; failed or silent nodes end the job anyway)")
}

// remote reports whether the cluster runs as processes.
func (d *deployment) remote() bool { return d != nil && (d.processes || d.netns) }

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

// Heartbeat and timeout of a deployment's scheduler, as train.Run's: a
// killed process is noticed at once (its sockets close); the timeout
// bounds silent nodes (data messages take as long as their link needs).
const (
	procHeartbeat = 200 * time.Millisecond
	procTimeout   = 30 * time.Second
	procJoin      = 60 * time.Second
	// procGrace is how long the other processes have to end on their own
	// after one failed (they do, told by the scheduler) before they are
	// killed.
	procGrace = 2 * time.Second
)

// run trains app as train.Run does, on a cluster of processes of this
// binary: it writes the placement p to a temporary directory, starts the
// scheduler and the K machines, waits for all of them and assembles their
// results. The first process to fail is named in the error; the others
// are killed.
func (d *deployment) run(e *env, g *graph.Graph, app train.App, p *placement.Placement, name string, partitionSeconds float64, cost *placement.Cost, cfg train.Config) (*train.Result, error) {
	k := cfg.Machines
	if p.K != k {
		return nil, fmt.Errorf("train: the placement %s is for %d machines, the job has %d", name, p.K, k)
	}
	s := train.NewSchedule(app, cfg)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.deadline)
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
	if err := placement.WriteDir(pdir, g, p, map[string]any{"placement": name, "machines": k}); err != nil {
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
	if d.netns {
		netns.Sweep()
		nn, err := netns.New(netns.Config{Machines: k + 1, Rate: fmt.Sprintf("%.0fbit", 8*cfg.LinkBandwidth)})
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
	data := d.dataArgs()
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
	sp := newProc(0, "scheduler", append([]string{"node", "--role", "scheduler", "--scheduler", schedAddr,
		"--token", token, "--num-servers", strconv.Itoa(k), "--num-workers", strconv.Itoa(k),
		"--placement", pdir, "--data", d.data, "--width", strconv.Itoa(app.Width()),
		"--consistency", cfg.Clock.Mode.String(), "--tau", strconv.Itoa(cfg.Clock.Tau),
		"--heartbeat", procHeartbeat.String(), "--timeout", procTimeout.String(), "--join-timeout", procJoin.String()}, data...)...)
	addr, rd, err := startSchedulerCmd(sp.cmd, &sp.errOut)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return nil, fmt.Errorf("train: %w", err)
	}
	wg.Go(func() {
		io.Copy(io.Discard, rd)
		sp.err = sp.cmd.Wait()
		exits <- sp
	})
	for i := range k {
		args := append([]string{"node", "--role", "machine", "--job", "train", "--scheduler", addr,
			"--token", token, "--num-servers", strconv.Itoa(k), "--num-workers", strconv.Itoa(k),
			"--rank", strconv.Itoa(i), "--host", hosts[i+1], "--json",
			"--placement", pdir, "--data", d.data}, data...)
		result := filepath.Join(dir, fmt.Sprintf("machine-%d.json", i))
		args = append(append(args, d.trainArgs(cfg)...), "--result", result)
		pr := newProc(i+1, fmt.Sprintf("machine %d", i), args...)
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
		return nil, fmt.Errorf("%s on %d processes: %w: the cluster was stopped", name, k+1, context.Cause(ctx))
	}
	if len(failed) > 0 {
		return nil, procFailure(name, failed)
	}

	res := train.NewResult(app, name, partitionSeconds, cost, cfg)
	reports := make([]trainReport, k)
	var stats []node.Stats
	var lastStart int64
	for i, pr := range procs[1:] {
		b, err := os.ReadFile(pr.result)
		if err != nil {
			return nil, fmt.Errorf("train: %s: no result: %w", pr.name, err)
		}
		if err := json.Unmarshal(b, &reports[i]); err != nil {
			return nil, fmt.Errorf("train: %s: result %s: %w", pr.name, pr.result, err)
		}
		r := &reports[i]
		stats = append(stats, r.Stats)
		lastStart = max(lastStart, r.StartedUnixNano)
		res.InterValues += r.InterValues
	}
	res.SetWork(reports[0].Work)
	res.AddTraffic(stats)
	if lastStart > 0 {
		res.StartSeconds = float64(lastStart-t0.UnixNano()) / 1e9
	}
	res.TotalSeconds = partitionSeconds + wall
	if cost != nil && s.Batches == 1 {
		res.PredictedInterValues = cost.TSum * int64(app.Width()) * int64(res.Rounds)
	}
	return res, nil
}

// procFailure names the first process that failed, with the last lines
// of its standard error, then the others.
func procFailure(name string, failed []*trainProc) error {
	first := failed[0]
	msg := fmt.Sprintf("%s: %s failed: %v", name, first.name, first.err)
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

// dataArgs are the flags that load the data the same way in every
// process.
func (d *deployment) dataArgs() []string {
	a := []string{"--format=" + d.df.format, "--index-base", strconv.Itoa(d.df.indexBase),
		"--drop-self-loops=" + strconv.FormatBool(d.df.noSelf), "--hash-bits", strconv.Itoa(d.df.hashBits)}
	return a
}

// trainArgs are the flags of a machine's training job: everything that
// makes its train.Config and its App the same as this process's.
func (d *deployment) trainArgs(cfg train.Config) []string {
	t := d.t
	ff := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	a := []string{
		"--app", t.app, "--features", t.features,
		"--epsilon", ff(cfg.Epsilon), "--max-passes", strconv.Itoa(cfg.MaxPasses),
		"--batch", strconv.Itoa(cfg.Batch), "--seed", strconv.FormatUint(cfg.Seed, 10),
		"--updater", cfg.Rule.Name, "--lr", ff(cfg.Rule.LR), "--l1", ff(cfg.Rule.L1), "--l2", ff(cfg.Rule.L2),
		"--beta", ff(cfg.Rule.Beta),
		"--mf-rank", strconv.Itoa(t.mf.Rank), "--holdout", ff(t.mf.HoldOut),
	}
	if t.test != "" {
		a = append(a, "--test", t.test)
	}
	if !d.netns {
		if t.bandwidth != "" {
			a = append(a, "--link-bandwidth", t.bandwidth)
		}
		if t.matrix != "" {
			a = append(a, "--bandwidth-matrix", t.matrix)
		}
	}
	return a
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
