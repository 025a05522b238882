package kind

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"colo/clib"
	"colo/launch"
	"colo/transport"
)

// Run is colo run: a cluster whose workers are copies of a program linked
// with colo's client (Program, such as python3 train.py), as torchrun
// starts copies of a script. It starts a scheduler and Machines machines
// (each program hosts a server beside its worker), or Servers servers
// apart from Machines workers, through launch.Cluster: on loopback, or
// with Netns each host in a network namespace of its own whose link tc
// shapes at the job's link bandwidth.
//
// Every worker gets the environment colo.init() reads (launch.WorkerEnv)
// and torchrun's (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT: worker 0's address and a port on it), so that
// a script that uses torch.distributed runs under colo run as under
// torchrun. Each worker's output is copied to Out line by line, prefixed
// "[worker r] ".
//
//	r := kind.DefaultRun()
//	r.Machines, r.Program = 4, []string{"python3", "train.py"}
//	res, err := r.Execute(ctx)
type Run struct {
	// Job is the job every process reads: consistency, the servers'
	// rule, the emulated links. Execute fills its shape and its route.
	Job clib.Job
	// Machines is the number of workers, K: machines, or workers apart
	// from Servers servers.
	Machines, Servers int
	// Placement is a directory of colo partition's whose param.part
	// routes the placed parameters; "" for none.
	Placement string
	// Netns runs the scheduler and each machine (or server, or worker)
	// in a network namespace of its own, joined by veth links that tc
	// shapes at Job.LinkBandwidth, which must then be a rate above 0
	// (Validate refuses none, 0 and unlimited); the processes then
	// emulate nothing themselves. It needs root and iproute2.
	Netns bool
	// Token is the cluster token ("" for a random one); Deadline stops
	// the job after it (0: none).
	Token    string
	Deadline time.Duration
	// Heartbeat is the scheduler's heartbeat period and Timeout how long
	// a silent node may stay silent before it is declared failed.
	Heartbeat, Timeout time.Duration
	// JoinTimeout is how long the cluster may take to form: the
	// scheduler waits this long for every worker's colo.init (each
	// PROGRAM imports torch first) and every server, and each of them
	// this long for the job to start.
	JoinTimeout time.Duration
	// Dashboard, Metrics, MetricsFile and Linger are the scheduler's
	// colo node flags of the same names: a live dashboard of its traffic
	// with every node, Prometheus metrics served or written at the end.
	Dashboard, Metrics, MetricsFile string
	Linger                          time.Duration
	// Program is the command each worker runs.
	Program []string
	// Bin is the colo binary of the scheduler and servers ("" for this
	// executable).
	Bin string
	// Out receives the workers' output (nil: discarded).
	Out io.Writer
	// Getenv reads the variables passed on to the workers (COLO_LIBRARY,
	// COLO_DATA); nil for os.Getenv.
	Getenv func(string) string
}

// MasterPort is the port of torchrun's MASTER_PORT on worker 0's host
// under Netns (each host has its own ports); on loopback a free port is
// chosen.
const MasterPort = 29500

// DefaultRun returns a BSP job whose servers add what they are pushed,
// with PyTorch's epsilon for Adagrad.
func DefaultRun() Run {
	r := Run{Job: clib.DefaultJob(), Heartbeat: 200 * time.Millisecond, Timeout: 30 * time.Second, JoinTimeout: 60 * time.Second}
	r.Job.Rule.Eps = 1e-10
	return r
}

