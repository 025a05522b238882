package main

import (
	"context"
	"fmt"
	"time"

	"colo/bench/kv"
	"colo/internal/tempdir"
	"colo/launch"
	"colo/metrics"
)

func runBenchKV(e *env, args []string) error {
	f := newFlags(e, "bench kv", "colo bench kv [flags]",
		"Measures push and pull through the whole parameter-server path over TCP\n"+
			"loopback: 1 server × 1 worker and 2 × 2, summing servers, one request in\n"+
			"flight per worker. Sparse requests carry random keys with one float32\n"+
			"each; dense requests one range of float32 that the servers share. After\n"+
			"each line the same traffic runs without colo, as bare length-prefixed\n"+
			"messages over TCP connections of the same shape (plain MB/s): what the\n"+
			"machine gives at that moment. Prints a table, or with --json the records\n"+
			"under \"results\", each {mode, servers, workers, op, keys_per_s, mb_per_s, p50_us,\n"+
			"p99_us, requests, seconds, cpu_us, plain_mb_per_s}. MB/s counts 12 bytes per\n"+
			"sparse key (key and value) and 4 per dense value; cpu_us is the process's CPU per request.")
	cfg := kv.DefaultConfig()
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long each request kind runs on each shape")
	f.IntVar(&cfg.SparseKeys, "sparse-keys", cfg.SparseKeys, "keys of a sparse request")
	f.IntVar(&cfg.DenseVals, "dense-values", cfg.DenseVals, "float32 values of a dense request")
	j := f.JSONOption("the records")
	var mf metrics.Flags
	mf.Register(f.FlagSet)
	var tf launch.TLSFlags
	tf.Register(f.FlagSet)
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	if err := checkOutputs(output{"--json", j.Path, false}); err != nil {
		return err
	}
	tlsConfig, err := tf.Load()
	if err != nil {
		return usageError("%v", err)
	}
	cfg.TLS = tlsConfig
	mon, err := metrics.StartJob(mf, e.errOut)
	if err != nil {
		return usageError("%v", err)
	}
	defer mon.End(context.Background())
	cfg.Watch = mon.Watch
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	ctx, stop := tempdir.Stop(context.Background())
	defer stop()
	start := time.Now()
	recs, err := kv.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if j.Path != "" {
		if err := writeJSON(e, j.Path, recs); err != nil {
			return err
		}
	}
	if err := kv.WriteTable(e.out, recs); err != nil {
		return err
	}
	over := "TCP loopback"
	if cfg.TLS != nil {
		over = "mutual TLS 1.3 over TCP loopback"
	}
	fmt.Fprintf(e.out, "\n%s, one request in flight per worker; %v per line and as much again\nfor its plain TCP reference (without TLS); %.1f s in all\n", over, cfg.Duration, time.Since(start).Seconds())
	return nil
}
