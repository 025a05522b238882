package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"colo/clib"
	"colo/launch"
	"colo/ps/update"
)

func runRun(e *env, args []string) error {
	f := newFlags(e, "run", "colo run --machines K [flags] -- PROGRAM [ARGS]",
		"Starts a parameter-server cluster of processes on loopback whose workers\n"+
			"are K copies of PROGRAM, a program linked with colo's client (the Python\n"+
			"package colo: colo.init() reads the cluster from the environment), as\n"+
			"torchrun does: a scheduler, and K machines (each PROGRAM runs a server\n"+
			"beside its worker), or --servers S servers apart from the K workers.\n"+
			"The servers run --rule for every key. A worker that exits non-zero ends\n"+
			"the job naming it.")
	job := clib.DefaultJob()
	var machines, servers int
	var placementDir, token string
	var deadline time.Duration
	rc := update.DefaultConfig()
	f.IntVar(&machines, "machines", 0, "number of copies of PROGRAM (workers), K")
	f.Alias("k", "machines")
	f.IntVar(&servers, "servers", 0, "run this many servers apart from the workers (0: each PROGRAM hosts one)")
	f.StringVar(&placementDir, "placement", "", "route the placement's parameters (DIR/param.part, colo partition's) to the servers it chose: a table declared placed=True keys row r as parameter r")
	f.StringVar(&job.Consistency, "consistency", job.Consistency, "bsp, async or bounded")
	f.IntVar(&job.Tau, "tau", 0, "delay bound of --consistency bounded")
	f.StringVar(&rc.Name, "rule", "sum", "the servers' update rule: sum, sgd, momentum, adagrad or adam")
	f.Float64Var(&rc.LR, "lr", rc.LR, "learning rate of --rule")
	f.Float64Var(&rc.Eps, "eps", 1e-10, "epsilon of adagrad and adam (PyTorch's Adagrad: 1e-10, Adam: 1e-8)")
	f.Float64Var(&rc.Momentum, "momentum", rc.Momentum, "momentum of --rule momentum")
	f.Float64Var(&rc.Beta1, "beta1", rc.Beta1, "Adam's beta1")
	f.Float64Var(&rc.Beta2, "beta2", rc.Beta2, "Adam's beta2")
	f.StringVar(&job.LinkBandwidth, "link-bandwidth", "", "emulate links of this rate between machines, such as 100mbit")
	f.StringVar(&job.BandwidthMatrix, "bandwidth-matrix", "", "emulate the rates of this matrix file between machines")
	f.StringVar(&token, "token", "", "cluster token (random when empty)")
	f.DurationVar(&deadline, "deadline", 0, "stop the job after this long (0: no bound)")
	pos, err := f.parse(args, 1, -1)
	if err != nil {
		return err
	}
	if machines < 1 {
		return usageError("--machines %d: want the number of copies of %s, at least 1", machines, pos[0])
	}
	if servers < 0 {
		return usageError("--servers %d: want 0 or more", servers)
	}
	job.Rule = rc
	// The workers' output goes to a file per rank, which colo run copies
	// to its own standard output line by line, prefixed with the rank.
	logs, err := os.MkdirTemp("", "colo-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(logs)
	script := `exec "$0" "$@" >>'` + logs + `/worker-'"$COLO_RANK"'.log' 2>&1`
	c := &launch.Cluster{Token: token, Worker: &launch.Command{Path: "/bin/sh", Args: append([]string{"-c", script}, pos...)}}
	if servers > 0 {
		job.Servers, job.Workers = servers, machines
		c.Servers, c.Workers = servers, machines
	} else {
		job.Machines = machines
		c.Machines = machines
	}
	if placementDir != "" {
		if job.Route, err = clib.PlacedRoute(placementDir, max(servers, machines)); err != nil {
			return usageError("--placement: %v", err)
		}
	}
	if err := job.Validate(); err != nil {
		return usageError("%v (--consistency, --tau, --rule, …)", err)
	}
	if _, err := job.Rates(); err != nil {
		return usageError("--link-bandwidth, --bandwidth-matrix: %v", err)
	}
	// The children lose COLO_* variables (they are colo node's flags):
	// keep the ones of the client library and the examples.
	for _, k := range []string{"COLO_LIBRARY", "COLO_DATA"} {
		if v := os.Getenv(k); v != "" {
			c.Worker.Env = append(c.Worker.Env, k+"="+v)
		}
	}
	if c.Envelope, err = launch.NewEnvelope(clib.JobKind, job); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		defer cancel()
	}
	t0 := time.Now()
	stopFollow := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	for r := range machines {
		wg.Go(func() {
			launch.Follow(filepath.Join(logs, fmt.Sprintf("worker-%d.log", r)), fmt.Sprintf("[worker %d] ", r), e.out, &mu, stopFollow)
		})
	}
	out, err := c.Run(ctx)
	close(stopFollow)
	wg.Wait()
	if err != nil {
		return err
	}
	inner, inter := uint64(0), uint64(0)
	for _, m := range out.Members {
		if m.Report == nil {
			fmt.Fprintf(e.errOut, "colo run: %s wrote no report: %v\n", m.Name, m.ReportErr)
			continue
		}
		inner += m.Report.Node.Stats.Inner.BytesSent
		inter += m.Report.Node.Stats.Inter.BytesSent
	}
	fmt.Fprintf(e.errOut, "colo run: %d workers finished in %.1f s; %.1f MB sent between machines (the scheduler's included), %.1f MB within them\n",
		machines, time.Since(t0).Seconds(), float64(inter)/1e6, float64(inner)/1e6)
	return nil
}
