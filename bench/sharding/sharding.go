// Package sharding is the study of seed 004 (§IV, Tables II–V): does
// systematic sharding stabilise asynchronous parameter-server training?
// For each sharding scheme it trains the same dense model several times
// with different seeds (a seed changes the shards' draw, the initial
// parameters and the batches), and reports, per scheme, the mean and the
// variance over the runs of the final training loss and accuracy and of
// the validation loss and accuracy (Table II), the variance of each
// against random sharding's, the spread of the per-class validation
// accuracy, and box plots of the final validation accuracy.
//
// The runs train in this process (deploy.InProcess) one after another
// on the data loaded once; Run takes the job every run starts from.
//
//	res, err := sharding.Run(ctx, sharding.Config{Job: job, Schemes: []string{"random", "stratified"}, Runs: 5}, data)
//	sharding.WriteDir("out", res)
package sharding

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"colo/app"
	"colo/internal/atomicfile"
	"colo/train"
	"colo/train/deploy"
)

// Config is a study.
type Config struct {
	// Job is the job every run starts from: a dense application, its
	// data, machines, consistency (seed 004: async) and epochs.
	Job train.Job
	// Schemes are the placements compared: sharding schemes
	// (dense.ParseScheme), the first the baseline of the ratios (random
	// in seed 004).
	Schemes []string
	// Runs is the number of trainings per scheme; run r of every scheme
	// uses the seed Job.Config.Seed + r.
	Runs int
	// Progress, when set, is called after every run.
	Progress func(scheme string, run int, r *RunResult)
}

// Validate checks c; errors name the field.
func (c Config) Validate() error {
	if len(c.Schemes) == 0 {
		return fmt.Errorf("sharding: no schemes")
	}
	if c.Runs < 2 {
		return fmt.Errorf("sharding: runs %d: want at least 2, for a variance", c.Runs)
	}
	for _, s := range c.Schemes {
		if err := app.CheckPlacement(c.Job.App, s); err != nil {
			return fmt.Errorf("sharding: %w", err)
		}
	}
	return c.Job.Validate()
}

// RunResult is one training's final figures.
type RunResult struct {
	Scheme string `json:"scheme"`
	Seed   uint64 `json:"seed"`
	// TrainLoss and TrainAccuracy are the last epoch's training figures,
	// each sample at the model of its round.
	TrainLoss     float64 `json:"train_loss"`
	TrainAccuracy float64 `json:"train_accuracy"`
	// ValLoss, ValAccuracy and ClassAccuracy score the trained model on
	// the validation (test) set.
	ValLoss       float64   `json:"validation_loss"`
	ValAccuracy   float64   `json:"validation_accuracy"`
	ClassAccuracy []float64 `json:"validation_class_accuracy"`
	Seconds       float64   `json:"seconds"`
	Epochs        int       `json:"epochs"`
}

// Stat is the mean and the sample variance of a figure over the runs.
type Stat struct {
	Mean     float64 `json:"mean"`
	Variance float64 `json:"variance"`
}

// Row is a scheme's line of Table II.
type Row struct {
	Scheme        string `json:"scheme"`
	Runs          int    `json:"runs"`
	TrainLoss     Stat   `json:"train_loss"`
	TrainAccuracy Stat   `json:"train_accuracy"`
	ValLoss       Stat   `json:"validation_loss"`
	ValAccuracy   Stat   `json:"validation_accuracy"`
	// VarianceRatio is the baseline scheme's variance of each figure
	// divided by this scheme's: above 1, this scheme is the more stable.
	VarianceRatio map[string]float64 `json:"variance_ratio_to_baseline"`
	// ClassSpread is, over the classes, the mean of the standard deviation
	// of a class's validation accuracy across the runs; ClassSpreadMax its
	// largest.
	ClassSpread    float64 `json:"class_accuracy_spread_mean"`
	ClassSpreadMax float64 `json:"class_accuracy_spread_max"`
}

// Result is a whole study.
type Result struct {
	// Dataset names the data (the caller's).
	Dataset     string      `json:"dataset,omitempty"`
	App         string      `json:"app"`
	Machines    int         `json:"machines"`
	Consistency string      `json:"consistency"`
	Epochs      int         `json:"epochs"`
	Batch       int         `json:"batch"`
	Runs        []RunResult `json:"runs"`
	Table       []Row       `json:"table"`
}

