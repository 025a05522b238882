package deploy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"colo/checkpoint"
	"colo/graph"
	"colo/internal/tempdir"
	"colo/launch"
	"colo/placement"
	"colo/ps/node"
	"colo/ps/replica"
	"colo/train"
	"colo/transport"
)

// Processes deploys training jobs (train.Deployer) as processes of the
// colo binary: a scheduler and the job's machines, on loopback or each in
// a network namespace of its own. It writes the placement (with the ids
// of Graph, the training graph the machines load again; without one each
// process places the job itself) to a temporary directory, and runs the
// job (a Job, with its routing table) as a launch.Cluster: K machines, or
// K workers and Config.Servers servers apart, and the evaluator when the
// deployment has one. It assembles their reports (train.MachineReport);
// servers apart report their counters at the end of the job, the
// evaluation's pull included.
//
//	res, err := train.Run(ctx, job, a, p, &deploy.Processes{Graph: g})
type Processes struct {
	// Bin is the colo binary; "" is this executable.
	Bin string
	// Graph is the training graph of a sparse application, whose ids the
	// part files name. Nil for an application placed without one (the
	// dense models' sharding schemes): an application that is a
	// train.PlacementWriter writes its placement for the processes, any
	// other is placed again by every process, the same for the same seed.
	Graph *graph.Graph
	// Cache, when set, writes the job's data as loaded to a new directory,
	// with each machine's share under placement p where the application
	// trains on shares, and says whether it did (app.Opened.WriteCache):
	// every process then reads it (train.Data.Cache) instead of parsing
	// the job's files, and a replacement resumes reading only its share
	// (train.Data.Share).
	Cache func(dir string, p *placement.Placement) (bool, error)
	// Netns runs the scheduler and each machine in a network namespace of
	// its own, joined by veth links that tc shapes at the job's
	// LinkBandwidth (required; a bandwidth matrix is refused); it needs
	// root and iproute2 (CheckNetns). Otherwise the processes run on
	// loopback and each machine emulates its network interface (the
	// job's link rate each way) and its paths to the others (the
	// matrix's) itself, over TCP (node.Rates).
	Netns bool
	// TLS, when set, runs every link of the cluster over mutual TLS with
	// these files, which every process uses (see TLSFlags).
	TLS launch.TLSFlags
	// Deadline stops the cluster after this long; 0 is no limit (failed
	// or silent nodes end the job anyway).
	Deadline time.Duration
	// Restarts is how many times the job recovers from a failed process
	// (see Replace); without Replace, or when a replacement cannot work,
	// the job is started again, whole, from its last complete checkpoint
	// (the job's Config.Checkpoint.Dir, resumed as
	// train.Checkpoint.Resume does; from the start when there is none
	// yet), every process of the failed run stopped first. Under BSP the
	// recovered job ends with the same model as a run without failure. 0
	// ends the job at its first failure.
	Restarts int
	// Replace makes the restarts replace only the failed process while
	// the others keep running: a server, worker or machine process that
	// dies of a signal while the job trains is started again at once with
	// --recover, takes its rank in the paused job, and every worker rolls
	// back to the last complete checkpoint (see docs/ps.md). The
	// scheduler runs with a standby (launch.Cluster.Standby): when it
	// dies, a scheduler started again at its address takes the job over
	// from the nodes' reports, and nothing rolls back; that is a failure
	// event too. A failure it
	// cannot handle so (the evaluator's, a takeover that fails, a second one
	// during a pause noticed more than Timeout after the first, one
	// before the job started or before its first complete checkpoint)
	// ends the run, and the restarts left restart the whole job. Each
	// failure event counts as a restart: processes that fail within one
	// detection window (Timeout) of each other, such as two processes of
	// a host that died together, are replaced in one pause and count
	// once. A run that fails within one detection window of a
	// replacement (one that could not work: another worker finished its
	// rounds meanwhile, whose work cannot be rolled back) is followed by
	// a whole-job restart from the last checkpoint as part of the same
	// event, whatever its cause: a failure so close to the one before is
	// the same event, as for the replacements.
	Replace bool
	// Heartbeat and Timeout are the scheduler's heartbeat period and the
	// silence after which it declares a process failed (then, with
	// Replace, the process is killed if it still runs, hung or stopped,
	// and replaced); 0 is train.Heartbeat and train.Timeout.
	Heartbeat, Timeout time.Duration
	// Logf, when set, is told of each restart.
	Logf func(format string, args ...any)
	// Recovered is set by Deploy to the restarts it made and the time from
	// each failure to the next run's start of training.
	Recovered []Recovery
	// Failovers is set by Deploy to the server processes that died while
	// the job trained with replicas (train.Config.Replicas) and whose
	// backups took their key ranges over: no restart, no rollback.
	Failovers []Failover
}