// Register adds colo run's flags to fs, bound to r's fields.
func (r *Run) Register(fs *flag.FlagSet) {
	fs.IntVar(&r.Machines, "machines", r.Machines, fmt.Sprintf("number of copies of PROGRAM (workers), K; with --servers at most %d processes in all, what one host runs (launch.MaxProcesses)", launch.MaxProcesses))
	fs.IntVar(&r.Servers, "servers", r.Servers, "run this many servers apart from the workers (0: each PROGRAM hosts one)")
	fs.IntVar(&r.Job.Replicas, "replicas", r.Job.Replicas, "with --servers: keep each server's keys on this many other servers; a killed server's backup serves them and the job goes on (0: none)")
	fs.StringVar(&r.Placement, "placement", r.Placement, "route the placement's parameters (DIR/param.part, colo partition's) to the servers it chose: a table declared placed=True keys row r as parameter r")
	fs.StringVar(&r.Job.Consistency, "consistency", r.Job.Consistency, "bsp, async or bounded")
	fs.IntVar(&r.Job.Tau, "tau", r.Job.Tau, "delay bound of --consistency bounded")
	rc := &r.Job.Rule
	fs.StringVar(&rc.Name, "rule", rc.Name, "the servers' update rule: sgd, momentum, adagrad, adam, or sum (w += g: the servers add what they are pushed, for colo.kv's accumulators; colo.torch's layers, which push gradients, refuse it)")
	fs.Float64Var(&rc.LR, "lr", rc.LR, "learning rate of --rule")
	fs.Float64Var(&rc.Eps, "eps", rc.Eps, "epsilon of adagrad and adam (PyTorch's Adagrad: 1e-10, Adam: 1e-8)")
	fs.Float64Var(&rc.Momentum, "momentum", rc.Momentum, "momentum of --rule momentum")
	fs.Float64Var(&rc.Beta1, "beta1", rc.Beta1, "Adam's beta1")
	fs.Float64Var(&rc.Beta2, "beta2", rc.Beta2, "Adam's beta2")
	fs.StringVar(&r.Job.LinkBandwidth, "link-bandwidth", r.Job.LinkBandwidth, "emulate each machine's network interface at this rate, in "+transport.RateUnits+"; every machine sends and receives at it, shared by its links to the others (with --netns, the rate tc gives each host's link: required, and above 0)")
	fs.StringVar(&r.Job.BandwidthMatrix, "bandwidth-matrix", r.Job.BandwidthMatrix, "emulate the rates of this matrix file on the paths between machines")
	fs.BoolVar(&r.Netns, "netns", r.Netns, "run the scheduler and each machine in a network namespace of its own, joined by veth links that tc shapes at --link-bandwidth (required, above 0: 0 and unlimited are refused); needs root and iproute2")
	fs.StringVar(&r.Token, "token", r.Token, "cluster token (random when empty)")
	fs.DurationVar(&r.Deadline, "deadline", r.Deadline, "stop the job after this long (0: no bound)")
	fs.StringVar(&r.Dashboard, "dashboard", r.Dashboard, "serve the scheduler's live dashboard at http://ADDR/, such as :8080: its traffic with every node")
	fs.StringVar(&r.Metrics, "metrics", r.Metrics, "serve the scheduler's Prometheus metrics at http://ADDR/metrics while the job runs, such as :9100")
	fs.StringVar(&r.MetricsFile, "metrics-file", r.MetricsFile, "write the scheduler's final metrics to this file (Prometheus text format) when the job ends")
	fs.DurationVar(&r.Linger, "linger", r.Linger, "with --metrics or --dashboard: keep serving the final values this long after the job ends")
	fs.DurationVar(&r.Heartbeat, "heartbeat", r.Heartbeat, "the scheduler's heartbeat period")
	fs.DurationVar(&r.Timeout, "timeout", r.Timeout, "a node silent this long has failed (a loaded machine starves the workers' processes for seconds)")
	fs.DurationVar(&r.JoinTimeout, "join-timeout", r.JoinTimeout, "how long the cluster may take to form: every PROGRAM's colo.init (after its imports) and every server must join within it (a loaded machine needs more)")
}

// Validate checks r; errors name the flags of Register. The workers and
// the servers apart are at most launch.MaxProcesses together: each is a
// process of this host.
func (r *Run) Validate() error {
	switch {
	case len(r.Program) == 0:
		return errors.New("no PROGRAM: colo run [flags] -- PROGRAM [ARGS]")
	case r.Machines < 1:
		return fmt.Errorf("--machines %d: want the number of copies of %s, at least 1", r.Machines, r.Program[0])
	case r.Servers < 0:
		return fmt.Errorf("--servers %d: want 0 or more", r.Servers)
	case r.Heartbeat <= 0 || r.Timeout <= r.Heartbeat:
		return fmt.Errorf("--heartbeat %v and --timeout %v: want a positive period and a longer timeout", r.Heartbeat, r.Timeout)
	case r.JoinTimeout < r.Heartbeat:
		return fmt.Errorf("--join-timeout %v: want at least one --heartbeat (%v)", r.JoinTimeout, r.Heartbeat)
	case r.Netns && r.Job.BandwidthMatrix != "":
		return errors.New("--netns shapes every host's link at one rate: use --link-bandwidth, not --bandwidth-matrix")
	case r.Netns && (r.Dashboard != "" || r.Metrics != ""):
		return errors.New("--dashboard and --metrics serve from the scheduler, which --netns puts in a namespace of its own that this host does not reach: use --metrics-file")
	case r.Netns && r.Job.LinkBandwidth == "":
		return errors.New("--netns needs --link-bandwidth, the rate tc gives each host's link")
	case r.Netns && noLimit(r.Job.LinkBandwidth):
		return fmt.Errorf("--link-bandwidth %s: --netns needs a rate above 0, the rate tc gives each host's link (%s is no limit, which tc does not shape)", r.Job.LinkBandwidth, r.Job.LinkBandwidth)
	}
	what := fmt.Sprintf("--machines %d", r.Machines)
	if r.Servers > 0 {
		what += fmt.Sprintf(" and --servers %d", r.Servers)
	}
	if err := launch.CheckProcesses(what, r.Machines, r.Servers); err != nil {
		return err
	}
	j, err := r.job()
	if err != nil {
		return err
	}
	if _, err := j.Rates(); err != nil {
		return fmt.Errorf("--link-bandwidth, --bandwidth-matrix: %v", err)
	}
	return nil
}

