package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"colo/graph"
	"colo/partition"
	"colo/partition/distparsa"
	"colo/placement"
)

// psFlags are colo partition's flags of Parsa on the parameter server
// (package partition/distparsa).
type psFlags struct {
	processes, inProcess int
	write                string // --write-job
}

func (p *psFlags) register(f *cmdFlags) {
	f.IntVar(&p.processes, "processes", 0, "parsa: partition on a parameter server of W colo node processes on loopback, each a server and a worker\nthat reads FILE itself (seed 001 Alg. 4); --tau is its delay in blocks (0 or auto: BSP, inf: asynchronous)")
	f.IntVar(&p.inProcess, "ps-workers", 0, "parsa: as --processes, on a parameter server of W machines in this process")
	f.StringVar(&p.write, "write-job", "", "parsa: with --processes W, write the job to FILE for colo node --job parsa on W machines\n(machine 0 writes the placement to -o DIR) and exit")
}

// on reports whether a distributed run was asked for.
func (p *psFlags) on() bool { return p.processes > 0 || p.inProcess > 0 }

// check refuses what a distributed run cannot do.
func (p *psFlags) check(algo string) error {
	switch {
	case p.processes < 0 || p.inProcess < 0:
		return usageError("--processes %d, --ps-workers %d: want a number of workers", p.processes, p.inProcess)
	case p.write != "" && p.processes == 0:
		return usageError("--write-job needs --processes W: the number of machines that run the job")
	case p.processes > 0 && p.inProcess > 0:
		return usageError("--processes and --ps-workers: one or the other")
	case p.on() && algo != "parsa":
		return usageError("--processes and --ps-workers run parsa, not %s", algo)
	}
	return nil
}

// setup returns the options and the configuration of a distributed run:
// --init defaults to global there (seed 001 §4.4), --tau auto to 0.
func (p *psFlags) setup(f *cmdFlags, opt partition.Options) (partition.Options, distparsa.Config) {
	initSet := false
	f.Visit(func(fl *flag.Flag) { initSet = initSet || fl.Name == "init" })
	if !initSet {
		opt.Parsa.Init = partition.InitGlobal
	}
	cfg := distparsa.Config{Workers: p.inProcess + p.processes, Tau: max(opt.Parsa.Tau, 0)}
	if opt.Parsa.Tau == partition.TauInfinite {
		cfg.Tau = partition.TauInfinite
	}
	return opt, cfg
}

// job returns the job that machines run for g, read from path, writing
// the placement to out.
func (p *psFlags) job(f *cmdFlags, path string, g *graph.Graph, opt partition.Options, df *dataFlags, out string) (distparsa.Job, error) {
	opt, cfg := p.setup(f, opt)
	lo, err := df.options()
	if err != nil {
		return distparsa.Job{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return distparsa.Job{}, err
	}
	if out, err = filepath.Abs(out); err != nil {
		return distparsa.Job{}, err
	}
	po := opt.Parsa
	return distparsa.Job{Data: abs, Format: string(lo.Format), IndexBase: lo.IndexBase, DropSelfLoops: lo.DropSelfLoops,
		HashBits: lo.HashBits, K: opt.K, Seed: opt.Seed, ParamAlgo: opt.ParamAlgo, Blocks: po.Blocks, Init: string(po.Init),
		GlobalFraction: po.GlobalFraction, GrowBy: string(po.GrowBy), Epsilon: po.Epsilon, Refine: po.Refine,
		Config: cfg, Out: out, Keys: cfg.Layout(g, opt.K).NumKeys()}, nil
}

// writeJob writes the job of --processes W to --write-job FILE, for
// colo node --job parsa on W machines, and says how to run it.
func (p *psFlags) writeJob(e *env, f *cmdFlags, path string, g *graph.Graph, opt partition.Options, df *dataFlags, out string) error {
	if p.processes == 0 {
		return usageError("--write-job needs --processes W: the number of machines that run the job")
	}
	job, err := p.job(f, path, g, opt, df, out)
	if err != nil {
		return err
	}
	if err := job.Validate(); err != nil {
		return err
	}
	if err := distparsa.WriteJob(p.write, job); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "wrote %s: parsa on %d machines, k = %d, %s; machine 0 writes %s\n", p.write, job.Config.Workers, job.K, job.Config.Clock().Mode, job.Out)
	fmt.Fprintf(e.out, "run  colo node --role scheduler --scheduler HOST:PORT --job parsa --job-file %s\n", p.write)
	fmt.Fprintf(e.out, "and  colo node --role machine --scheduler HOST:PORT --job parsa --job-file %s --rank R   (R = 0..%d, %s on each)\n", p.write, job.Config.Workers-1, job.Data)
	return nil
}

// run partitions g, read from path, with Parsa on the parameter server and
// records the run's report in details.
func (p *psFlags) run(f *cmdFlags, path string, g *graph.Graph, opt partition.Options, df *dataFlags, details map[string]any) (*placement.Placement, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if p.inProcess > 0 {
		opt, cfg := p.setup(f, opt)
		pl, rep, err := distparsa.InProcess(ctx, g, opt, cfg, nil)
		if err != nil {
			return nil, err
		}
		details["parsa"], details["distributed"] = rep.Parsa, rep
		return pl, nil
	}
	job, err := p.job(f, path, g, opt, df, "")
	if err != nil {
		return nil, err
	}
	pl, rep, parsa, err := distparsa.Processes{}.Partition(ctx, job, g)
	if err != nil {
		return nil, err
	}
	details["distributed"] = rep
	if parsa != nil { // machine 0's statistics, as a run in this process reports them
		details["parsa"] = parsa
	}
	return pl, nil
}
