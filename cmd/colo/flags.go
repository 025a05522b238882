package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"colo/features"
	"colo/graph"
	"colo/internal/membudget"
	"colo/table"
)

// cmdFlags is a flag set for one subcommand with its usage text.
type cmdFlags struct {
	*flag.FlagSet
	e     *env
	usage string // "colo partition [flags] FILE -o DIR"
	about string // a paragraph on what the command does
	// json is --json when the command has it (jsonOption).
	json *jsonFlag
	// aliases maps other spellings of a flag to the flag (alias).
	aliases map[string]string
	// pos are the positional arguments parse found.
	pos []string
	// sections, when set, group the flags in -h (printSections).
	sections []flagSection
	// refused maps the flags this command does not take (drop, refuse)
	// to why, for the error that names them.
	refused map[string]string
}

func newFlags(e *env, name, usage, about string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cmdFlags{FlagSet: fs, e: e, usage: usage, about: about}
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
		f.completeFlags(f.e.out, c)
		return nil, errCompleted
	}
	f.e.flags = f // also for the error of a parse that fails: its flag names and its -h
	args = f.joinJSON(args)
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.printUsage(f.e.out)
				return nil, err
			}
			return nil, usageError("%v", f.didYouMean(err))
		}
		if f.NArg() == 0 {
			break
		}
		rest := f.Args()
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) < minPos {
		return nil, usageError("expected %s, got %d argument(s)", argWord(minPos, maxPos), len(pos))
	}
	if maxPos >= 0 && len(pos) > maxPos {
		return nil, usageError("expected %s, got %d: %s", argWord(minPos, maxPos), len(pos), strings.Join(pos, " "))
	}
	f.pos = pos
	f.e.flags = f
	f.routeJSON()
	return pos, nil
}

// joinJSON turns "--json FILE" into "--json=FILE" when FILE is - or ends
// in .json, the forms a file-valued --json took before it could stand
// alone.
func (f *cmdFlags) joinJSON(args []string) []string {
	if f.json == nil {
		return args
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--json" || a == "-json") && i+1 < len(args) {
			next := args[i+1]
			if next == "-" || (strings.HasSuffix(strings.ToLower(next), ".json") && !strings.HasPrefix(next, "-")) {
				out = append(out, a+"="+next)
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

func argWord(lo, hi int) string {
	switch {
	case lo == hi && lo == 1:
		return "one file argument"
	case lo == hi:
		return fmt.Sprintf("%d arguments", lo)
	case hi < 0:
		return fmt.Sprintf("at least %d argument(s)", lo)
	default:
		return fmt.Sprintf("%d to %d arguments", lo, hi)
	}
}

func (f *cmdFlags) printUsage(w io.Writer) {
	if f.sections != nil {
		fmt.Fprintf(w, "Usage: %s\n\n%s\n", f.usage, f.about)
		f.printSections(w, f.sections)
		return
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", f.usage, f.about)
	f.printFlags(w)
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