// noLimit reports whether rate is written as no limit (0, unlimited:
// transport.ParseRate's 0); a rate that does not parse is not, and is
// refused as such.
func noLimit(rate string) bool {
	v, err := transport.ParseRate(rate)
	return err == nil && v == 0
}

// job returns the job of r: its shape and route filled in.
func (r *Run) job() (clib.Job, error) {
	j := r.Job
	j.Machines, j.Servers, j.Workers = 0, 0, 0
	if r.Servers > 0 {
		j.Servers, j.Workers = r.Servers, r.Machines
	} else {
		j.Machines = r.Machines
	}
	if r.Placement != "" {
		var err error
		if j.Route, err = clib.PlacedRoute(r.Placement, max(r.Servers, r.Machines)); err != nil {
			return j, fmt.Errorf("--placement: %v", err)
		}
	}
	if err := j.Validate(); err != nil {
		return j, fmt.Errorf("%v (--consistency, --tau, --rule, …)", err)
	}
	return j, nil
}

// RunResult is what a run of colo run measured.
type RunResult struct {
	// Workers is the number of workers; Seconds the run's wall time,
	// from the start of the scheduler.
	Workers int
	Seconds float64
	// Inter and Inner are the bytes the nodes sent between machines and
	// within them (the scheduler's included), from the members' reports.
	Inter, Inner uint64
	// Shaping describes the qdisc of every host's link under Netns, and
	// Wire the bytes each host sent on it (the scheduler's host first):
	// every packet of every program, headers included.
	Shaping string
	Wire    []uint64
	// NoReport names the members that wrote no report, and why.
	NoReport []string
}

// String is the summary colo run prints.
func (res *RunResult) String() string {
	s := fmt.Sprintf("%d workers finished in %.1f s; %.1f MB sent between machines (the scheduler's included), %.1f MB within them",
		res.Workers, res.Seconds, float64(res.Inter)/1e6, float64(res.Inner)/1e6)
	if res.Shaping != "" {
		var wire uint64
		for _, b := range res.Wire {
			wire += b
		}
		s += fmt.Sprintf("; %.1f MB on the namespaces' links (%s)", float64(wire)/1e6, res.Shaping)
	}
	return s
}