// CheckProcesses returns an error when the cluster of c, its machines
// and its servers apart, is more processes than one host runs
// (launch.MaxProcesses), naming the fields as colo train's flags: Processes
// starts each on this host. The evaluator, when the job has one, is the
// Cluster's to count.
func CheckProcesses(c train.Config) error {
	what := fmt.Sprintf("--machines %d", c.Machines)
	if c.Servers > 0 {
		what += fmt.Sprintf(" and --servers %d", c.Servers)
	}
	return launch.CheckProcesses(what, c.Machines, c.Servers)
}

// Failover is a server process of Processes that died while its backup
// took its key ranges over.
type Failover struct {
	// Failure names the process and how it died; Noticed is when its
	// exit was seen.
	Failure error
	Noticed time.Time
	// Resumed is when the last worker had sent the backup what the
	// failed server had not answered (node.FailoverTimes), Seconds the
	// time from Noticed (negative when the scheduler saw the failure
	// before the supervisor); zero when no worker reported it.
	Resumed time.Time
	Seconds float64
}

// Recovery is one whole-job restart of Processes.
type Recovery struct {
	// Failure is the error that ended the failed run, Round the round of
	// the checkpoint the next run resumed from (−1: from the start).
	Failure error
	Round   int
	// Replaced names the process replaced (Processes.Replace), "" for a
	// whole-job restart.
	Replaced string
	// Joined is set for a replacement whose failure came within one
	// detection window of the one before: the same failure event,
	// recovered in the same pause, which does not count against
	// Restarts.
	Joined bool
	// Seconds is the time from the failure to the restarted cluster
	// running (every node registered and the data loaded).
	Seconds float64
	// Noticed is when the failed run ended (its first failure noticed and
	// the other processes stopped), Resumed when the restarted run's last
	// worker started training. Resumed minus the time of a kill is the
	// whole time to recover, the failure's detection included.
	Noticed, Resumed time.Time
}

// JoinTimeout is how long a training cluster of processes waits for its
// nodes to register: they load the data first.
const JoinTimeout = 60 * time.Second

// RecoverWait is how long the scheduler of Processes.Replace waits for a
// failed process's replacement, which loads its data first, as the
// nodes of the job's start do within JoinTimeout.
const RecoverWait = JoinTimeout

// Deploy runs d on a new cluster of processes and removes everything it
// made. The first process to fail is named in the error (a *Failure),
// with the last lines of its standard error; the others are killed after
// the supervisor's grace period. SIGINT, SIGTERM and SIGHUP stop the cluster
// (tempdir.Stop), its temporary directory removed.
func (pd *Processes) Deploy(ctx context.Context, d *train.Deployment) (*train.Outcome, error) {
	ctx, stop := tempdir.Stop(ctx)
	defer stop()
	if pd.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pd.Deadline)
		defer cancel()
	}
	ck := d.Job.Config.Checkpoint
	if pd.Restarts > 0 && ck.Dir == "" {
		return nil, fmt.Errorf("deploy: %d restarts need checkpoints to restart from (the job's checkpoint directory)", pd.Restarts)
	}
	pd.Recovered = nil
	out, err := pd.deploy(ctx, d)
	for err != nil && ctx.Err() == nil {
		failed := time.Now()
		joined := pd.fallback(failed)
		if !joined && pd.events() >= pd.Restarts {
			break
		}
		r := pd.events()
		next := *d
		next.Job.Config.Checkpoint.Resume = ""
		round := -1
		if m, _, lerr := checkpoint.Latest(ck.Dir); lerr == nil {
			next.Job.Config.Checkpoint.Resume, round = ck.Dir, m.Round
		}
		if pd.Logf != nil && joined {
			pd.Logf("restart %d of %d, the same failure event, after the replacement could not work: %v: from the checkpoint of round %d", r, pd.Restarts, err, round)
		} else if pd.Logf != nil {
			pd.Logf("restart %d of %d after %v: from the checkpoint of round %d", r+1, pd.Restarts, err, round)
		}
		pd.Recovered = append(pd.Recovered, Recovery{Failure: err, Round: round, Noticed: failed, Joined: joined})
		k := len(pd.Recovered) - 1
		out, err = pd.deploy(ctx, &next)
		if out != nil {
			rec := &pd.Recovered[k]
			rec.Seconds = time.Since(failed).Seconds() - (out.Seconds - out.StartSeconds)
			rec.Resumed = failed.Add(time.Duration(rec.Seconds * float64(time.Second)))
			if pd.Logf != nil {
				pd.Logf("restart %d: the cluster ran again %.2f s after the failure was noticed (noticed at unix %d ns, training resumed at unix %d ns)",
					r+1, rec.Seconds, rec.Noticed.UnixNano(), rec.Resumed.UnixNano())
			}
		}
	}
	if out != nil {
		out.Recoveries = pd.records()
	}
	return out, err
}

