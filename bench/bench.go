// Package bench runs partitioning experiments: every partitioner named in
// a configuration on every dataset for every number of machines k, scored
// on the cost model of package placement against random placement, as in
// seed 000 Table 5 and Fig. 10 and seed 001 Fig. 7.
//
// Run is pure apart from the clock it reads to time each partitioner: it
// takes graphs already loaded and returns results; WriteCSV, WriteJSON and
// Figure turn results into files (the command `colo bench partition`
// writes them). The figure has one panel per dataset, the improvement over
// random placement in T_max against k on a log₂ axis, one line per
// algorithm.
//
// Example:
//
//	rs, err := bench.Run([]bench.Dataset{{Name: "a9a", Graph: g}},
//		bench.Config{Ks: []int{2, 4, 8}, Algos: []string{"random", "parsa", "parsa+refine"}, Seed: 1})
//	bench.WriteCSV(os.Stdout, rs)
package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"colo/graph"
	"colo/internal/atomicfile"
	"colo/internal/textio"
	"colo/partition"
	"colo/placement"
)

// Dataset is a named graph to partition.
type Dataset struct {
	Name  string
	Graph *graph.Graph
}

// Config describes an experiment.
type Config struct {
	// Ks are the numbers of machines.
	Ks []int
	// Algos are partitioner names as partition.Lookup takes them, such as
	// "parsa+refine".
	Algos []string
	// Seed seeds every partitioner.
	Seed uint64
	// Options are the partitioners' settings; K and Seed are set per run.
	Options partition.Options
	// Progress, when set, is called before each run.
	Progress func(dataset, algo string, k int)
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if len(c.Ks) == 0 {
		return fmt.Errorf("bench: no k given")
	}
	for _, k := range c.Ks {
		if k < 1 {
			return fmt.Errorf("bench: k = %d: want at least 1", k)
		}
	}
	if len(c.Algos) == 0 {
		return fmt.Errorf("bench: no algorithm given")
	}
	for _, a := range c.Algos {
		if _, err := partition.Lookup(a); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// Result is one run: a partitioner on a dataset for one k.
type Result struct {
	Dataset string  `json:"dataset"`
	Algo    string  `json:"algorithm"`
	K       int     `json:"k"`
	Seconds float64 `json:"seconds"`
	// The cost of the placement.
	MMax       int64 `json:"M_max"`
	TMax       int64 `json:"T_max"`
	TSum       int64 `json:"T_sum"`
	MaxSamples int64 `json:"max_samples"`
	Objective  int64 `json:"objective"`
	// Random is the mean cost of random placements, Improvement the gain
	// over it in percent, (random − x) / x · 100.
	Random      placement.Baseline    `json:"random"`
	Improvement placement.Improvement `json:"improvement_over_random"`
}

// Run runs every algorithm of cfg on every dataset for every k (k larger
// than a dataset's sample count is skipped) and returns the results in
// the order dataset, k, algorithm.
func Run(datasets []Dataset, cfg Config) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var out []Result
	for _, d := range datasets {
		for _, k := range cfg.Ks {
			if k > d.Graph.NumSamples() {
				continue
			}
			base := placement.RandomBaseline(d.Graph, k)
			for _, a := range cfg.Algos {
				if cfg.Progress != nil {
					cfg.Progress(d.Name, a, k)
				}
				f, _ := partition.Lookup(a)
				opt := cfg.Options
				opt.K, opt.Seed = k, cfg.Seed
				start := time.Now()
				p, err := f(d.Graph, opt)
				took := time.Since(start)
				if err != nil {
					return nil, fmt.Errorf("bench: %s on %s, k = %d: %w", a, d.Name, k, err)
				}
				c, err := placement.Evaluate(d.Graph, p, opt.Theta)
				if err != nil {
					return nil, fmt.Errorf("bench: %s on %s, k = %d: %w", a, d.Name, k, err)
				}
				out = append(out, Result{Dataset: d.Name, Algo: a, K: k, Seconds: took.Seconds(),
					MMax: c.MMax, TMax: c.TMax, TSum: c.TSum, MaxSamples: c.MaxSamples, Objective: c.Objective,
					Random: base, Improvement: placement.ImprovementOver(base, c)})
			}
		}
	}
	return out, nil
}

// csvHeader is the first line of WriteCSV.
var csvHeader = []string{"dataset", "algorithm", "k", "seconds", "M_max", "T_max", "T_sum", "max_samples", "objective",
	"random_M_max", "random_T_max", "random_T_sum", "improvement_M_max", "improvement_T_max", "improvement_T_sum", "improvement_objective"}

// WriteCSV writes the results as CSV with a header line; improvements are
// percentages, empty when undefined.
func WriteCSV(w io.Writer, rs []Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	pct := func(x *float64) string {
		if x == nil {
			return ""
		}
		return strconv.FormatFloat(*x, 'f', 2, 64)
	}
	i := func(x int64) string { return strconv.FormatInt(x, 10) }
	for _, r := range rs {
		rec := []string{r.Dataset, r.Algo, strconv.Itoa(r.K), strconv.FormatFloat(r.Seconds, 'f', 4, 64),
			i(r.MMax), i(r.TMax), i(r.TSum), i(r.MaxSamples), i(r.Objective),
			f(r.Random.MMax), f(r.Random.TMax), f(r.Random.TSum),
			pct(r.Improvement.MMax), pct(r.Improvement.TMax), pct(r.Improvement.TSum), pct(r.Improvement.Objective)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable writes rs as a table, a row a result (dataset, k,
// algorithm, seconds, the costs and T_max's improvement over random), as
// colo bench partition prints it.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "dataset\tk\talgorithm\tseconds\tM_max\tT_max\tT_sum\tmax|U_i|\tT_max impr.\t\n")
	for _, r := range rs {
		imp := "-"
		if r.Improvement.TMax != nil {
			imp = fmt.Sprintf("%+.1f%%", *r.Improvement.TMax)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\t\n", r.Dataset, r.K, r.Algo, r.Seconds,
			textio.Commas(r.MMax), textio.Commas(r.TMax), textio.Commas(r.TSum), textio.Commas(r.MaxSamples), imp)
	}
	return tw.Flush()
}

// WriteJSON writes the results as an indented JSON array.
func WriteJSON(w io.Writer, rs []Result) error {
	if rs == nil {
		rs = []Result{}
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Files returns the names of the files WriteDir writes.
func Files() []string {
	return []string{"bench.csv", "bench.json", "improvement.svg", "improvement.png"}
}

// WriteDir writes the results to dir (made if missing): bench.csv
// (WriteCSV), bench.json (WriteJSON), and improvement.svg and .png
// (Figure, whose title names the settings), each atomically.
func WriteDir(dir string, rs []Result, settings string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, write := range []func(io.Writer, []Result) error{WriteCSV, WriteJSON} {
		err := atomicfile.Write(filepath.Join(dir, Files()[i]), func(w io.Writer) error { return write(w, rs) })
		if err != nil {
			return err
		}
	}
	return Figure(rs, settings).Save(filepath.Join(dir, Files()[2]))
}

// DatasetName is a short name for a dataset path: its base name without
// compression and format extensions.
func DatasetName(path string) string {
	name := filepath.Base(path)
	for _, ext := range []string{".xz", ".gz", ".zst", ".bz2", ".libsvm", ".txt"} {
		name = strings.TrimSuffix(name, ext)
	}
	return name
}
