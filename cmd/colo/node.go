package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"colo/app/smoke"
	"colo/dashboard"
	"colo/internal/tempdir"
	"colo/launch"
	"colo/metrics"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/train"
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
	lr, l1, l2, beta                       float64
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
	f.Float64Var(&nf.l1, "l1", 0, "server: L1 regularisation")
	f.Float64Var(&nf.l2, "l2", -1, "server: L2 regularisation (-1: 0; with --job train the application's)")
	f.Float64Var(&nf.beta, "beta", 1, "server: FTRL's beta")
	f.DurationVar(&nf.heartbeat, "heartbeat", 100*time.Millisecond, "scheduler: heartbeat period")
	f.DurationVar(&nf.timeout, "timeout", 2*time.Second, "scheduler: a node silent this long is dead")
	f.DurationVar(&nf.joinTimeout, "join-timeout", 60*time.Second, "how long to wait for the cluster to form")
	f.BoolVar(&nf.recover, "recover", false, "server, worker, machine: replace a failed node of a running job, taking its --rank (-1: any failed one); the scheduler must wait for it (--recover-wait); --job train resumes from the job's checkpoint directory with the others")
	f.DurationVar(&nf.recoverWait, "recover-wait", 0, "scheduler: when a server, worker or machine fails, pause the job and wait this long for a replacement (colo node --recover) instead of ending the job (0: end it)")
	f.StringVar(&nf.job, "job", "smoke", "worker: the job to run: smoke (pushes checked for exact sums), train (machine: train a model on the placed data, see --data), parsa (machine: partition the data file of --job-file with Parsa on the parameter server, as colo partition --processes does) or none")
	f.IntVar(&nf.batch, "batch", 0, "worker: keys per push of the smoke job (0: 10000); --job train: samples per round over all machines (0: full-batch rounds)")
	f.IntVar(&nf.rounds, "rounds", 20, "worker: rounds of the smoke job")
	f.Uint64Var(&nf.seed, "seed", 1, "worker: seed of the smoke job, or of --job train's batches and initial values")
	f.StringVar(&nf.place, "placement", "", "scheduler: route the keys by DIR/param.part (a directory written by colo partition) instead of splitting --keys; --job train: the machine's samples are those DIR/data.part puts on its --rank")
	f.StringVar(&nf.data, "data", "", "scheduler with --placement, --job train: the training data file (colo train's DATA)")
	f.StringVar(&nf.result, "result", "", "--job train: write the machine's result (its worker's passes and evaluation, its node's counters) as JSON to this file")
	f.StringVar(&nf.linkRate, "link-bandwidth", "", "emulated rate of each TCP link to a node of another machine, such as 100mbit (empty: unlimited); over TCP it limits every peer link separately, not a NIC shared by them")
	f.StringVar(&nf.matrix, "bandwidth-matrix", "", "file of K lines of K machine-to-machine rates, indexed by rank (server r and worker r are machine r); limits each TCP link like --link-bandwidth")
	nf.train.registerNode(f)
	nf.df.register(f)
	nf.json = f.jsonOption("the node's summary")
	f.BoolVar(&nf.verbose, "v", false, "log link events")
}