// records returns Recovered as the job's result reports it.
func (pd *Processes) records() []train.Recovery {
	var recs []train.Recovery
	event := 0
	for _, r := range pd.Recovered {
		if !r.Joined {
			event++
		}
		rec := train.Recovery{Event: event, Replaced: r.Replaced, Round: r.Round, Seconds: r.Seconds}
		if r.Failure != nil {
			rec.Failure = r.Failure.Error()
		}
		recs = append(recs, rec)
	}
	return recs
}

// fallback says whether a run that ended in failure at now restarts the
// whole job as part of the failure event before it: the run replaced a
// process (its last recovery is a replacement) and failed within one
// detection window of that failure (typically because the replacement
// could not work: a worker had finished its rounds meanwhile, and its
// work cannot be rolled back; but any failure so close to the one before
// is the same event). Then the whole-job restart is that event's
// fallback, which does not count against Restarts; a whole-job restart
// that fails again is a new event.
func (pd *Processes) fallback(now time.Time) bool {
	if len(pd.Recovered) == 0 {
		return false
	}
	last := pd.Recovered[len(pd.Recovered)-1]
	return last.Replaced != "" && now.Sub(last.Noticed) <= cmp.Or(pd.Timeout, train.Timeout)
}

// events returns the number of failure events recovered from so far:
// the restarts and the replacements that were not Joined.
func (pd *Processes) events() int {
	n := 0
	for _, r := range pd.Recovered {
		if !r.Joined {
			n++
		}
	}
	return n
}

