// Command colo places training data and model parameters on the machines
// of a parameter-server cluster so that they talk as little as possible.
//
// Run `colo help` for the list of commands and `colo CMD -h` for the flags
// of one. Every command is a thin layer that fills a configuration and
// calls a library package; see the README for the map of packages.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand of colo.
type command struct {
	name    string
	summary string
	run     func(env *env, args []string) error
}

// env carries what a command may touch: its output streams. Commands write
// results to out and progress and diagnostics to errOut.
type env struct {
	out    io.Writer
	errOut io.Writer
	// isTerminal reports whether errOut is a terminal (progress bars).
	isTerminal bool
}

// commands lists every subcommand in the order help shows them.
func commands() []command {
	return []command{
		{"demo", "place the shipped 20 Newsgroups sample on 4 machines and print the cost table", runDemo},
		{"stats", "print the size and degree distribution of a dataset", runStats},
		{"partition", "place samples and parameters on k machines and write the part files", runPartition},
		{"eval", "score a placement made by colo or another tool on colo's cost model", runEval},
		{"bench", "benchmarks: partitioners over datasets and k (partition), parameter-server push/pull (kv), seed 004's sharding study (sharding), seed 003's decentralised comparison (rcd)", runBench},
		{"convert", "write a dataset as an hMETIS hypergraph or as libsvm", runConvert},
		{"gen", "generate a synthetic sparse or power-law dataset in libsvm format", runGen},
		{"shard", "split a labelled dense dataset among workers: stratified, distaware, submodular", runShard},
		{"train", "train a model (lr, mf, mlp, cnn) on a parameter server with the data placed, or compare placements; --mode decentralised: gossip without servers", runTrain},
		{"node", "run a parameter-server node: scheduler, server, worker or machine", runNode},
		{"launch", "start a parameter-server cluster of processes on loopback and run a smoke job", runLaunch},
	}
}

// errUsage marks errors that come from the command line rather than from
// the work; they exit with status 2.
var errUsage = errors.New("usage")

// usageError returns an error that exits with status 2.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func main() {
	e := &env{out: os.Stdout, errOut: os.Stderr, isTerminal: isTerminal(os.Stderr)}
	os.Exit(run(e, os.Args[1:]))
}

// run executes one command line and returns the exit status.
func run(e *env, args []string) int {
	if len(args) == 0 {
		printHelp(e.errOut)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			return run(e, []string{args[1], "-h"})
		}
		printHelp(e.out)
		return 0
	case "version", "--version":
		fmt.Fprintln(e.out, "colo", version)
		return 0
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(e, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(e.errOut, "colo %s: %s\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
			fmt.Fprintf(e.errOut, "run 'colo %s -h' for usage\n", name)
			return 2
		default:
			fmt.Fprintf(e.errOut, "colo %s: %v\n", name, err)
			return 1
		}
	}
	fmt.Fprintf(e.errOut, "colo: unknown command %q\n", name)
	printHelp(e.errOut)
	return 2
}

// version is the release of this build.
const version = "0.1.0-dev"

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "colo places training samples on workers and model parameters on servers")
	fmt.Fprintln(w, "so that a parameter-server cluster talks as little as possible.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: colo COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help       show this help, or 'colo help COMMAND' for one command")
	fmt.Fprintln(w, "  version    print the version")
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
