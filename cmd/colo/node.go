package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"colo/app"
	"colo/app/smoke"
	torchkind "colo/clib/kind"
	"colo/dashboard"
	"colo/distparsa"
	"colo/gossip/job"
	"colo/internal/tempdir"
	"colo/launch"
	"colo/metrics"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/train"
	"colo/train/deploy"
	"colo/transport"
)

// nodeFlags are the flags of colo node, each also read from COLO_NAME
// (upper case, '-' as '_') when not on the command line.
type nodeFlags struct {
	role, scheduler, token, host           string
	metrics                                metrics.Flags
	dashboard                              string
	numServers, numWorkers, numEvals, rank int
	keys                                   uint64
	width                                  int
	consistency                            string
	tau                                    int
	updater                                string
	lr, l1, l2, beta, eps                  float64
	heartbeat, timeout, joinTimeout        time.Duration
	job                                    string
	batch, rounds                          int
	seed                                   uint64
	insecure                               bool
	recover                                bool
	recoverWait                            time.Duration
	json                                   *jsonFlag
	verbose                                bool
	// The placement and the training job (trainproc.go).
	place, data, result string
	linkRate, matrix    string
	train               trainFlags
	df                  dataFlags
	cl                  launch.ClusterFlags // --interface, --port, --port-range
	tls                 launch.TLSFlags     // --tls-cert, --tls-key, --tls-ca
}

func (nf *nodeFlags) register(f *cmdFlags) {
	f.StringVar(&nf.role, "role", "", "scheduler, server, worker, machine (a server and a worker) or evaluator (scores the model of --job train while the workers train)")
	f.StringVar(&nf.scheduler, "scheduler", "", "the scheduler's host:port; the scheduler listens there (port 0: any, printed)")
	f.IntVar(&nf.numServers, "num-servers", 0, "number of servers (machines count as one)")
	f.IntVar(&nf.numWorkers, "num-workers", 0, "number of workers (machines count as one)")
	f.IntVar(&nf.numEvals, "num-evaluators", 0, "scheduler: number of evaluators")
	f.StringVar(&nf.token, "token", "", "cluster token: nodes without it are refused (a scheduler without one refuses to start unless --insecure)")
	f.BoolVar(&nf.insecure, "insecure", false, "scheduler: run without --token, an open cluster that any process reaching its port can join or end")
	f.StringVar(&nf.host, "host", "", "address this node listens on and advertises (default: its address on the route to --scheduler)")
	nf.cl.Register(f.FlagSet)
	nf.tls.Register(f.FlagSet)
	f.IntVar(&nf.rank, "rank", -1, "ask for this server/worker rank (-1: any)")
	nf.metrics.Register(f.FlagSet)
	f.StringVar(&nf.dashboard, "dashboard", "", "scheduler: serve a live dashboard at http://ADDR/, such as :8080, of what the scheduler sees: its traffic with every node")
	f.Uint64Var(&nf.keys, "keys", 1<<20, "scheduler: the key space [0, keys) split evenly among servers (0: all of uint64), unless --placement; worker: the smoke job's keys")
	f.IntVar(&nf.width, "width", 1, "scheduler: values per key (0: per-key lengths); with --job train the application's width (lr: 1 or the number of classes, mf: --mf-rank)")
	f.StringVar(&nf.consistency, "consistency", "bsp", "scheduler: bsp, async or bounded")
	f.IntVar(&nf.tau, "tau", 0, "scheduler: the delay bound of --consistency bounded")
	f.StringVar(&nf.updater, "updater", "", "server: update rule: sum, sgd, momentum, adagrad, adam or ftrl (empty: sum; with --job train the application's)")
	f.Float64Var(&nf.lr, "lr", 0, "server: learning rate, FTRL's alpha (0: 0.1; with --job train the application's)")
	f.Float64Var(&nf.eps, "eps", 1e-8, "server: epsilon of adagrad and adam (PyTorch's Adagrad: 1e-10, its Adam: 1e-8)")
	f.Float64Var(&nf.l1, "l1", 0, "server: L1 regularisation")
	f.Float64Var(&nf.l2, "l2", -1, "server: L2 regularisation (-1: 0; with --job train the application's)")
	f.Float64Var(&nf.beta, "beta", 1, "server: FTRL's beta")
	f.DurationVar(&nf.heartbeat, "heartbeat", 100*time.Millisecond, "scheduler: heartbeat period")
	f.DurationVar(&nf.timeout, "timeout", 2*time.Second, "scheduler: a node silent this long is dead")
	f.DurationVar(&nf.joinTimeout, "join-timeout", 60*time.Second, "how long to wait for the cluster to form")
	f.BoolVar(&nf.recover, "recover", false, "server, worker, machine: replace a failed node of a running job, taking its --rank (-1: any failed one); the scheduler must wait for it (--recover-wait); --job train resumes from the job's checkpoint directory with the others")
	f.DurationVar(&nf.recoverWait, "recover-wait", 0, "scheduler: when a server, worker or machine fails, pause the job and wait this long for a replacement (colo node --recover) instead of ending the job (0: end it)")
	f.StringVar(&nf.job, "job", "smoke", "without --job-file, the job the flags describe: smoke (pushes checked for exact sums), train (machine: train a model on the placed data, see --data) or none; with a --job-file that is not an envelope, its kind: train or parsa")
	f.IntVar(&nf.batch, "batch", 0, "worker: keys per push of the smoke job (0: 10000); --job train: samples per round over all machines (0: full-batch rounds)")
	f.IntVar(&nf.rounds, "rounds", 20, "worker: rounds of the smoke job")
	f.Uint64Var(&nf.seed, "seed", 1, "worker: seed of the smoke job, or of --job train's batches and initial values")
	f.StringVar(&nf.place, "placement", "", "scheduler: route the keys by DIR/param.part (a directory written by colo partition) instead of splitting --keys; --job train: the machine's samples are those DIR/data.part puts on its --rank")
	f.StringVar(&nf.data, "data", "", "scheduler with --placement, --job train: the training data file (colo train's DATA)")
	f.StringVar(&nf.result, "result", "", "write the node's report (launch.Report: its summary and its kind's report, such as a training machine's passes and evaluation) as JSON to this file")
	f.StringVar(&nf.linkRate, "link-bandwidth", "", "emulated rate of this machine's network interface, in "+transport.RateUnits+"; empty: unlimited. What its nodes send to and receive from other machines shares it, each way")
	f.StringVar(&nf.matrix, "bandwidth-matrix", "", "file of K lines of K machine-to-machine rates, indexed by rank (server r and worker r are machine r); limits the path from each machine to each other")
	nf.train.registerNode(f)
	nf.df.register(f)
	nf.json = f.JSONOption("the node's summary")
	f.BoolVar(&nf.verbose, "v", false, "log link events")
}