// deploy runs d once.
func (pd *Processes) deploy(ctx context.Context, d *train.Deployment) (_ *train.Outcome, err error) {
	cfg := d.Job.Config
	k := cfg.Machines
	if cfg.RandomBandwidth > 0 && !pd.Netns {
		return nil, fmt.Errorf("deploy: random and changing link rates between processes need network namespaces (--netns), where tc shapes each machine's link")
	}
	if pd.Netns {
		if cfg.Bandwidth != nil {
			return nil, fmt.Errorf("deploy: network namespaces shape every machine's link at one rate, not a bandwidth matrix")
		}
		if cfg.LinkBandwidth == 0 && cfg.RandomBandwidth == 0 {
			return nil, fmt.Errorf("deploy: network namespaces need the job's link bandwidth, the rate tc gives each machine's link")
		}
	}
	if _, err := pd.TLS.Load(); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	tlsEnv, err := pd.TLS.Env()
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	dir, err := tempdir.Make("colo-train-")
	if err != nil {
		return nil, err
	}
	defer tempdir.Remove(dir, &err)
	job := d.Job
	if pd.Graph != nil {
		pdir := filepath.Join(dir, "placement")
		if err := placement.WriteDir(pdir, pd.Graph, d.Placement, map[string]any{"placement": d.Job.Placement, "machines": k}); err != nil {
			return nil, err
		}
		job.Placement = pdir
	} else if w, ok := d.App.(train.PlacementWriter); ok {
		pdir := filepath.Join(dir, "placement")
		if err := w.WritePlacement(pdir, d.Job, d.Placement); err != nil {
			return nil, err
		}
		job.Placement = pdir
	}
	if pd.Cache != nil {
		cdir := filepath.Join(dir, "data")
		ok, err := pd.Cache(cdir, d.Placement)
		if err != nil {
			return nil, err
		}
		if ok {
			job.Data.Cache = cdir
		}
	}
	if pd.Netns {
		// tc shapes the links: the machines limit nothing themselves.
		job.Config.LinkBandwidth, job.Config.Bandwidth = 0, nil
		job.Config.RandomBandwidth, job.Config.BandwidthChange = 0, 0
	}

	servers := cfg.Servers  // separate server processes, hosts 1..servers
	evals := d.Evaluators() // after the machines, on a host of its own
	rj, err := NewJob(job, d.App, d.Placement)
	if err != nil {
		return nil, err
	}
	env, err := rj.Envelope()
	if err != nil {
		return nil, err
	}
	c := &launch.Cluster{Envelope: env, Bin: pd.Bin, Env: tlsEnv, Evaluators: evals,
		Heartbeat: cmp.Or(pd.Heartbeat, train.Heartbeat), Timeout: cmp.Or(pd.Timeout, train.Timeout), JoinTimeout: JoinTimeout}
	if servers == 0 {
		c.Machines = k
	} else {
		c.Servers, c.Workers = servers, k
	}
	var st launch.Starter = launch.Loopback{}
	if pd.Netns {
		rate := cfg.LinkBandwidth
		if cfg.RandomBandwidth > 0 {
			rate = cfg.RandomBandwidth
		}
		ns, err := launch.NewNetns(c.Hosts(), fmt.Sprintf("%.0fbit", 8*rate))
		if err != nil {
			return nil, err
		}
		st = ns
		if cfg.RandomBandwidth > 0 {
			stop, err := changeRates(ns, cfg, 1+servers+k)
			if err != nil {
				ns.Close()
				return nil, err
			}
			defer stop()
		}
	}
	defer st.Close()
	c.Starter = st
	first := len(pd.Recovered) // the replacements of this run are after it
	window := cmp.Or(pd.Timeout, train.Timeout)
	var srv *replica.Holders // the servers apart with replicated key ranges
	if cfg.Replicas > 0 && servers > 0 {
		srv = replica.NewHolders(servers, cfg.Replicas)
	}
	if pd.Replace && pd.Restarts > pd.events() {
		c.RecoverWait, c.Standby = RecoverWait, true
		c.Replace = func(name string, perr error) bool {
			if name == "scheduler" {
				return pd.takeover(first, window, perr)
			}
			if srv != nil {
				if p, ok := launch.ServerRank(name); ok {
					if out, _ := srv.Decide(p); out != replica.Replace {
						// Its backup takes over (Survive), or its
						// process held ranges nobody else has: the
						// whole job restarts.
						return false
					}
				}
			}
			// A failure within one detection window of this run's
			// last replacement is the same event.
			joined := len(pd.Recovered) > first && time.Since(pd.Recovered[len(pd.Recovered)-1].Noticed) <= window
			if !joined && pd.events() >= pd.Restarts {
				return false
			}
			if _, _, err := checkpoint.Latest(cfg.Checkpoint.Dir); err != nil {
				// Nothing to roll back to yet: the whole job restarts,
				// from the start.
				return false
			}
			if srv != nil {
				if p, ok := launch.ServerRank(name); ok {
					// Its replacement holds the copies of a start, as
					// the scheduler counts them.
					srv.Replaced(p)
				}
			}
			failure := fmt.Errorf("%s failed: %v", name, perr)
			pd.Recovered = append(pd.Recovered, Recovery{Failure: failure, Round: -1, Replaced: name, Noticed: time.Now(), Joined: joined})
			if pd.Logf != nil {
				how := ""
				if joined {
					how = ", the same failure event,"
				}
				pd.Logf("replacement %d of %d%s after %v: %s started again with --recover", pd.events(), pd.Restarts, how, failure, name)
			}
			return true
		}
	}
	firstFailover := len(pd.Failovers)
	if srv != nil {
		c.BackedUp = func(server, backup int) {
			srv.BackedUp(server, backup)
			if pd.Logf != nil {
				pd.Logf("server %d holds a new copy of server %d's key ranges", backup, server)
			}
		}
		c.Survive = func(name string, perr error) bool {
			p, ok := launch.ServerRank(name)
			if !ok {
				return false
			}
			out, b := srv.Decide(p)
			if out != replica.FailOver {
				if pd.Logf != nil {
					pd.Logf("%s failed (%v): no live backup serves all its key ranges", name, perr)
				}
				return false
			}
			srv.FailedOver(p, b)
			pd.Failovers = append(pd.Failovers, Failover{Failure: fmt.Errorf("%s failed: %v", name, perr), Noticed: time.Now()})
			if pd.Logf != nil {
				pd.Logf("%s failed (%v): its backup serves its key ranges, and the job goes on without it", name, perr)
			}
			return true
		}
	}
	res, err := c.Run(ctx)
	if err != nil {
		return nil, err
	}
	t0 := res.Started
	out := &train.Outcome{Seconds: time.Since(t0).Seconds()}
	var lastStart int64
	var reports []*train.MachineReport
	for i, m := range res.Members {
		if m.Survived {
			continue // a server taken over by its backup: no report
		}
		if m.Report == nil {
			return nil, fmt.Errorf("%s: %w", m.Name, m.ReportErr)
		}
		var r train.MachineReport
		if err := m.Report.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: report: %w", m.Name, err)
		}
		r.StartedUnixNano = m.Report.Node.StartedUnixNano
		reports = append(reports, &r)
		if i == 0 {
			out.Work = r.Work
		}
		if r.Evaluator != nil {
			out.Evaluator = r.Evaluator
		}
		if r.Balance != nil {
			out.Balance = r.Balance
		}
		out.Stats = append(out.Stats, r.Stats)
		out.InterValues += r.InterValues
		if first == len(pd.Recovered) || r.StartedUnixNano < pd.Recovered[first].Noticed.UnixNano() {
			lastStart = max(lastStart, r.StartedUnixNano) // a replacement's is not the run's start
		}
	}
	if lastStart > 0 {
		out.StartSeconds = float64(lastStart-t0.UnixNano()) / 1e9
	}
	pd.resumed(first, reports)
	for i := firstFailover; i < len(pd.Failovers); i++ {
		f := &pd.Failovers[i]
		var last int64
		for _, r := range reports {
			for _, t := range r.Stats.Failovers {
				if t.ResentUnixNano > f.Noticed.UnixNano()-int64(window) && t.ResentUnixNano > last {
					last = t.ResentUnixNano
				}
			}
		}
		if last > 0 {
			f.Resumed = time.Unix(0, last)
			f.Seconds = f.Resumed.Sub(f.Noticed).Seconds()
			if pd.Logf != nil {
				pd.Logf("failover: %v; the workers had sent the backup what it had not answered %.3f s after its exit was seen (seen at unix %d ns, sent at unix %d ns)", f.Failure, f.Seconds, f.Noticed.UnixNano(), last)
			}
		}
	}
	return out, nil
}

