package main

import (
	"errors"
	"flag"
	"strings"
	"time"

	"colo/features"
	"colo/graph"
	"colo/internal/cli"
	"colo/internal/membudget"
	"colo/table"
)

// cmdFlags is the flag set of one subcommand (cli.Flags) and the env it
// runs in.
type cmdFlags struct {
	*cli.Flags
	e *env
}

// jsonFlag is --json[=FILE] (cli.JSONFlag).
type jsonFlag = cli.JSONFlag

func newFlags(e *env, name, usage, about string) *cmdFlags {
	return &cmdFlags{Flags: cli.New(name, usage, about), e: e}
}

// parse parses flags and positional arguments in any order (flags may
// follow the file names) and checks the number of positional arguments.
// With -h it prints the usage to standard output and returns flag.ErrHelp.
//
// After a successful parse the command's JSON output is headed by these
// flags (writeJSON), and with --json on standard output the human output
// goes to standard error.
func (f *cmdFlags) parse(args []string, minPos, maxPos int) ([]string, error) {
	if c := f.e.complete; c != nil {
		f.Complete(f.e.out, c.word, c.prev, func(name string) []string { return cli.Choices(f.Name(), name) })
		return nil, errCompleted
	}
	f.e.flags = f // also for the error of a parse that fails: its flag names and its -h
	pos, err := f.Split(args)
	if errors.Is(err, flag.ErrHelp) {
		f.PrintUsage(f.e.out)
		return nil, err
	} else if err != nil {
		return nil, usageError("%v", f.DidYouMean(err))
	}
	if err := f.CheckArgs(args, pos, minPos, maxPos); err != nil {
		return nil, usageError("%v", err)
	}
	f.Pos = pos
	f.e.flags = f
	f.routeJSON()
	return pos, nil
}

// dataFlags are the flags of every command that reads a dataset.
type dataFlags struct {
	format    string
	indexBase int
	noSelf    bool
	hashBits  int
	memory    string
	// spec is --spec: feature columns that read the file as a table.
	spec string
	// fitted is the spec fitted by load (or read from --spec's file).
	fitted *features.Fitted
}

func (d *dataFlags) register(f *cmdFlags) {
	f.StringVar(&d.format, "format", "", "input format: libsvm, snap, snap-undirected, criteo or ratings (detected from the content when empty; ratings never is)")
	f.IntVar(&d.indexBase, "index-base", -1, "libsvm: 0 or 1 for 0- or 1-based feature indices (-1 detects)")
	f.BoolVar(&d.noSelf, "drop-self-loops", false, "snap: drop edges from a node to itself")
	f.IntVar(&d.hashBits, "hash-bits", graph.DefaultHashBits, "criteo: hash features into 2^b buckets")
	registerMemoryBudget(f, &d.memory)
	f.StringVar(&d.spec, "spec", "", "read FILE as a table (Parquet, CSV, JSON lines) through feature columns: a `SPEC` such as\n'delay > 15 ~ origin + destination + origin*destination + hour(date) + quantile(distance, 16); test: date >= 2001-06-01',\na JSON file of one, or the features.json a placement saved (docs/ctr.md); the training rows are read")
}

// registerMemoryBudget registers --memory-budget (membudget.Flag), the
// memory budget of the loaders, into *s.
func registerMemoryBudget(f *cmdFlags, s *string) {
	f.StringVar(s, strings.TrimPrefix(membudget.Flag, "--"), "auto", "refuse input whose loading would need more memory than `SIZE` (512MiB, 4GB), or lines\n"+
		"longer than a sixteenth of it (1 MiB to 64 MiB); auto: three quarters of the memory available\n(MemAvailable, the cgroup's limit, ulimit -v); off: no budget")
}

// parseMemoryBudget reads --memory-budget: a usage error names the flag.
func parseMemoryBudget(s string) (int64, error) {
	b, err := membudget.Parse(s)
	if err != nil {
		return 0, usageError("%s: %v", membudget.Flag, err)
	}
	return b, nil
}

// options turns the flags into loader options; a bad combination is a
// usage error.
func (d *dataFlags) options() (graph.LoadOptions, error) {
	opt := graph.LoadOptions{
		Format:        graph.Format(d.format),
		IndexBase:     d.indexBase,
		DropSelfLoops: d.noSelf,
		HashBits:      d.hashBits,
	}
	var err error
	if opt.Memory, err = parseMemoryBudget(d.memory); err != nil {
		return opt, err
	}
	if err := opt.Validate(); err != nil {
		return opt, usageError("%v", err)
	}
	return opt, nil
}

// load reads the dataset at path with the loader options of the flags and
// returns it with the time the loading took (not the checking of the
// flags). Bad flags are usage errors; a bad file names the file and line.
func (d *dataFlags) load(path string) (*graph.Graph, time.Duration, error) {
	if d.spec != "" {
		start := time.Now()
		fit, err := d.fit(path)
		if err != nil {
			return nil, 0, err
		}
		topt, err := d.tableOptions()
		if err != nil {
			return nil, 0, err
		}
		g, err := fit.Graph(path, features.Train, topt)
		if err != nil {
			return nil, 0, err
		}
		return g, time.Since(start), nil
	}
	opt, err := d.options()
	if err != nil {
		return nil, 0, err
	}
	return loadGraph(path, opt)
}

// fit returns the fitted feature columns of --spec for the table at path:
// the spec's file when it is a fitted spec (the features.json of a
// placement), otherwise the spec fitted on the table's training rows.
func (d *dataFlags) fit(path string) (*features.Fitted, error) {
	if d.fitted != nil {
		return d.fitted, nil
	}
	spec, fitted, err := features.Read(d.spec)
	if err != nil {
		return nil, usageError("--spec: %v", err)
	}
	if fitted == nil {
		topt, err := d.tableOptions()
		if err != nil {
			return nil, err
		}
		if fitted, err = features.Fit(path, spec, topt); err != nil {
			return nil, err
		}
	}
	d.fitted = fitted
	return fitted, nil
}

// tableOptions returns the options of a table's reader: --memory-budget
// bounds each row group (or batch of lines) it reads.
func (d *dataFlags) tableOptions() (table.Options, error) {
	limit, err := parseMemoryBudget(d.memory)
	if err != nil {
		return table.Options{}, err
	}
	return features.TableOptions(limit), nil
}