// Run runs the study on data, loaded once for the job (app.Open's).
func Run(ctx context.Context, cfg Config, data *app.Data) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &Result{App: cfg.Job.App, Machines: cfg.Job.Config.Machines, Consistency: cfg.Job.Config.Clock.Name(),
		Epochs: cfg.Job.Config.MaxPasses, Batch: cfg.Job.Config.Batch}
	for _, scheme := range cfg.Schemes {
		for r := range cfg.Runs {
			job := cfg.Job
			job.Placement, job.Config.Seed = scheme, cfg.Job.Config.Seed+uint64(r)
			opened, err := app.OpenData(job, data)
			if err != nil {
				return nil, err
			}
			p, _, err := opened.Place(job)
			if err != nil {
				return nil, err
			}
			tr, err := train.Run(ctx, job, opened.App, p, deploy.InProcess{})
			if err != nil {
				return nil, fmt.Errorf("%s run %d (seed %d): %w", scheme, r+1, job.Config.Seed, err)
			}
			rr := RunResult{Scheme: scheme, Seed: job.Config.Seed, TrainLoss: tr.FinalTrainLoss, Seconds: tr.TotalSeconds,
				Epochs: tr.Passes, ClassAccuracy: tr.ClassAccuracy}
			if n := len(tr.RoundsDetail); n > 0 {
				rr.TrainAccuracy = tr.RoundsDetail[n-1].TrainAccuracy
			}
			if tr.Accuracy != nil {
				rr.ValAccuracy, rr.ValLoss = *tr.Accuracy, *tr.LogLoss
			}
			res.Runs = append(res.Runs, rr)
			if cfg.Progress != nil {
				cfg.Progress(scheme, r+1, &rr)
			}
		}
	}
	res.Table = Table(res.Runs, cfg.Schemes)
	return res, nil
}

// figures names the four figures of Table II and reads them off a run.
var figures = []struct {
	name string
	get  func(*RunResult) float64
}{
	{"train_loss", func(r *RunResult) float64 { return r.TrainLoss }},
	{"train_accuracy", func(r *RunResult) float64 { return r.TrainAccuracy }},
	{"validation_loss", func(r *RunResult) float64 { return r.ValLoss }},
	{"validation_accuracy", func(r *RunResult) float64 { return r.ValAccuracy }},
}

// Table computes Table II from runs, one row per scheme in the order of
// schemes; the first scheme is the baseline of the variance ratios.
func Table(runs []RunResult, schemes []string) []Row {
	var rows []Row
	for _, s := range schemes {
		var mine []*RunResult
		for i := range runs {
			if runs[i].Scheme == s {
				mine = append(mine, &runs[i])
			}
		}
		row := Row{Scheme: s, Runs: len(mine), VarianceRatio: map[string]float64{}}
		stats := make([]Stat, len(figures))
		for f, fig := range figures {
			xs := make([]float64, len(mine))
			for i, r := range mine {
				xs[i] = fig.get(r)
			}
			stats[f] = stat(xs)
		}
		row.TrainLoss, row.TrainAccuracy, row.ValLoss, row.ValAccuracy = stats[0], stats[1], stats[2], stats[3]
		row.ClassSpread, row.ClassSpreadMax = classSpread(mine)
		rows = append(rows, row)
	}
	for i := range rows {
		b, r := rows[0], rows[i]
		for _, f := range []struct {
			name   string
			bv, rv float64
		}{{"train_loss", b.TrainLoss.Variance, r.TrainLoss.Variance}, {"train_accuracy", b.TrainAccuracy.Variance, r.TrainAccuracy.Variance},
			{"validation_loss", b.ValLoss.Variance, r.ValLoss.Variance}, {"validation_accuracy", b.ValAccuracy.Variance, r.ValAccuracy.Variance}} {
			if f.rv > 0 {
				rows[i].VarianceRatio[f.name] = f.bv / f.rv
			}
		}
	}
	return rows
}

// stat returns the mean and the sample variance (n − 1) of xs.
func stat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	s := Stat{Mean: sum / float64(len(xs))}
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Variance = ss / float64(len(xs)-1)
	}
	return s
}

