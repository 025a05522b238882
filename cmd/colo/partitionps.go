package main

import (
	"context"
	"encoding/json"
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
}

func (p *psFlags) register(f *cmdFlags) {
	f.IntVar(&p.processes, "processes", 0, "parsa: partition on a parameter server of W colo node processes on loopback, each a server and a worker\nthat reads FILE itself (seed 001 Alg. 4); --tau is its delay in blocks (0 or auto: BSP, inf: asynchronous)")
	f.IntVar(&p.inProcess, "ps-workers", 0, "parsa: as --processes, on a parameter server of W machines in this process")
}

// on reports whether a distributed run was asked for.
func (p *psFlags) on() bool { return p.processes > 0 || p.inProcess > 0 }

// check refuses what a distributed run cannot do.
func (p *psFlags) check(algo string) error {
	switch {
	case p.processes < 0 || p.inProcess < 0:
		return usageError("--processes %d, --ps-workers %d: want a number of workers", p.processes, p.inProcess)
	case p.processes > 0 && p.inProcess > 0:
		return usageError("--processes and --ps-workers: one or the other")
	case p.on() && algo != "parsa":
		return usageError("--processes and --ps-workers run parsa, not %s", algo)
	}
	return nil
}

// run partitions g, read from path, with Parsa on the parameter server and
// records the run's report in details. --init defaults to global there
// (seed 001 §4.4), --tau auto to 0.
func (p *psFlags) run(f *cmdFlags, path string, g *graph.Graph, opt partition.Options, df *dataFlags, details map[string]any) (*placement.Placement, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	initSet := false
	f.Visit(func(fl *flag.Flag) { initSet = initSet || fl.Name == "init" })
	if !initSet {
		opt.Parsa.Init = partition.InitGlobal
	}
	cfg := distparsa.Config{Workers: p.inProcess + p.processes, Tau: max(opt.Parsa.Tau, 0)}
	if opt.Parsa.Tau == partition.TauInfinite {
		cfg.Tau = partition.TauInfinite
	}
	if p.inProcess > 0 {
		pl, rep, err := distparsa.InProcess(ctx, g, opt, cfg, nil)
		if err != nil {
			return nil, err
		}
		details["parsa"], details["distributed"] = rep.Parsa, rep
		return pl, nil
	}
	lo, err := df.options()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "colo-parsa-ps-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	po := opt.Parsa
	job := distparsa.Job{Data: abs, Format: string(lo.Format), IndexBase: lo.IndexBase, DropSelfLoops: lo.DropSelfLoops,
		HashBits: lo.HashBits, K: opt.K, Seed: opt.Seed, ParamAlgo: opt.ParamAlgo, Blocks: po.Blocks, Init: string(po.Init),
		GlobalFraction: po.GlobalFraction, GrowBy: string(po.GrowBy), Epsilon: po.Epsilon, Refine: po.Refine,
		Config: cfg, Out: filepath.Join(tmp, "placement")}
	rep, err := distparsa.Processes{}.Run(ctx, job, cfg.Layout(g, opt.K).NumKeys())
	if err != nil {
		return nil, err
	}
	pl, err := placement.ReadDir(job.Out, g, opt.K)
	if err != nil {
		return nil, fmt.Errorf("the placement of machine 0: %w", err)
	}
	details["distributed"] = rep
	// Machine 0's statistics of the run, as a run in this process reports
	// them.
	var sum struct {
		Details struct {
			Parsa json.RawMessage `json:"parsa"`
		} `json:"details"`
	}
	if b, err := os.ReadFile(filepath.Join(job.Out, placement.SummaryFile)); err == nil && json.Unmarshal(b, &sum) == nil && sum.Details.Parsa != nil {
		details["parsa"] = sum.Details.Parsa
	}
	return pl, nil
}