// Execute runs the job until its workers end, and removes what it made.
func (r *Run) Execute(ctx context.Context) (*RunResult, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	job, err := r.job()
	if err != nil {
		return nil, err
	}
	survive, backedUp := job.Survivor()
	c := &launch.Cluster{Token: r.Token, Bin: r.Bin, Heartbeat: r.Heartbeat, Timeout: r.Timeout, JoinTimeout: r.JoinTimeout, Flags: r.schedulerFlags, Survive: survive, BackedUp: backedUp}
	if r.Servers > 0 {
		c.Servers, c.Workers = r.Servers, r.Machines
	} else {
		c.Machines = r.Machines
	}
	var st launch.Starter = launch.Loopback{}
	master, local := "127.0.0.1", r.Machines
	port := 0
	if r.Netns {
		if err := launch.CheckNetns(); err != nil {
			return nil, fmt.Errorf("--netns: %w", err)
		}
		rate, err := job.Rates()
		if err != nil {
			return nil, err
		}
		ns, err := launch.NewNetns(c.Hosts(), fmt.Sprintf("%.0fbit", 8*rate.Link))
		if err != nil {
			return nil, fmt.Errorf("--netns: %w", err)
		}
		defer ns.Close()
		st = ns
		// tc shapes the links: the processes limit nothing themselves.
		job.LinkBandwidth = ""
		master, local, port = ns.Addr(firstWorkerHost(c)), 1, MasterPort
	} else if port, err = freePort(); err != nil {
		return nil, err
	}
	c.Starter = st
	if c.Envelope, err = launch.NewEnvelope(clib.JobKind, job); err != nil {
		return nil, err
	}
	// Each worker's output goes to Out line by line, prefixed with its
	// rank; Python's own, unbuffered, as it comes.
	out := r.Out
	if out == nil {
		out = io.Discard
	}
	var mu sync.Mutex
	lines := make([]*prefixed, r.Machines)
	for rank := range lines {
		lines[rank] = &prefixed{mu: &mu, w: out, prefix: fmt.Sprintf("[worker %d] ", rank)}
	}
	defer func() {
		for _, l := range lines {
			l.flush()
		}
	}()
	script := `RANK=$COLO_RANK; LOCAL_RANK=$((COLO_RANK % ` + strconv.Itoa(local) + `)); export RANK LOCAL_RANK; exec "$0" "$@"`
	c.Worker = &launch.Command{Path: "/bin/sh", Args: append([]string{"-c", script}, r.Program...),
		Output: func(rank int) io.Writer {
			// A replacement starts on a line of its own.
			lines[rank].flush()
			return lines[rank]
		}}
	c.Worker.Env = []string{"WORLD_SIZE=" + strconv.Itoa(r.Machines), "LOCAL_WORLD_SIZE=" + strconv.Itoa(local),
		"MASTER_ADDR=" + master, "MASTER_PORT=" + strconv.Itoa(port), "PYTHONUNBUFFERED=1"}
	// The children lose COLO_* variables (they are colo node's flags):
	// keep the ones of the client library and the examples.
	getenv := r.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, k := range []string{"COLO_LIBRARY", "COLO_DATA"} {
		if v := getenv(k); v != "" {
			c.Worker.Env = append(c.Worker.Env, k+"="+v)
		}
	}
	if r.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Deadline)
		defer cancel()
	}
	t0 := time.Now()
	o, err := c.Run(ctx)
	if f := (*launch.Failure)(nil); errors.As(err, &f) && len(f.Early) > 0 {
		return nil, fmt.Errorf("%w: PROGRAM joins the job with colo.init() (or colo's C library's colo_open)", err)
	} else if err != nil {
		return nil, err
	}
	res := &RunResult{Workers: r.Machines, Seconds: time.Since(t0).Seconds()}
	if ns, ok := st.(*launch.Netns); ok {
		res.Shaping = ns.Net().Shaping()
		for i := range c.Hosts() {
			b, err := ns.Net().TxBytes(i)
			if err != nil {
				return nil, err
			}
			res.Wire = append(res.Wire, b)
		}
	}
	for _, m := range o.Members {
		if m.Report == nil {
			res.NoReport = append(res.NoReport, fmt.Sprintf("%s wrote no report: %v", m.Name, m.ReportErr))
			continue
		}
		res.Inner += m.Report.Node.Stats.Inner.BytesSent
		res.Inter += m.Report.Node.Stats.Inter.BytesSent
	}
	return res, nil
}

// schedulerFlags returns the extra colo node flags of the process name:
// the scheduler's dashboard and metrics.
func (r *Run) schedulerFlags(name string) []string {
	if name != "scheduler" {
		return nil
	}
	var fl []string
	for _, f := range []struct{ name, v string }{{"dashboard", r.Dashboard}, {"metrics", r.Metrics}, {"metrics-file", r.MetricsFile}} {
		if f.v != "" {
			fl = append(fl, "--"+f.name, f.v)
		}
	}
	if r.Linger > 0 {
		fl = append(fl, "--linger", r.Linger.String())
	}
	return fl
}

// prefixed writes the lines written to it to w, each after prefix,
// holding mu while it writes (the writers of one w share it).
type prefixed struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	rest   []byte
}

// maxLine bounds what prefixed holds of a line without its end: longer
// runs are written out as lines of that length.
const maxLine = 64 << 10

// Write writes each line of b that ends (with '\n', or '\r' as progress
// bars end theirs, which it keeps) after the prefix, and holds the rest,
// at most maxLine bytes, for the next write.
func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rest = append(p.rest, b...)
	for {
		i := bytes.IndexAny(p.rest, "\n\r")
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s%c", p.prefix, p.rest[:i], p.rest[i])
		p.rest = p.rest[i+1:]
	}
	for len(p.rest) >= maxLine {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.rest[:maxLine])
		p.rest = p.rest[maxLine:]
	}
	p.rest = append(p.rest[:0:0], p.rest...) // not the whole history's array
	return len(b), nil
}

// flush writes a last line without its newline.
func (p *prefixed) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rest) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.rest)
		p.rest = nil
	}
}

// firstWorkerHost is the host of worker 0 in c (launch.Cluster.Hosts).
func firstWorkerHost(c *launch.Cluster) int {
	if c.Servers > 0 {
		return 1 + c.Servers
	}
	return 1
}

// freePort returns a port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("a port for MASTER_PORT: %w", err)
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return strconv.Atoi(strings.TrimSpace(p))
}