func runNode(e *env, args []string) error {
	f := newFlags(e, "node", "colo node --role ROLE --scheduler HOST:PORT [--job-file FILE] [flags]",
		"Runs one node of a parameter-server cluster: the scheduler, a server, a\n"+
			"worker, or a machine (a server and a worker in one process). Every node\n"+
			"needs the scheduler's address and the cluster token. The job is read from\n"+
			"--job-file, an envelope {\"kind\": …, \"job\": …} as colo train --write-job,\n"+
			"colo train --processes and colo partition --processes write it: a training\n"+
			"job (kind train), a distributed partition (parsa), decentralised training\n"+
			"(gossip) or the smoke job (smoke); every process of the cluster reads the\n"+
			"same file and its kind says what each role runs, so the same job gives the\n"+
			"same result however the processes are started (docs/deploy.md). Without\n"+
			"--job-file the workers run the built-in smoke job of --keys, --batch and\n"+
			"--rounds (or, with --job train, the training job the flags describe), and\n"+
			"the scheduler takes its numbers of servers and workers, key space and\n"+
			"consistency model from its flags; with --placement DIR --data FILE it\n"+
			"routes the keys by DIR/param.part. Flags that describe a job are refused\n"+
			"with --job-file.\n\n"+
			"Nodes prove the token to each other without sending it, and their ids\n"+
			"with a key pair of their own whose public half the scheduler publishes,\n"+
			"so no process can claim another member's id. With --tls-cert, --tls-key and\n"+
			"--tls-ca every link is mutual TLS 1.3: a peer without a certificate of\n"+
			"that CA is refused (see docs/deploy.md and docs/ps.md, Security).\n\n"+
			"Every flag can also be set by an environment variable: COLO_ROLE,\n"+
			"COLO_SCHEDULER, COLO_NUM_SERVERS, COLO_NUM_WORKERS, COLO_TOKEN, COLO_HOST,\n"+
			"COLO_RANK, COLO_JOB_FILE, COLO_METRICS, … (the flag's name in upper case,\n"+
			"'-' as '_'); a flag on the command line wins. What is still unset comes\n"+
			"from ps-lite's DMLC_* variables (DMLC_ROLE, DMLC_TASK_ID, …), or under\n"+
			"mpirun or srun from the rank (0: the scheduler); see docs/deploy.md.")
	var nf nodeFlags
	nf.register(f)
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	if err := launch.FromEnv(f.FlagSet, os.Getenv); err != nil {
		return usageError("%v", err)
	}
	if err := nf.cl.Resolve(f.FlagSet, os.Getenv); err != nil { // DMLC_*, mpirun, srun
		return usageError("%v", err)
	}
	f.routeJSON() // COLO_JSON may have asked for it
	role, err := proto.ParseRole(nf.role)
	if err != nil {
		return usageError("--role: %v", err)
	}
	tlsConfig, err := nf.tls.Load()
	if err != nil {
		return usageError("%v", err)
	}
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	env, err := nf.envelope(f, role)
	if err != nil {
		return err
	}
	reg := metrics.NewRegistry()
	kinds := nodeKinds(reg)
	if role == proto.RoleScheduler {
		// The scheduler writes no JSON: under mpirun or srun every rank
		// gets --json, and its address and end stay on standard output.
		f.unrouteJSON()
		return runScheduler(ctx, e, &nf, tlsConfig, kinds, env)
	}
	if err := checkOutputs(output{"--result", nf.result, false}); err != nil {
		return err
	}
	kind, err := kinds.Lookup(env.Kind)
	if err != nil {
		return usageError("--job-file: %v", err)
	}
	at := launch.Position{Role: role, Rank: nf.rank, Recover: nf.recover, Servers: nf.numServers, Workers: nf.numWorkers, Host: nf.host, Token: nf.token}
	member, err := kind.Open(ctx, env.Job, at)
	if err != nil {
		return usageError("%v", launch.JobFileError(nf.train.jobFile, err))
	}
	var logf func(format string, args ...any) // nil: quiet
	if nf.verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(e.errOut, format+"\n", args...) }
	}
	cfg := node.DefaultConfig()
	cfg.Role, cfg.Scheduler, cfg.Token, cfg.Rank = role, nf.scheduler, nf.token, nf.rank
	cfg.NumServers, cfg.NumWorkers, cfg.Host = nf.numServers, nf.numWorkers, nf.host
	cfg.JoinTimeout, cfg.Logf, cfg.Recover, cfg.Standby = nf.joinTimeout, logf, nf.recover, nf.cl.Standby.Standby
	if member.Rule != nil {
		cfg.Rule = member.Rule
	}
	// Refused connections are logged whether or not -v: a stranger at
	// the door is worth a line.
	refused := func(format string, args ...any) { fmt.Fprintf(e.errOut, format+"\n", args...) }
	ports, err := nf.cl.Listen(nf.host, role)
	if err != nil {
		return usageError("%v", err)
	}
	defer ports.Close()
	cfg.Network = node.TCP{Host: nf.host, Token: nf.token, TLS: tlsConfig, Tune: ports.Tune(member.Rates.Tune(nil)), Logf: refused}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	nd := launch.Node{Config: cfg, Member: member}
	if nf.metrics.Enabled() {
		// The Go runtime's and the process's metrics from the start, the
		// node's counters once it has joined, the job's as it trains.
		nd.Observe = func(stats func() []node.Stats) (func(context.Context) error, error) {
			reg.MustRegister(metrics.NewNodesCollector(stats))
			return nf.metrics.Start(reg, e.errOut)
		}
	}
	sum, report, jobErr := launch.RunNode(ctx, nd)
	if sum == nil {
		return jobErr
	}
	if nf.result != "" {
		rep, err := launch.NewReport(env.Kind, nf.rank, sum, report)
		if err != nil {
			return err
		}
		if err := writeOutput(e, nf.result, func(w io.Writer) error { return json.NewEncoder(w).Encode(rep) }); err != nil {
			return err
		}
	}
	sum.WriteText(e.out) // standard error when the JSON is on standard output
	if nf.json.Path != "" {
		if err := writeJSONLine(e, nf.json.Path, sum); err != nil {
			return err
		}
	}
	return jobErr
}

