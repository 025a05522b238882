package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"colo/clib/kind"
)

func runRun(e *env, args []string) error {
	f := newFlags(e, "run", "colo run --machines K [flags] [--] PROGRAM [ARGS]",
		"Starts a parameter-server cluster of processes on loopback whose workers\n"+
			"are K copies of PROGRAM, a program linked with colo's client (the Python\n"+
			"package colo: colo.init() reads the cluster from the environment), as\n"+
			"torchrun does: a scheduler, and K machines (each PROGRAM runs a server\n"+
			"beside its worker), or --servers S servers apart from the K workers.\n"+
			"The servers run --rule for every key. A worker that exits non-zero ends\n"+
			"the job naming it. With --netns each host is a network namespace whose\n"+
			"link tc shapes. The workers also get torchrun's variables (RANK,\n"+
			"WORLD_SIZE, MASTER_ADDR, MASTER_PORT, …). PROGRAM's flags follow it, -- or not.")
	r := kind.DefaultRun()
	r.Register(f.FlagSet)
	f.Alias("k", "machines")
	f.Program = true // PROGRAM's flags are its own, with or without --
	pos, err := f.parse(args, 1, -1)
	if err != nil {
		return err
	}
	r.Program, r.Out = pos, e.out
	if err := r.Validate(); err != nil {
		return usageError("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := r.Execute(ctx)
	if err != nil {
		return err
	}
	for _, s := range res.NoReport {
		fmt.Fprintf(e.errOut, "colo run: %s\n", s)
	}
	fmt.Fprintf(e.errOut, "colo run: %s\n", res)
	return nil
}
