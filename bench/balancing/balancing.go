// Package balancing is the experiment of seed 002 (§4–5, Figs. 4–6):
// how fast does a dense model train on co-located machines joined by
// heterogeneous, changing links, when its keys are spread evenly among
// the servers (Average), by a per-server time fit (Elastic), by the
// measured link speeds (Aware) or by the true ones (Oracle)?
//
// For each model size and scheme it trains the same job for a fixed
// number of rounds, interleaving the schemes so that they share the
// machine's state, and reports the images per minute (Eq. 16: samples
// trained per minute of training), the mean round time (ASRIT), the
// round times decision by decision (SRIT, Fig. 5), the keys moved and the
// bytes of the measurements against the bytes of training; and, for
// Aware on the first size, the round time against the slice granularity
// (Fig. 6) with Eq. 4's value marked.
//
// The seed trains MobileNet (21 MB), ResNet-50 (93 MB) and AlexNet
// (228 MB) on GPUs, where the network dominates. Sizes keeps their
// proportions with multilayer perceptrons a hundredth their size (0.21,
// 0.94 and 2.3 MB), whose computation on a CPU core is milliseconds a
// round against tenths of seconds of transfer at the links' rates.
//
//	res, err := balancing.Run(ctx, balancing.Config{Job: job, Schemes: balance.Schemes(), Sizes: balancing.Sizes(), Runs: 3, Rounds: 30}, data)
//	balancing.WriteDir("out", res)
package balancing

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"colo/app"
	"colo/balance"
	"colo/internal/atomicfile"
	"colo/internal/plot"
	"colo/train"
	"colo/train/deploy"
)

// Size is a model size of the experiment: an mlp's hidden layers, and the
// model of the seed whose size it stands for.
type Size struct {
	Name   string  `json:"name"`
	Hidden []int   `json:"hidden"`
	SeedMB float64 `json:"seed_mb"`
}

// Sizes returns the seed's three models at a hundredth of their size, in
// their proportions (1 : 4.5 : 11.1 against the seed's 1 : 4.4 : 10.9) on
// 784 inputs and 10 classes.
func Sizes() []Size {
	return []Size{
		{"mobilenet/100", []int{64, 32}, 21},
		{"resnet50/100", []int{256, 128}, 93},
		{"alexnet/100", []int{640, 128}, 228},
	}
}

// Config is an experiment.
type Config struct {
	// Job is the job every run starts from: mlp on labelled dense data,
	// co-located machines (seed 002: 12), its batch, its emulated network
	// (Config.RandomBandwidth, BandwidthChange) and seed.
	Job     train.Job
	Schemes []string
	Sizes   []Size
	// Runs is the number of trainings per size and scheme (medians are
	// reported); Rounds the rounds of each.
	Runs, Rounds int
	// Balance is the balancer's settings but the scheme (Every, Slice,
	// Probe).
	Balance balance.Config
	// Slices, when not empty, are the granularities of the Aware sweep
	// on the first size (Fig. 6).
	Slices []uint64
	// Progress, when set, is called after every training.
	Progress func(r RunResult)
}

// Validate checks c; errors name the field.
func (c Config) Validate() error {
	if len(c.Schemes) == 0 || len(c.Sizes) == 0 {
		return fmt.Errorf("balancing: %d schemes and %d sizes: want at least one of each", len(c.Schemes), len(c.Sizes))
	}
	for _, s := range c.Schemes {
		if err := balance.CheckScheme(s); err != nil {
			return err
		}
	}
	if c.Runs < 1 || c.Rounds < 2 {
		return fmt.Errorf("balancing: %d runs of %d rounds: want at least 1 run of 2 rounds", c.Runs, c.Rounds)
	}
	if c.Job.App != "mlp" {
		return fmt.Errorf("balancing: app %s: the experiment trains mlp models", c.Job.App)
	}
	if !c.Job.Config.Colocated() || c.Job.Config.Machines < 2 {
		return fmt.Errorf("balancing: %d machines, %d servers apart: the seed's nodes are co-located, at least 2", c.Job.Config.Machines, c.Job.Config.Servers)
	}
	b := c.Balance
	b.Scheme = balance.Average
	return b.Validate()
}

// RunResult is one training.
type RunResult struct {
	Size   string `json:"size"`
	Scheme string `json:"scheme"`
	Run    int    `json:"run"`
	Slice  uint64 `json:"slice"`
	Keys   int    `json:"keys"`
	Rounds int    `json:"rounds"`
	// ImagesPerMinute is Eq. 16: the samples trained per minute of
	// training; ASRIT the mean round time; SRIT the round time of each
	// decision window (every round by default).
	ImagesPerMinute float64   `json:"images_per_minute"`
	ASRIT           float64   `json:"asrit_seconds"`
	SRIT            []float64 `json:"srit_seconds"`
	// KeysMoved counts the keys that changed server; ControlBytes the
	// bytes of the measurements exchanged and TrainBytes those the
	// training sent between machines.
	KeysMoved    uint64  `json:"keys_moved"`
	ControlBytes int64   `json:"control_bytes"`
	TrainBytes   int64   `json:"train_bytes"`
	Seconds      float64 `json:"train_seconds"`
	// Calibration is what a run with the slice measured (Slice: auto)
	// found: α and the slice it chose, which is Slice.
	Calibration *balance.Calibration `json:"calibration,omitempty"`
}

