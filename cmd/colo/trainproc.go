package main

// Training on a cluster of processes: the machine side (colo node --role
// machine --job train), the scheduler's routing by a placement, and the
// deployment of colo train --processes and --netns. Every mode runs the
// same per-worker code, train.Work, so a BSP job gives the same passes
// and evaluation bit for bit in this process, as processes on loopback
// and in network namespaces.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"colo/app"
	"colo/app/embed"
	"colo/launch"
	"colo/metrics"
	"colo/placement"
	"colo/ps/node"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/train"
	"colo/train/deploy"
)

// registerNode registers the flags of colo train that colo node's
// training job needs and does not already have: --updater, --lr, --l1,
// --l2, --batch and --seed are the node's own, the factors' dimension is
// --mf-rank (--rank is the node's rank).
func (t *trainFlags) registerNode(f *cmdFlags) {
	def := train.DefaultConfig()
	f.StringVar(&t.app, "app", "lr", "--job train: application: "+strings.Join(app.Names(), " or "))
	f.StringVar(&t.test, "test", "", "--job train: test file, as colo train --test")
	f.StringVar(&t.features, "features", "auto", "--job train, lr: feature values: raw, l2 (unit-norm samples), log1p-l2, or auto (raw for binary data, log1p-l2 otherwise), as colo train")
	f.Float64Var(&t.epsilon, "epsilon", def.Epsilon, "--job train: stop when the training loss changes by less than this fraction between passes")
	f.IntVar(&t.maxPasses, "max-passes", def.MaxPasses, "--job train: stop after this many passes over the data")
	f.IntVar(&t.mf.Rank, "mf-rank", 16, "--job train, mf: dimension of the factors (colo train --rank)")
	f.Float64Var(&t.holdout, "holdout", -1, "--job train, mf, embed: fraction of the entries or edges held out when there is no --test (-1: the application's default)")
	t.embed = embed.DefaultConfig()
	f.StringVar(&t.jobFile, "job-file", "", "the job: an envelope {\"kind\": …, \"job\": …} (as colo train --write-job writes it), or with --job train or parsa a bare training or partition job (as colo partition --write-job writes it)")
}