// nodeKinds returns the kinds colo node runs; the training kind feeds
// its passes to reg's metrics.Training (nil: none).
func nodeKinds(reg *prometheus.Registry) launch.Kinds {
	tk := deploy.Kind{Place: app.Placed, Route: app.Route}
	if reg != nil {
		tk.Observe = func(c *train.Config) {
			tr := metrics.NewTraining(reg)
			c.Progress, c.Checked = tr.Pass, tr.Check
		}
	}
	return launch.Kinds{smoke.Kind{}, tk, distparsa.Kind{}, job.Kind{}, torchkind.Kind{}}
}

// nodeOnly are the flags of colo node that say where and how the node
// runs, not what job: the only ones that go with --job-file.
var nodeOnly = map[string]bool{
	"role": true, "scheduler": true, "num-servers": true, "num-workers": true, "num-evaluators": true,
	"token": true, "insecure": true, "host": true, "interface": true, "port": true, "port-range": true,
	"tls-cert": true, "tls-key": true, "tls-ca": true, "rank": true, "metrics": true, "metrics-file": true,
	"linger": true, "dashboard": true, "heartbeat": true, "timeout": true, "join-timeout": true,
	"recover": true, "recover-wait": true, "standby": true, "takeover": true, "scheduler-identity": true, "job": true, "job-file": true, "result": true, "json": true, "v": true,
}