// classSpread returns the mean and the largest, over the classes, of the
// standard deviation of a class's validation accuracy across runs.
func classSpread(runs []*RunResult) (mean, largest float64) {
	if len(runs) == 0 {
		return 0, 0
	}
	classes := len(runs[0].ClassAccuracy)
	for c := range classes {
		xs := make([]float64, 0, len(runs))
		for _, r := range runs {
			if c < len(r.ClassAccuracy) {
				xs = append(xs, r.ClassAccuracy[c])
			}
		}
		sd := math.Sqrt(stat(xs).Variance)
		mean += sd / float64(classes)
		largest = max(largest, sd)
	}
	return mean, largest
}

// Files returns the names of the files WriteDir writes.
func Files() []string {
	return []string{"sharding.json", "sharding.csv", "runs.csv", "validation_accuracy.svg", "validation_accuracy.png"}
}

// WriteDir writes the study to dir (made if missing): sharding.json (the
// whole Result), sharding.csv (Table II), runs.csv (every run) and
// validation_accuracy.svg and .png (box plots), each atomically.
func WriteDir(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	writers := []func(io.Writer) error{
		func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		},
		func(w io.Writer) error { return WriteTableCSV(w, res.Table) },
		func(w io.Writer) error { return writeRunsCSV(w, res.Runs) },
	}
	for i, write := range writers {
		if err := atomicfile.Write(filepath.Join(dir, Files()[i]), write); err != nil {
			return err
		}
	}
	return BoxFigure(res).Save(filepath.Join(dir, Files()[3]))
}

// WriteTable writes Table II for people, one scheme a line.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheme\ttrain loss\tvar\ttrain acc\tvar\tval loss\tvar\tval acc\tvar\tval acc var ratio\tclass spread\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.4f\t%.2e\t%.4f\t%.2e\t%.4f\t%.2e\t%.4f\t%.2e\t%.2f\t%.4f\t\n", r.Scheme, r.TrainLoss.Mean, r.TrainLoss.Variance,
			r.TrainAccuracy.Mean, r.TrainAccuracy.Variance, r.ValLoss.Mean, r.ValLoss.Variance, r.ValAccuracy.Mean, r.ValAccuracy.Variance,
			r.VarianceRatio["validation_accuracy"], r.ClassSpread)
	}
	return tw.Flush()
}

// WriteTableCSV writes Table II as CSV.
func WriteTableCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	head := []string{"scheme", "runs"}
	for _, f := range figures {
		head = append(head, f.name+"_mean", f.name+"_variance", f.name+"_variance_ratio")
	}
	head = append(head, "class_accuracy_spread_mean", "class_accuracy_spread_max")
	cw.Write(head)
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	for _, r := range rows {
		rec := []string{r.Scheme, strconv.Itoa(r.Runs)}
		for i, s := range []Stat{r.TrainLoss, r.TrainAccuracy, r.ValLoss, r.ValAccuracy} {
			ratio := ""
			if v, ok := r.VarianceRatio[figures[i].name]; ok {
				ratio = g(v)
			}
			rec = append(rec, g(s.Mean), g(s.Variance), ratio)
		}
		rec = append(rec, g(r.ClassSpread), g(r.ClassSpreadMax))
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// writeRunsCSV writes every run's figures.
func writeRunsCSV(w io.Writer, runs []RunResult) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"scheme", "seed", "epochs", "train_loss", "train_accuracy", "validation_loss", "validation_accuracy", "seconds"})
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	for _, r := range runs {
		cw.Write([]string{r.Scheme, strconv.FormatUint(r.Seed, 10), strconv.Itoa(r.Epochs), g(r.TrainLoss), g(r.TrainAccuracy),
			g(r.ValLoss), g(r.ValAccuracy), g(r.Seconds)})
	}
	cw.Flush()
	return cw.Error()
}

// quartiles returns the minimum, the quartiles and the maximum of xs
// (linear interpolation between order statistics).
func quartiles(xs []float64) [5]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 {
		if len(s) == 0 {
			return 0
		}
		h := p * float64(len(s)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	return [5]float64{q(0), q(0.25), q(0.5), q(0.75), q(1)}
}
