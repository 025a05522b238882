package main

import "colo/internal/cli"

// flagSection is a titled group of a command's flags in its -h.
type flagSection = cli.Section

// trainSections groups colo train's flags, in both modes, for -h: a mode
// lists only the flags it takes (see dropServerFlags), so a section may
// be shorter or absent in one of them. TestTrainHelpSections keeps every
// flag in a section.
var trainSections = []flagSection{
	{Title: "Mode", Flags: []string{"mode"}},
	{Title: "Data", Flags: []string{"spec", "test", "labels", "test-labels", "label-col", "standardize", "header", "sep", "format", "index-base", "hash-bits",
		"drop-self-loops", "holdout", "features", "memory-budget"}},
	{Title: "Model and training", Flags: []string{"app", "hidden", "interactions", "conv-channels", "threads", "rank", "dim", "negatives", "uniform-negatives", "uniform-pool",
		"eval-negatives", "updater", "lr", "l1", "l2", "lr-scaling", "lr-decay", "batch", "batch-weighted", "epochs", "max-passes",
		"max-steps", "epsilon", "loss-target", "eval-every", "seed"}},
	{Title: "Placement", Flags: []string{"machines", "servers", "placement", "shard", "compare", "directions", "balance", "balance-every", "slice", "probe"}},
	{Title: "Consistency", Flags: []string{"consistency", "async-step", "overlap", "pull-ahead"}},
	{Title: "Decentralised training", Flags: []string{"topology", "weights", "local-steps", "matcha", "budget", "order", "worker-speeds", "submodular"}},
	{Title: "Links", Flags: []string{"link-bandwidth", "bandwidth-matrix", "bandwidth-random", "bandwidth-change", "transport"}},
	{Title: "Processes", Flags: []string{"processes", "netns", "deadline", "restarts", "recovery", "replicas", "tls-cert", "tls-key", "tls-ca", "write-job"}},
	{Title: "Checkpoints", Flags: []string{"checkpoint", "checkpoint-every", "checkpoint-wait", "checkpoint-durable", "checkpoint-incremental", "resume", "resume-override"}},
	{Title: "Observability", Flags: []string{"json", "svg", "trace", "dashboard", "metrics", "metrics-file", "linger"}},
}