// trainJob returns the training job the flags of colo node describe on
// --num-workers machines, with colo train's defaults.
func (nf *nodeFlags) trainJob() (train.Job, error) {
	switch {
	case nf.numWorkers < 1:
		return train.Job{}, usageError("--job train needs --num-workers, the number of machines K of the placement")
	case nf.numServers > 0 && nf.numServers != nf.numWorkers:
		return train.Job{}, usageError("--job train runs on machines: --num-servers %d and --num-workers %d differ", nf.numServers, nf.numWorkers)
	case nf.data == "" || nf.place == "":
		return train.Job{}, usageError("--job train needs --data FILE and --placement DIR (or --job-file)")
	}
	if st, err := os.Stat(nf.place); err != nil || !st.IsDir() {
		return train.Job{}, usageError("--placement %s: want a directory written by colo partition (%s)", nf.place, filepath.Join(nf.place, placement.DataPartFile))
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
	job.Config.Rule.Beta, job.Config.Rule.Eps = nf.beta, nf.eps
	return job, job.Validate()
}

// placeScheduler sets the scheduler's routing from --placement DIR and
// --data FILE: the owner of each parameter of the data in
// DIR/param.part.
func (nf *nodeFlags) placeScheduler(cfg *sched.Config) error {
	if nf.data == "" {
		return usageError("--placement needs --data, the training data whose parameter ids param.part names")
	}
	if nf.numServers < 1 {
		return usageError("--placement needs --num-servers, the number of machines of the placement")
	}
	g, _, err := nf.df.load(nf.data)
	if err != nil {
		return err
	}
	p, err := placement.ReadDir(nf.place, g, nf.numServers)
	if err != nil {
		return fmt.Errorf("--placement: %w", err)
	}
	param := p.Param
	if cfg.Table, err = route.FromPlacement(param, nf.numServers); err != nil {
		return fmt.Errorf("--placement %s: %w", nf.place, err)
	}
	cfg.NumKeys = uint64(len(param))
	return nil
}

// deployment says where colo train runs its cluster: in this process
// (neither flag), as processes on loopback, or in network namespaces.
type deployment struct {
	processes, netns bool
	deadline         time.Duration
	restarts         int
	recovery         string
	metrics          metrics.Flags
	tls              launch.TLSFlags
	logf             func(format string, args ...any)
}

func (d *deployment) register(f *cmdFlags) {
	f.BoolVar(&d.processes, "processes", false, fmt.Sprintf("run the scheduler and the K machines as processes of this binary on loopback; each emulates its interface (--link-bandwidth, each way) and paths (--bandwidth-matrix) over TCP, as in process; K and --servers at most %d together, the processes of one host (launch.MaxProcesses)", launch.MaxProcesses))
	f.BoolVar(&d.netns, "netns", false, "run the scheduler and each machine as a process in its own network namespace, joined by veth links that tc shapes at --link-bandwidth or --bandwidth-random (one of them required, above 0: a --link-bandwidth of 0 or unlimited is refused); needs root and iproute2")
	f.DurationVar(&d.deadline, "deadline", 0, "--processes, --netns: stop the cluster after this long (0: no limit; failed or silent nodes end the job anyway)")
	f.IntVar(&d.restarts, "restarts", 0, "--processes, --netns: recover from failed processes (dead, or hung past the scheduler's timeout), up to this many failure events (processes failing within one timeout of each other are one), from the job's last checkpoint (--checkpoint), as --recovery says")
	f.StringVar(&d.recovery, "recovery", "replace", "--restarts: replace (start only the dead process again, in its rank; the others stay up and roll back to the checkpoint; a dead scheduler is taken over, with no rollback, by one started at its address; the whole job restarts when that cannot work) or restart (stop the others and restart the whole job)")
	d.metrics.Register(f.FlagSet)
	d.tls.Register(f.FlagSet)
}

// check validates the flags of d with the training configuration, before
// anything is loaded.
func (d *deployment) check(cfg train.Config) error {
	switch {
	case d.restarts < 0:
		return usageError("--restarts %d: want 0 or more", d.restarts)
	case d.restarts > 0 && !d.processes && !d.netns:
		return usageError("--restarts restarts processes: add --processes or --netns")
	case d.restarts > 0 && cfg.Checkpoint.Dir == "":
		return usageError("--restarts %d needs --checkpoint and --checkpoint-every to restart from", d.restarts)
	case d.tls.Enabled() && !d.processes && !d.netns:
		return usageError("--tls-cert, --tls-key and --tls-ca secure the links between processes: add --processes or --netns")
	case d.recovery != "replace" && d.recovery != "restart":
		return usageError("--recovery %q: replace or restart", d.recovery)
	}
	if _, err := d.tls.Load(); err != nil {
		return usageError("%v", err)
	}
	if err := deploy.CheckProcesses(cfg); (d.processes || d.netns) && err != nil {
		return usageError("%v", err)
	}
	if !d.netns {
		return nil
	}
	if cfg.Bandwidth != nil {
		return usageError("--netns shapes every machine's link at one rate: use --link-bandwidth, not --bandwidth-matrix")
	}
	if cfg.LinkBandwidth == 0 && cfg.RandomBandwidth == 0 {
		return usageError("--netns needs --link-bandwidth or --bandwidth-random, the rates tc gives the machines' links")
	}
	if err := launch.CheckNetns(); err != nil {
		return fmt.Errorf("--netns: %w", err)
	}
	return nil
}

// deployer returns the deployer of d for jobs of the opened application.
func (d *deployment) deployer(o *app.Opened, watch func(stats func() []node.Stats)) train.Deployer {
	if !d.processes && !d.netns {
		return deploy.InProcess{Watch: watch}
	}
	return &deploy.Processes{Graph: o.PlacedGraph(), Cache: o.WriteCache, Netns: d.netns, TLS: d.tls, Deadline: d.deadline, Restarts: d.restarts, Replace: d.recovery == "replace", Logf: d.logf}
}

// writeTrainJob writes the job of colo train --write-job: the envelope
// colo node --job-file runs, every default resolved, its files named by
// absolute paths, with the routing table of its placement (so that the
// scheduler loads no data); every process places the job again, the same
// for the same seed.
func writeTrainJob(e *env, path string, job train.Job, opened *app.Opened) error {
	p, _, err := opened.Place(job)
	if err != nil {
		return err
	}
	if job, err = job.Abs(); err != nil {
		return err
	}
	rj, err := deploy.NewJob(job, opened.App, p)
	if err != nil {
		return err
	}
	env, err := rj.Envelope()
	if err != nil {
		return err
	}
	if err := writeOutput(e, path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(env)
	}); err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "colo train: wrote the job to %s: %s\n",
		path, rj.RunHint(path, opened.App))
	return nil
}