// envelope returns the node's job: --job-file's (an envelope, or a bare
// job of --job's kind), or the one the flags describe.
func (nf *nodeFlags) envelope(f *cmdFlags, role proto.Role) (launch.Envelope, error) {
	jobSet := false
	var stray []string
	f.Visit(func(fl *flag.Flag) {
		jobSet = jobSet || fl.Name == "job"
		if !nodeOnly[fl.Name] {
			stray = append(stray, "--"+fl.Name)
		}
	})
	path := nf.train.jobFile
	if path == "" {
		switch nf.job {
		case "smoke", "none":
			j := smoke.DefaultJob()
			j.Keys, j.Batch, j.Rounds, j.Seed, j.Idle = nf.keys, cmp.Or(nf.batch, j.Batch), nf.rounds, nf.seed, nf.job == "none"
			j.Consistency, j.Tau, j.LinkBandwidth, j.BandwidthMatrix = nf.consistency, nf.tau, nf.linkRate, nf.matrix
			j.Rule.Name, j.Rule.LR, j.Rule.L1, j.Rule.L2, j.Rule.Beta, j.Rule.Eps = cmp.Or(nf.updater, "sum"), cmp.Or(nf.lr, 0.1), nf.l1, max(nf.l2, 0), nf.beta, nf.eps
			return launch.NewEnvelope(smoke.Kind{}.Name(), j)
		case "train":
			if role == proto.RoleScheduler {
				return launch.Envelope{}, nil // routed by its flags (placeScheduler)
			}
			if role != proto.RoleMachine && role != proto.RoleEvaluator {
				return launch.Envelope{}, usageError("--job train without --job-file runs on --role machine; servers apart from the workers need the job file (colo train --write-job)")
			}
			if nf.rank < 0 && role != proto.RoleEvaluator {
				return launch.Envelope{}, usageError("--job train needs --rank: the machine's rank is its machine in the placement")
			}
			j, err := nf.trainJob()
			if err != nil {
				return launch.Envelope{}, err
			}
			return launch.NewEnvelope(deploy.Name, deploy.Job{Job: j})
		case "parsa":
			if role != proto.RoleScheduler && role != proto.RoleMachine {
				return launch.Envelope{}, usageError("--job parsa runs on --role machine (a server and a worker), not %s", role)
			}
			return launch.Envelope{}, usageError("--job parsa needs --job-file: the partition job (as colo partition --write-job writes it)")
		}
		return launch.Envelope{}, usageError("--job %q: smoke, train, parsa or none", nf.job)
	}
	if len(stray) > 0 {
		return launch.Envelope{}, usageError("%s: the job is --job-file's (%s); flags that describe a job go only without it", strings.Join(stray, ", "), path)
	}
	b, err := launch.ReadJobFile(path)
	if err != nil {
		return launch.Envelope{}, usageError("--job-file: %v", err)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) == nil && probe["kind"] == nil && probe["job"] == nil {
		// A bare job, as colo partition --write-job and older colo train
		// --processes wrote them: --job names its kind, a training job
		// when it does not.
		kind := deploy.Name
		if jobSet {
			kind = nf.job
		}
		if kind != deploy.Name && kind != distparsa.KindName {
			return launch.Envelope{}, usageError("--job-file %s is not an envelope {\"kind\": …, \"job\": …}: --job names its kind, train or parsa, not %s", path, kind)
		}
		return launch.Envelope{Kind: kind, Job: b}, nil
	}
	env, err := launch.ReadEnvelope(bytes.NewReader(b), path)
	if err != nil {
		return env, usageError("--job-file: %v", err)
	}
	if jobSet && nf.job != env.Kind && nf.job != "smoke" {
		return env, usageError("--job %s: the job of %s is of kind %s", nf.job, path, env.Kind)
	}
	return env, nil
}