func runNode(e *env, args []string) error {
	f := newFlags(e, "node", "colo node --role ROLE --scheduler HOST:PORT [flags]",
		"Runs one node of a parameter-server cluster: the scheduler, a server, a\n"+
			"worker, or a machine (a server and a worker in one process). Every node\n"+
			"needs the scheduler's address and the cluster token; the scheduler also\n"+
			"the number of servers and workers, the key space and the consistency\n"+
			"model, which it hands to the others. Workers run the built-in smoke job,\n"+
			"or, on machines with --job train, the training of colo train on the\n"+
			"samples a placement puts on their --rank (colo train --processes starts\n"+
			"such a cluster); with --placement DIR --data FILE the scheduler routes\n"+
			"the keys by DIR/param.part. A training job is read whole from --job-file\n"+
			"(a train.Job as JSON, as colo train --processes writes it), or from the\n"+
			"training flags, where --updater, --lr, --l2 and --batch default to colo\n"+
			"train's (adagrad, the application's rate and L2, full batches).\n\n"+
			"Nodes prove the token to each other without sending it, and their ids\n"+
			"with a key pair of their own whose public half the scheduler publishes,\n"+
			"so no process can claim another member's id. With --tls-cert, --tls-key and\n"+
			"--tls-ca every link is mutual TLS 1.3: a peer without a certificate of\n"+
			"that CA is refused (see docs/deploy.md and docs/ps.md, Security).\n\n"+
			"Every flag can also be set by an environment variable: COLO_ROLE,\n"+
			"COLO_SCHEDULER, COLO_NUM_SERVERS, COLO_NUM_WORKERS, COLO_TOKEN, COLO_HOST,\n"+
			"COLO_RANK, COLO_METRICS, … (the flag's name in upper case, '-' as '_');\n"+
			"a flag on the command line wins. What is still unset comes from ps-lite's\n"+
			"DMLC_* variables, or under mpirun or srun from the rank (0: the\n"+
			"scheduler); see docs/deploy.md.")
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
	var logf func(format string, args ...any) // nil: quiet
	if nf.verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(e.errOut, format+"\n", args...) }
	}
	if role == proto.RoleScheduler {
		// The scheduler writes no JSON: under mpirun or srun every rank
		// gets --json, and its address and end stay on standard output.
		f.unrouteJSON()
		return runScheduler(ctx, e, &nf, tlsConfig)
	}
	if err := checkOutputs(output{"--result", nf.result, false}); err != nil {
		return err
	}
	if nf.job != "smoke" && nf.job != "none" && nf.job != "train" && nf.job != "parsa" {
		return usageError("--job %q: smoke, train, parsa or none", nf.job)
	}
	var mj *machineJob
	var rule update.Rule
	var rates node.Rates
	if nf.job == "train" {
		if nf.rank < 0 && role != proto.RoleServer && role != proto.RoleEvaluator {
			return usageError("--job train needs --rank: the machine's rank is its machine in the placement")
		}
		job, err := nf.trainJob()
		switch {
		case role != proto.RoleMachine && role != proto.RoleEvaluator && (err != nil || job.Config.Colocated()):
			return usageError("--job train runs on --role machine, or on the servers and workers of a job with config.servers (--job-file), not %s", role)
		case err != nil:
			return err
		case role == proto.RoleMachine && !job.Config.Colocated():
			return usageError("--job train: the job runs %d servers apart from its workers: --role server or worker, not machine", job.Config.Servers)
		}
		if role != proto.RoleServer {
			if role == proto.RoleEvaluator {
				nf.rank = 0 // its placement is any machine's: it reads none
			}
			if mj, err = newMachineJob(&nf, job); err != nil {
				return err
			}
		}
		if rule, err = update.New(job.Config.Rule); err != nil {
			return usageError("%v", err)
		}
		rates = job.Config.Rates()
		if nf.recover && mj != nil {
			ck := &mj.job.Config.Checkpoint
			if ck.Dir == "" {
				return usageError("--recover --job train needs a job that writes checkpoints (config.checkpoint.dir): the replacement resumes from its last one")
			}
			ck.Resume = ck.Dir
		}
	} else {
		rc := update.DefaultConfig()
		rc.Name, rc.LR, rc.L1, rc.L2, rc.Beta = cmp.Or(nf.updater, "sum"), cmp.Or(nf.lr, 0.1), nf.l1, max(nf.l2, 0), nf.beta
		if rule, err = update.New(rc); err != nil {
			return usageError("%v", err)
		}
		if rates, err = node.ParseRates(nf.linkRate, nf.matrix, max(nf.numServers, nf.numWorkers)); err != nil {
			return usageError("--link-bandwidth, --bandwidth-matrix: %v", err)
		}
	}
	cfg := node.DefaultConfig()
	cfg.Role, cfg.Scheduler, cfg.Token, cfg.Rank = role, nf.scheduler, nf.token, nf.rank
	cfg.NumServers, cfg.NumWorkers, cfg.Host, cfg.Rule = nf.numServers, nf.numWorkers, nf.host, rule
	cfg.JoinTimeout, cfg.Logf, cfg.Recover = nf.joinTimeout, logf, nf.recover
	// Refused connections are logged whether or not -v: a stranger at
	// the door is worth a line.
	refused := func(format string, args ...any) { fmt.Fprintf(e.errOut, format+"\n", args...) }
	ports, err := nf.cl.Listen(nf.host, role)
	if err != nil {
		return usageError("%v", err)
	}
	defer ports.Close()
	cfg.Network = node.TCP{Host: nf.host, Token: nf.token, TLS: tlsConfig, Tune: ports.Tune(rates.Tune(nil)), Logf: refused}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	nd := launch.Node{Config: cfg, Metrics: nf.metrics, Registry: metrics.NewRegistry(), Log: e.errOut}
	if mj != nil {
		tr := metrics.NewTraining(nd.Registry)
		mj.job.Config.Progress, mj.job.Config.Checked = tr.Pass, tr.Check
	}
	var report *train.MachineReport
	var parsaResult func() error // writes --result of --job parsa
	switch nf.job {
	case "smoke":
		sj := smoke.Config{Keys: nf.keys, Batch: cmp.Or(nf.batch, 10000), Rounds: nf.rounds, Seed: nf.seed}
		if err := sj.Validate(); err != nil && role != proto.RoleServer {
			return usageError("%v", err)
		}
		nd.Job = launch.SmokeJob(sj)
	case "parsa":
		if nd.Job, parsaResult, err = parsaNodeJob(e, &nf, role); err != nil {
			return err
		}
	case "train":
		nd.Job = func(ctx context.Context, n *node.Node, _ *launch.NodeSummary) error {
			var err error
			if role == proto.RoleEvaluator {
				report, err = train.RunEvaluator(ctx, n, mj.job, mj.app, mj.p)
			} else {
				report, err = train.RunMachine(ctx, n, mj.job, mj.app, mj.p, mj.rank)
			}
			return err
		}
	}
	sum, jobErr := launch.RunNode(ctx, nd)
	if sum == nil {
		return jobErr
	}
	if parsaResult != nil && jobErr == nil {
		if err := parsaResult(); err != nil {
			return err
		}
	}
	if nf.job == "train" && role == proto.RoleServer { // its counters, for the traffic and the staleness
		report = &train.MachineReport{Rank: nf.rank, Stats: sum.Stats}
	}
	var trained *train.WorkerResult
	if report != nil {
		trained = &report.Work
		if jobErr == nil && nf.result != "" {
			report.StartedUnixNano = sum.StartedUnixNano
			err := writeOutput(e, nf.result, func(w io.Writer) error { return json.NewEncoder(w).Encode(report) })
			if err != nil {
				return err
			}
		}
	}
	sum.WriteText(e.out, trained) // standard error when the JSON is on standard output
	if nf.json.path == "" {
		return jobErr
	}
	if trained != nil {
		if sum.Train, err = json.Marshal(trained); err != nil {
			return err
		}
	}
	if err := writeJSONLine(e, nf.json.path, sum); err != nil {
		return err
	}
	return jobErr
}

