package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"colo/app/smoke"
	"colo/internal/tempdir"
	"colo/launch"
	"colo/metrics"
)

func runLaunch(e *env, args []string) error {
	f := newFlags(e, "launch", "colo launch --machines K [flags]",
		"Starts a parameter-server cluster of processes on loopback (a scheduler\n"+
			"and K machines, or --servers and --workers separately), runs the built-in\n"+
			"smoke job (every worker pushes known increments to random overlapping\n"+
			"keys; worker 0 checks that every value is the exact sum) and prints the\n"+
			"start time, the throughput and the traffic, inner- and inter-machine.")
	cfg := smoke.DefaultLaunchConfig()
	var deadline time.Duration
	f.IntVar(&cfg.Machines, "machines", cfg.Machines, fmt.Sprintf("number of machines K (a server and a worker each); K, or --servers and --workers together, at most %d: the processes of this host (launch.MaxProcesses)", launch.MaxProcesses))
	f.Alias("k", "machines")
	f.Alias("n", "machines")
	f.IntVar(&cfg.Servers, "servers", 0, "run this many separate servers instead of machines")
	f.IntVar(&cfg.Workers, "workers", 0, "run this many separate workers instead of machines")
	f.StringVar(&cfg.Consistency, "consistency", cfg.Consistency, "bsp, async or bounded")
	f.IntVar(&cfg.Tau, "tau", cfg.Tau, "delay bound of --consistency bounded")
	f.Uint64Var(&cfg.Keys, "keys", cfg.Keys, "key space of the smoke job")
	f.IntVar(&cfg.Batch, "batch", cfg.Batch, "keys per push")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per worker")
	f.StringVar(&cfg.Token, "token", "", "cluster token (random when empty)")
	f.DurationVar(&cfg.Heartbeat, "heartbeat", cfg.Heartbeat, "heartbeat period")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "a node silent this long is dead")
	f.DurationVar(&deadline, "deadline", 2*time.Minute, "kill the cluster after this long")
	j := f.JSONOption("the summary")
	f.StringVar(&cfg.Bin, "bin", "", "the colo binary to run (default: this one)")
	f.IntVar(&cfg.Restarts, "restarts", 0, "when a process dies, stop the others and run the whole cluster and smoke job again from the start, up to this many times")
	var mf metrics.Flags
	mf.Register(f.FlagSet)      // every process's, labelled process=NAME
	cfg.TLS.Register(f.FlagSet) // every process's links
	cfg.Log = e.errOut
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	if cfg.Restarts < 0 {
		return usageError("--restarts %d: want 0 or more", cfg.Restarts)
	}
	if err := checkOutputs(output{"--json", j.Path, false}); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	if _, err := cfg.TLS.Load(); err != nil {
		return usageError("%v", err)
	}
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	endMetrics := func(context.Context) error { return nil }
	if mf.Enabled() {
		cm, err := metrics.NewCluster()
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		defer cm.Close()
		if endMetrics, err = mf.Start(cm, e.errOut); err != nil {
			return err
		}
		cfg.Flags = cm.Args
	}
	sum, err := smoke.Launch(ctx, cfg)
	if merr := endMetrics(ctx); merr != nil {
		err = errors.Join(err, merr)
		if sum != nil {
			sum.Error = err.Error()
		}
	}
	if sum != nil {
		if j.Path != "" {
			if err := writeJSON(e, j.Path, sum); err != nil {
				return err
			}
		}
		sum.WriteText(e.out) // standard error when the JSON is on standard output
	}
	return err
}
