package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
)

// flagSection is a titled group of a command's flags in its -h.
type flagSection struct {
	title string
	flags []string
}

// trainSections groups colo train's flags, in both modes, for -h: a mode
// lists only the flags it takes (see dropServerFlags), so a section may
// be shorter or absent in one of them. TestTrainHelpSections keeps every
// flag in a section.
var trainSections = []flagSection{
	{"Mode", []string{"mode"}},
	{"Data", []string{"spec", "test", "labels", "test-labels", "label-col", "standardize", "header", "sep", "format", "index-base", "hash-bits",
		"drop-self-loops", "holdout", "features", "memory-budget"}},
	{"Model and training", []string{"app", "hidden", "conv-channels", "rank", "dim", "negatives", "uniform-negatives", "uniform-pool",
		"eval-negatives", "updater", "lr", "l1", "l2", "lr-scaling", "lr-decay", "batch", "batch-weighted", "epochs", "max-passes",
		"max-steps", "epsilon", "loss-target", "eval-every", "seed"}},
	{"Placement", []string{"machines", "servers", "placement", "shard", "compare", "directions", "balance", "balance-every", "slice", "probe"}},
	{"Consistency", []string{"consistency", "overlap", "pull-ahead"}},
	{"Decentralised training", []string{"topology", "weights", "local-steps", "matcha", "budget", "order", "worker-speeds", "submodular"}},
	{"Links", []string{"link-bandwidth", "bandwidth-matrix", "bandwidth-random", "bandwidth-change", "transport"}},
	{"Processes", []string{"processes", "netns", "deadline", "restarts", "recovery", "tls-cert", "tls-key", "tls-ca", "write-job"}},
	{"Checkpoints", []string{"checkpoint", "checkpoint-every", "checkpoint-wait", "resume", "resume-override"}},
	{"Observability", []string{"json", "svg", "trace", "dashboard", "metrics", "metrics-file", "linger"}},
}

// printSections writes f's flags section by section, each flag once,
// and those of no section last under "Other".
func (f *cmdFlags) printSections(w io.Writer, sections []flagSection) {
	listed := map[string]bool{}
	for _, s := range sections {
		var fls []*flag.Flag
		for _, name := range s.flags {
			if fl := f.Lookup(name); fl != nil && !listed[name] {
				fls = append(fls, fl)
				listed[name] = true
			}
		}
		if len(fls) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", s.title)
		f.printFlagList(w, fls)
	}
	var rest []*flag.Flag
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.aliases[fl.Name]; !alias && !listed[fl.Name] {
			rest = append(rest, fl)
		}
	})
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nOther:\n")
		f.printFlagList(w, rest)
	}
}

// unsectioned returns f's flags that no section of sections lists.
func (f *cmdFlags) unsectioned(sections []flagSection) []string {
	var out []string
	f.VisitAll(func(fl *flag.Flag) {
		if _, alias := f.aliases[fl.Name]; alias {
			return
		}
		for _, s := range sections {
			if slices.Contains(s.flags, fl.Name) {
				return
			}
		}
		out = append(out, fl.Name)
	})
	return out
}