// Row is the median of a size and scheme's runs.
type Row struct {
	Size            string  `json:"size"`
	Scheme          string  `json:"scheme"`
	Runs            int     `json:"runs"`
	ImagesPerMinute float64 `json:"images_per_minute"`
	ASRIT           float64 `json:"asrit_seconds"`
	// Speedup is the images per minute over Average's; VsOracle the
	// ASRIT over Oracle's (1: as good as the bound).
	Speedup  float64 `json:"speedup_over_average,omitempty"`
	VsOracle float64 `json:"asrit_over_oracle,omitempty"`
	// ControlShare is the measurements' bytes over the training's.
	ControlShare float64 `json:"control_bytes_share"`
}

// Result is a whole experiment.
type Result struct {
	// Dataset names the data (the caller's).
	Dataset         string      `json:"dataset,omitempty"`
	Machines        int         `json:"machines"`
	Batch           int         `json:"batch"`
	RandomBandwidth float64     `json:"random_bandwidth_bytes_per_s"`
	BandwidthChange string      `json:"bandwidth_change"`
	Runs            []RunResult `json:"runs"`
	Table           []Row       `json:"table"`
	// Granularity is Fig. 6: Aware's ASRIT per slice on the first size,
	// the last run with the slice measured (Config.Auto); Eq4 the slice
	// of Eq. 4, √(M·α/N), with the α that run measured, and PaperEq4
	// with the seed's α, in keys.
	Granularity []RunResult `json:"granularity,omitempty"`
	Eq4         float64     `json:"eq4_slice_keys,omitempty"`
	Alpha       float64     `json:"alpha_keys,omitempty"`
	PaperEq4    float64     `json:"eq4_paper_alpha_slice_keys,omitempty"`
}

// Run runs the experiment on data, loaded once (app.Open's).
func Run(ctx context.Context, cfg Config, data *app.Data) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	jc := cfg.Job.Config
	res := &Result{Machines: jc.Machines, Batch: jc.Batch, RandomBandwidth: jc.RandomBandwidth, BandwidthChange: jc.BandwidthChange.String()}
	for r := range cfg.Runs {
		for _, size := range cfg.Sizes {
			for _, scheme := range cfg.Schemes {
				rr, err := train1(ctx, cfg, data, size, scheme, cfg.Balance.Slice, r)
				if err != nil {
					return nil, err
				}
				res.Runs = append(res.Runs, rr)
			}
		}
	}
	res.Table = Table(res.Runs, cfg.Sizes, cfg.Schemes)
	if len(cfg.Slices) > 0 {
		for _, x := range append(slices.Clone(cfg.Slices), 0) { // 0: measured
			rr, err := train1(ctx, cfg, data, cfg.Sizes[0], balance.Aware, x, 0)
			if err != nil {
				return nil, err
			}
			res.Granularity = append(res.Granularity, rr)
		}
		keys := float64(res.Granularity[0].Keys)
		if x, err := balance.Granularity(keys, balance.PaperAlpha, jc.Machines); err == nil {
			res.PaperEq4 = x
		}
		if c := res.Granularity[len(res.Granularity)-1].Calibration; c != nil && c.Alpha > 0 {
			res.Alpha = c.Alpha
			if x, err := balance.Granularity(keys, c.Alpha, jc.Machines); err == nil {
				res.Eq4 = x
			}
		}
	}
	return res, nil
}