// takeover says whether a scheduler is started again to take over the
// job of the scheduler that died with perr (launch.Cluster.Standby),
// and records it; the run's recoveries are from Recovered[first:]. It
// is a failure event of its own, which needs no checkpoint (nothing is
// rolled back), unless it comes within one detection window after the
// failure of another process this run replaced: a host that died with
// the scheduler and a machine, whose replacement joins the takeover's
// pause (and the other way round, as replacements join).
func (pd *Processes) takeover(first int, window time.Duration, perr error) bool {
	joined := false
	if k := len(pd.Recovered) - 1; k >= first {
		last := pd.Recovered[k]
		joined = last.Replaced != "scheduler" && time.Since(last.Noticed) <= window
	}
	if !joined && pd.events() >= pd.Restarts {
		return false
	}
	failure := fmt.Errorf("scheduler failed: %v", perr)
	pd.Recovered = append(pd.Recovered, Recovery{Failure: failure, Round: -1, Replaced: "scheduler", Noticed: time.Now(), Joined: joined})
	if pd.Logf != nil {
		pd.Logf("takeover %d of %d after %v: a scheduler started again with --takeover at its address", pd.events(), pd.Restarts, failure)
	}
	return true
}

// tookOver completes the takeover of the scheduler rec with when
// training resumed: when the last node heard the new scheduler (which
// releases the barriers that waited), in each node's loss of the
// scheduler nearest the failure (a node may also lose and hear the
// scheduler at other times: at the job's end its link can close before
// its Shutdown is read, and a scheduler slow under load can be silent
// for SchedulerGrace heartbeats) whose end came before until.
func (pd *Processes) tookOver(event int, rec *Recovery, until int64, reports []*train.MachineReport) {
	var last int64
	noticed := rec.Noticed.UnixNano()
	for _, r := range reports {
		var best *node.TakeoverTimes
		for i, x := range r.Stats.Takeovers {
			if x.HeardUnixNano == 0 || x.HeardUnixNano >= until {
				continue
			}
			if best == nil || abs(x.LostUnixNano-noticed) < abs(best.LostUnixNano-noticed) {
				best = &r.Stats.Takeovers[i]
			}
		}
		if best != nil {
			last = max(last, best.HeardUnixNano)
		}
	}
	if last == 0 {
		return
	}
	rec.Resumed = time.Unix(0, last)
	rec.Seconds = rec.Resumed.Sub(rec.Noticed).Seconds()
	if pd.Logf != nil {
		pd.Logf("takeover %d: the scheduler's job was taken over, nothing rolled back; training resumed %.2f s after the failure was noticed (noticed at unix %d ns, training resumed at unix %d ns)",
			event, rec.Seconds, rec.Noticed.UnixNano(), last)
	}
}