// runScheduler runs the scheduler until the job ends: configured by the
// kind of its job, or by its flags when it has no job file.
func runScheduler(ctx context.Context, e *env, nf *nodeFlags, tlsConfig *tls.Config, kinds launch.Kinds, env launch.Envelope) error {
	mode, err := clock.ParseMode(nf.consistency)
	if err != nil {
		return usageError("--consistency: %v", err)
	}
	cfg := sched.DefaultConfig()
	cfg.NumServers, cfg.NumWorkers, cfg.NumEvaluators, cfg.Token = nf.numServers, nf.numWorkers, nf.numEvals, nf.token
	cfg.NumKeys, cfg.Width, cfg.Clock = nf.keys, nf.width, clock.Config{Mode: mode, Tau: nf.tau}
	cfg.Heartbeat, cfg.Timeout, cfg.StartTimeout, cfg.RecoverWait = nf.heartbeat, nf.timeout, nf.joinTimeout, nf.recoverWait
	switch {
	case nf.train.jobFile == "" && nf.place != "":
		if err := nf.placeScheduler(&cfg); err != nil {
			return err
		}
	case env.Kind == "": // --job train: the flags' routing
	default:
		kind, err := kinds.Lookup(env.Kind)
		if err != nil {
			return usageError("--job-file: %v", err)
		}
		if err := kind.Scheduler(env.Job, &cfg); err != nil {
			return usageError("%v", launch.JobFileError(nf.train.jobFile, err))
		}
		if nf.train.jobFile == "" {
			// The smoke job of the flags: the scheduler's say only its
			// key space, the workers' the rest. No file to agree on.
			cfg.JobDigest, cfg.JobFields = "", nil
		}
		if nf.numServers != 0 && nf.numServers != cfg.NumServers || nf.numWorkers != 0 && nf.numWorkers != cfg.NumWorkers {
			return usageError("--num-servers %d, --num-workers %d: the job runs %d servers and %d workers", nf.numServers, nf.numWorkers, cfg.NumServers, cfg.NumWorkers)
		}
	}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	dash, err := dashboard.Start(nf.dashboard, dashboard.DefaultConfig(), e.errOut)
	if err != nil {
		return usageError("%v", err)
	}
	dash.Status(fmt.Sprintf("scheduling %d servers and %d workers", cfg.NumServers, cfg.NumWorkers))
	watch := func(stats func() transport.Stats) { dash.WatchEndpoint(proto.SchedulerID, stats) }
	sc := launch.Scheduler{Config: cfg, Addr: nf.scheduler, Token: nf.token, TLS: tlsConfig, Insecure: nf.insecure, Watch: watch, Out: e.out, Log: e.errOut, Standby: nf.cl.Standby}
	if nf.metrics.Enabled() {
		sc.Observe = func(stats func() transport.Stats) (func(context.Context) error, error) {
			reg := metrics.NewRegistry()
			reg.MustRegister(metrics.NewEndpointCollector("scheduler", stats))
			return nf.metrics.Start(reg, e.errOut)
		}
	}
	err = launch.RunScheduler(ctx, sc)
	if err != nil {
		dash.Status("failed: " + err.Error())
	} else {
		dash.Status("finished")
	}
	dash.Close()
	if errors.Is(err, launch.ErrNoToken) {
		return usageError("%v", err)
	}
	return err
}