// runScheduler runs the scheduler until the job ends.
func runScheduler(ctx context.Context, e *env, nf *nodeFlags, tlsConfig *tls.Config) error {
	mode, err := clock.ParseMode(nf.consistency)
	if err != nil {
		return usageError("--consistency: %v", err)
	}
	cfg := sched.DefaultConfig()
	cfg.NumServers, cfg.NumWorkers, cfg.NumEvaluators, cfg.Token = nf.numServers, nf.numWorkers, nf.numEvals, nf.token
	cfg.NumKeys, cfg.Width, cfg.Clock = nf.keys, nf.width, clock.Config{Mode: mode, Tau: nf.tau}
	cfg.Heartbeat, cfg.Timeout, cfg.StartTimeout, cfg.RecoverWait = nf.heartbeat, nf.timeout, nf.joinTimeout, nf.recoverWait
	if nf.job == "parsa" {
		if err := parsaScheduler(nf, &cfg); err != nil {
			return err
		}
	} else if nf.place != "" || nf.train.jobFile != "" {
		if err := nf.placeScheduler(&cfg); err != nil {
			return err
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
	err = launch.RunScheduler(ctx, launch.Scheduler{Config: cfg, Addr: nf.scheduler, Token: nf.token, TLS: tlsConfig, Insecure: nf.insecure, Metrics: nf.metrics, Watch: watch, Out: e.out, Log: e.errOut})
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