// abs returns |d|.
func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// resumed completes the replacements from Recovered[first:] with the
// round each rolled back to and when training resumed: when the last
// worker restored the checkpoint, after the failure was noticed (for a
// takeover of the scheduler, tookOver).
func (pd *Processes) resumed(first int, reports []*train.MachineReport) {
	for i := first; i < len(pd.Recovered); i++ {
		rec := &pd.Recovered[i]
		if rec.Joined {
			continue // the event's first replacement has its times
		}
		var until int64 = math.MaxInt64 // the next failure event's
		for j := i + 1; j < len(pd.Recovered); j++ {
			if !pd.Recovered[j].Joined {
				until = pd.Recovered[j].Noticed.UnixNano()
				break
			}
		}
		// A takeover alone rolls nothing back; with a replacement in its
		// event (a node that died with the scheduler), every worker
		// rolls back with the replacement.
		alone, who := true, rec.Replaced
		for j := i + 1; j < len(pd.Recovered) && pd.Recovered[j].Joined; j++ {
			r := pd.Recovered[j].Replaced
			alone = alone && r == "scheduler"
			who += " and " + r
		}
		if rec.Replaced == "scheduler" && alone {
			event := 0
			for _, r := range pd.Recovered[:i+1] {
				if !r.Joined {
					event++
				}
			}
			pd.tookOver(event, rec, until, reports)
			continue
		}
		var last int64
		for _, r := range reports {
			for _, x := range r.Work.Restores {
				if x.UnixNano > rec.Noticed.UnixNano() && x.UnixNano < until {
					if x.UnixNano > last {
						last, rec.Round = x.UnixNano, x.Round
					}
					break
				}
			}
		}
		if last == 0 {
			continue
		}
		rec.Resumed = time.Unix(0, last)
		rec.Seconds = rec.Resumed.Sub(rec.Noticed).Seconds()
		for j := i + 1; j < len(pd.Recovered) && pd.Recovered[j].Joined; j++ {
			o := &pd.Recovered[j]
			o.Round, o.Resumed, o.Seconds = rec.Round, rec.Resumed, rec.Resumed.Sub(o.Noticed).Seconds()
		}
		if pd.Logf != nil {
			event := 0
			for _, r := range pd.Recovered[:i+1] {
				if !r.Joined {
					event++
				}
			}
			pd.Logf("replacement %d: %s rolled back with the others to the checkpoint of round %d; training resumed %.2f s after the failure was noticed (noticed at unix %d ns, training resumed at unix %d ns)",
				event, who, rec.Round, rec.Seconds, rec.Noticed.UnixNano(), last)
		}
	}
}

// changeRates gives the machines' links (hosts 1 to hosts−1; host 0 is
// the scheduler's) the random rates of cfg (transport.RandomRates, the
// in-memory network's draw for the same seed) and, with a
// BandwidthChange, draws them again every period until stop.
func changeRates(ns *launch.Netns, cfg train.Config, hosts int) (stop func(), err error) {
	set := func(epoch int) error {
		for i, r := range transport.RandomRates(hosts-1, cfg.RandomBandwidth, cfg.Seed, epoch) {
			if err := ns.SetRate(1+i, r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := set(0); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if cfg.BandwidthChange <= 0 {
			return
		}
		t := time.NewTicker(cfg.BandwidthChange)
		defer t.Stop()
		for epoch := 1; ; epoch++ {
			select {
			case <-done:
				return
			case <-t.C:
				set(epoch)
			}
		}
	}()
	return func() { close(done); <-finished }, nil
}