// train1 trains one run; slice 0 measures it (Config.Auto).
func train1(ctx context.Context, cfg Config, data *app.Data, size Size, scheme string, slice uint64, run int) (RunResult, error) {
	job := cfg.Job
	if err := app.SetOptions(&job, map[string]any{"hidden": size.Hidden}); err != nil {
		return RunResult{}, err
	}
	b := cfg.Balance
	b.Scheme, b.Slice, b.Auto = scheme, slice, slice == 0
	if b.Auto {
		b.Slice = balance.DefaultConfig().Slice
	}
	job.Config.Balance = &b
	job.Config.MaxSteps = int64(cfg.Rounds * job.Config.Machines)
	job.Config.MaxPasses = max(job.Config.MaxPasses, 1000)
	job.Config.EvalEvery = train.Every{}
	opened, err := app.OpenData(job, data)
	if err != nil {
		return RunResult{}, err
	}
	p, _, err := opened.Place(job)
	if err != nil {
		return RunResult{}, err
	}
	tr, err := train.Run(ctx, job, opened.App, p, deploy.InProcess{})
	if err != nil {
		return RunResult{}, fmt.Errorf("%s, %s, run %d: %w", size.Name, scheme, run+1, err)
	}
	rr := RunResult{Size: size.Name, Scheme: scheme, Run: run + 1, Slice: slice, Keys: opened.App.NumKeys(), Rounds: tr.Rounds,
		ImagesPerMinute: 60 * tr.SamplesPerSecond, TrainBytes: tr.BytesInter, Seconds: tr.TrainSeconds}
	if tr.Rounds > 0 {
		rr.ASRIT = tr.TrainSeconds / float64(tr.Rounds)
	}
	if rep := tr.Balance; rep != nil {
		rr.KeysMoved, rr.ControlBytes = rep.KeysMoved, rep.ControlBytes*int64(job.Config.Machines)
		if c := rep.Calibration; c != nil {
			rr.Calibration, rr.Slice = c, c.Slice
		}
		for _, d := range rep.Decisions {
			rr.SRIT = append(rr.SRIT, d.Seconds)
		}
	}
	if cfg.Progress != nil {
		cfg.Progress(rr)
	}
	return rr, nil
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// Table computes the medians per size and scheme, in the order given.
func Table(runs []RunResult, sizes []Size, schemes []string) []Row {
	var rows []Row
	for _, size := range sizes {
		first := len(rows)
		for _, scheme := range schemes {
			var ipm, asrit []float64
			var ctl, tb int64
			for _, r := range runs {
				if r.Size == size.Name && r.Scheme == scheme {
					ipm, asrit = append(ipm, r.ImagesPerMinute), append(asrit, r.ASRIT)
					ctl, tb = ctl+r.ControlBytes, tb+r.TrainBytes
				}
			}
			row := Row{Size: size.Name, Scheme: scheme, Runs: len(ipm), ImagesPerMinute: median(ipm), ASRIT: median(asrit)}
			if tb > 0 {
				row.ControlShare = float64(ctl) / float64(tb)
			}
			rows = append(rows, row)
		}
		var avg, oracle *Row
		for i := first; i < len(rows); i++ {
			switch rows[i].Scheme {
			case balance.Average:
				avg = &rows[i]
			case balance.Oracle:
				oracle = &rows[i]
			}
		}
		for i := first; i < len(rows); i++ {
			if avg != nil && avg.ImagesPerMinute > 0 {
				rows[i].Speedup = rows[i].ImagesPerMinute / avg.ImagesPerMinute
			}
			if oracle != nil && oracle.ASRIT > 0 {
				rows[i].VsOracle = rows[i].ASRIT / oracle.ASRIT
			}
		}
	}
	return rows
}

// WriteTable prints the table.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tscheme\truns\timages/min\tspeed-up\tASRIT s\tover oracle\tmeasurement bytes\t")
	ratio := func(x float64, unit string) string {
		if x == 0 {
			return "-" // no baseline among the schemes
		}
		return fmt.Sprintf("%.2f%s", x, unit)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%.3f\t%s\t%.2f%%\t\n", r.Size, r.Scheme, r.Runs, r.ImagesPerMinute, ratio(r.Speedup, "×"), r.ASRIT, ratio(r.VsOracle, ""), 100*r.ControlShare)
	}
	return tw.Flush()
}

// Files returns the names of the files WriteDir writes.
func Files() []string {
	return []string{"balance.json", "balance.csv", "speed.svg", "srit.svg", "granularity.svg", "speed.png", "srit.png", "granularity.png"}
}

// WriteDir writes the result as JSON, the table as CSV, and the figures
// (speed per scheme and size, SRIT per decision of the first run of each
// scheme on the last size, ASRIT against the granularity) as SVG and PNG
// into dir, each file replaced atomically.
func WriteDir(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		return atomicfile.Write(filepath.Join(dir, name), f)
	}
	if err := write("balance.json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}); err != nil {
		return err
	}
	if err := write("balance.csv", func(w io.Writer) error {
		c := csv.NewWriter(w)
		c.Write([]string{"size", "scheme", "runs", "images_per_minute", "speedup_over_average", "asrit_seconds", "asrit_over_oracle", "control_bytes_share"})
		for _, r := range res.Table {
			f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
			c.Write([]string{r.Size, r.Scheme, strconv.Itoa(r.Runs), f(r.ImagesPerMinute), f(r.Speedup), f(r.ASRIT), f(r.VsOracle), f(r.ControlShare)})
		}
		c.Flush()
		return c.Error()
	}); err != nil {
		return err
	}
	for i, f := range []func(*Result) *plot.Figure{speedFigure, sritFigure, granularityFigure} {
		if err := f(res).Save(filepath.Join(dir, Files()[2+i])); err != nil {
			return err
		}
	}
	return nil
}
