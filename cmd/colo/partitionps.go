package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"colo/distparsa"
	"colo/graph"
	"colo/internal/datasum"
	"colo/internal/tempdir"
	"colo/internal/textio"
	"colo/launch"
	"colo/partition"
	"colo/partition/ooc"
	"colo/placement"
)

// psFlags are colo partition's flags of Parsa on the parameter server
// (package distparsa).
type psFlags struct {
	processes, inProcess int
	write                string // --write-job
}

func (p *psFlags) register(f *cmdFlags) {
	f.IntVar(&p.processes, "processes", 0, "parsa: partition on a parameter server of W colo node processes on loopback, each a server and a worker\nthat reads its own blocks of FILE (seed 001 Alg. 4; no process loads FILE whole: each parses its own range\nof FILE's lines into --spill-dir, a compressed FILE decompressed there first); --tau is its delay in blocks (0 or auto: BSP, inf: asynchronous);\n"+
		fmt.Sprintf("W at most %d, the processes of one host (launch.MaxProcesses), unless --write-job", launch.MaxProcesses))
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
	if err := launch.CheckProcesses(fmt.Sprintf("--processes %d", p.processes), p.processes); p.write == "" && err != nil {
		return usageError("%v", err) // --write-job: the machines run elsewhere
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

// job returns the job that machines run for the file at path, of n
// samples and m parameters, writing the placement to out.
func (p *psFlags) job(f *cmdFlags, path string, n, m int, opt partition.Options, df *dataFlags, mf *memoryFlags, out string) (distparsa.Job, error) {
	opt, cfg := p.setup(f, opt)
	lo, err := df.options()
	if err != nil {
		return distparsa.Job{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return distparsa.Job{}, err
	}
	if out != "" {
		if out, err = filepath.Abs(out); err != nil {
			return distparsa.Job{}, err
		}
	}
	po := opt.Parsa
	capBytes, err := mf.machineCap()
	if err != nil {
		return distparsa.Job{}, err
	}
	return distparsa.Job{Memory: capBytes, Data: abs, Format: string(lo.Format), IndexBase: lo.IndexBase, DropSelfLoops: lo.DropSelfLoops,
		HashBits: lo.HashBits, K: opt.K, Seed: opt.Seed, ParamAlgo: opt.ParamAlgo, Blocks: po.Blocks, Init: string(po.Init),
		GlobalFraction: po.GlobalFraction, GrowBy: string(po.GrowBy), Epsilon: po.Epsilon, Refine: po.Refine,
		Config: cfg, Out: out, SpillDir: mf.spill, Keys: cfg.LayoutOf(n, m, opt.K).NumKeys()}, nil
}

// runProcesses is colo partition --processes W: the file's samples and
// parameters counted (ooc.CountFile: one parse, no spill), then
// the job run by W colo node processes that each read their own blocks
// of the file (distparsa.Processes), or with --write-job written for
// machines started by hand. This process never loads the graph.
func (p *psFlags) runProcesses(e *env, f *cmdFlags, path, out, algo string, opt partition.Options, df *dataFlags, mf *memoryFlags, j *jsonFlag) error {
	if opt.Parsa.Refine > 0 || (opt.ParamAlgo != "" && opt.ParamAlgo != partition.ParamParsa) {
		return usageError("--processes: --parsa-refine and --param-algo %s need the graph in memory, which no machine loads (--ps-workers W loads it)", opt.ParamAlgo)
	}
	if _, err := mf.machineCap(); err != nil {
		return err
	}
	lo, err := df.options()
	if err != nil {
		return err
	}
	// The processes share this machine's disk: a compressed file is
	// decompressed once, into a copy that they read by ranges, instead
	// of by each of them whole.
	countPath := path
	if p.write == "" {
		plain, remove, err := decompressed(e, path, mf.spill)
		if err != nil {
			return err
		}
		defer remove()
		if plain != "" {
			if lo.Name, err = filepath.Abs(path); err != nil {
				return err
			}
			countPath = plain
		}
	}
	count := startPhase(e, "count "+path, 1)
	t0 := time.Now()
	n, m, err := ooc.CountFile(countPath, lo)
	if err != nil {
		count.Abort()
		return err
	}
	countTime := time.Since(t0)
	count.Finish(fmt.Sprintf("%s samples, %s parameters", textio.Commas(int64(n)), textio.Commas(int64(m))))
	if err := opt.Validate(n); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	job, err := p.job(f, countPath, n, m, opt, df, mf, out)
	if err != nil {
		return err
	}
	job.DataName = lo.Name
	if p.write != "" {
		return p.writeJob(e, job)
	}
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	ph := startPhase(e, fmt.Sprintf("partition %s on %d processes", algo, p.processes), 0)
	start := time.Now()
	var sum *placement.Summary
	s, rep, err := distparsa.Processes{}.WriteDir(ctx, job, out, func(s *placement.Summary, rep *distparsa.Report) (any, error) {
		s.Algorithm, s.Seed, s.Seconds, s.Dataset = algo, opt.Seed, time.Since(start).Seconds(), path
		var err error
		if s.DataChecksum, err = datasum.Files(path); err != nil {
			return nil, err
		}
		s.Details = map[string]any{"count_seconds": countTime.Seconds(), "parsa": rep.Parsa, "distributed": rep}
		sum = s
		stamped, err := e.stamp(s)
		return json.RawMessage(stamped), err
	})
	if err != nil {
		ph.Abort()
		return err
	}
	read := rep.ReadWords()
	ph.Finish(read)
	if j.Path != "" {
		if err := writeJSON(e, j.Path, sum); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.out, "%s: %s samples, %s parameters, %s edges; counted in %.2f s, %s\n", path,
		textio.Commas(int64(s.NumSamp)), textio.Commas(int64(s.NumParams)), textio.Commas(s.NumEdges), countTime.Seconds(), read)
	fmt.Fprintf(e.out, "%s on %d machines (seed %d) by %d processes in %.3f s, written to %s\n", algo, opt.K, opt.Seed,
		rep.Workers, s.Seconds, out)
	rep.WriteMachines(e.out)
	fmt.Fprintln(e.out)
	return s.WriteTable(e.out)
}

// decompressed is distparsa.PlainCopy behind a progress phase.
func decompressed(e *env, path, spill string) (string, func(), error) {
	if c, err := graph.Compressed(path); err != nil || !c {
		return "", func() {}, err
	}
	ph := startPhase(e, "decompress "+path, 1)
	plain, remove, err := distparsa.PlainCopy(path, spill)
	if err != nil {
		ph.Abort()
		return "", remove, err
	}
	ph.Finish("a copy to read by ranges")
	return plain, remove, nil
}

// writeJob writes the job of --processes W to --write-job FILE, for
// colo node --job parsa on W machines, and says how to run it.
func (p *psFlags) writeJob(e *env, job distparsa.Job) error {
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

// run partitions g with Parsa on a parameter server in this process
// (--ps-workers W) and records the run's report in details.
func (p *psFlags) run(f *cmdFlags, g *graph.Graph, opt partition.Options, details map[string]any) (*placement.Placement, error) {
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	opt, cfg := p.setup(f, opt)
	pl, rep, err := distparsa.InProcess(ctx, g, opt, cfg, nil)
	if err != nil {
		return nil, err
	}
	details["parsa"], details["distributed"] = rep.Parsa, rep
	return pl, nil
}
