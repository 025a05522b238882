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
	"runtime/pprof"
	"strings"

	"colo/internal/atomicfile"
	"colo/internal/cli"
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
	// json is standard output when --json sends the JSON there and out
	// has been turned to errOut; nil otherwise.
	json io.Writer
	// flags are the command's parsed flags, recorded in its JSON.
	flags *cmdFlags
	// complete, when set, asks commands to list their flags instead of
	// running (colo __complete).
	complete *completing
}

// stdout is where "-" writes: standard output, even when the human
// output has been turned to standard error.
func (e *env) stdout() io.Writer {
	if e.json != nil {
		return e.json
	}
	return e.out
}

// commands lists every subcommand in the order help shows them.
func commands() []command {
	return []command{
		{"demo", "train on the shipped 20 Newsgroups sample on 4 machines, placed at random and by Parsa, and print time, traffic and accuracy side by side", runDemo},
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
		{"run", "run K copies of a program linked with colo's client (python3 train.py) as the workers of a cluster on loopback", runRun},
		{"version", "print the version, VCS revision and Go release of this build", runVersion},
		{"completion", "print the script that completes colo's commands and flags in bash, zsh or fish", runCompletion},
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
	stop, err := profile(os.Getenv("COLO_CPUPROFILE"))
	if err != nil {
		fmt.Fprintf(e.errOut, "colo: COLO_CPUPROFILE: %v\n", err)
		os.Exit(2)
	}
	code := run(e, os.Args[1:])
	stop()
	os.Exit(code)
}

// profile starts a CPU profile of the whole command into path (nothing
// when path is empty) and returns the function that writes it out: go
// tool pprof reads it.
func profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Abort()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Commit(); err != nil {
			fmt.Fprintf(os.Stderr, "colo: COLO_CPUPROFILE: %v\n", err)
		}
	}, nil
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
	case "--version":
		fmt.Fprintln(e.out, cli.ReadBuild())
		return 0
	case "__complete":
		return runComplete(e, args[1:])
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
			fmt.Fprintf(e.errOut, "colo %s: %s\n", name, e.flags.flagNames(strings.TrimPrefix(err.Error(), errUsage.Error()+": ")))
			help := name
			if e.flags != nil && e.flags.Name() != "" {
				help = e.flags.Name() // the mode's or benchmark's own: train --mode decentralised, bench rcd
			}
			fmt.Fprintf(e.errOut, "run 'colo %s -h' for usage\n", help)
			return 2
		default:
			fmt.Fprintf(e.errOut, "colo %s: %v\n", name, e.flags.flagNames(err.Error()))
			return 1
		}
	}
	names := []string{"help", "version"}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := cli.Suggest(name, names); s != "" {
		fmt.Fprintf(e.errOut, "colo: unknown command %q: did you mean %s?\n", name, s)
		fmt.Fprintf(e.errOut, "run 'colo help' for the list of commands\n")
		return 2
	}
	fmt.Fprintf(e.errOut, "colo: unknown command %q\n", name)
	printHelp(e.errOut)
	return 2
}

// runVersion prints the build: module version, VCS revision and whether
// the tree was modified, from the binary's build information.
func runVersion(e *env, args []string) error {
	f := newFlags(e, "version", "colo version [--json]",
		"Prints colo's module version, the version-control revision it was built\n"+
			"from (and whether the tree had changes), the commit time and the Go\n"+
			"release, from the build information the Go toolchain stores in the\n"+
			"binary. A binary built by go run or go test has version (devel).")
	j := f.JSONOption("the build")
	if _, err := f.parse(args, 0, 0); err != nil {
		return err
	}
	if j.Path != "" {
		return writeJSON(e, j.Path, struct{}{})
	}
	fmt.Fprintln(e.out, cli.ReadBuild())
	return nil
}

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
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Conventions of every command:")
	fmt.Fprintln(w, "  --json[=FILE]  the result as one JSON document on standard output (alone or -)")
	fmt.Fprintln(w, "                 or in FILE; with it on standard output, nothing else is: tables")
	fmt.Fprintln(w, "                 and messages go to standard error. Every JSON document starts")
	fmt.Fprintln(w, "                 with the version and the final value of every flag (\"options\").")
	fmt.Fprintln(w, "  -o -           standard output, wherever -o names one file")
	fmt.Fprintln(w, "  --machines K   the number of machines (-k for short; --workers, -n and --k,")
	fmt.Fprintln(w, "                 the older spellings, still work)")
	fmt.Fprintln(w, "  Lists (a,b,c) are checked before any work; flags may follow the files.")
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
