package distparsa

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"colo/graph"
	"colo/partition"
	"colo/partition/ooc"
	"colo/placement"
	"colo/ps/node"
)

// Job is a distributed partition job as the nodes of a cluster of
// processes read it (colo node --job parsa --job-file FILE): the data
// file that every worker reads itself (its own blocks: RunNode), the
// Parsa settings, the run's Config and where worker 0 writes the
// placement.
type Job struct {
	// Data is the data file; Format, IndexBase, DropSelfLoops and
	// HashBits are its loader options (graph.LoadOptions).
	Data          string `json:"data"`
	Format        string `json:"format,omitempty"`
	IndexBase     int    `json:"index_base"`
	DropSelfLoops bool   `json:"drop_self_loops,omitempty"`
	HashBits      int    `json:"hash_bits"`
	// DataName, when set, is the file Data stands in for (Data is its
	// content decompressed), which errors name with their lines.
	DataName string `json:"data_name,omitempty"`
	// K is the number of partitions, Seed the run's seed.
	K    int    `json:"k"`
	Seed uint64 `json:"seed"`
	// ParamAlgo is the parameter assignment ("" for Parsa's Alg. 2).
	ParamAlgo partition.ParamAlgo `json:"param_algo,omitempty"`
	// Parsa's settings: blocks b (0: automatic), initialisation (global
	// or none), the global sample's fraction, the growth rule, ε and the
	// refinement passes (partition.ParsaOptions).
	Blocks         int     `json:"blocks"`
	Init           string  `json:"init"`
	GlobalFraction float64 `json:"global_fraction"`
	GrowBy         string  `json:"grow_by,omitempty"`
	Epsilon        float64 `json:"epsilon"`
	Refine         int     `json:"refine,omitempty"`
	// Config is the run's.
	Config Config `json:"config"`
	// Out is the directory worker 0 writes the placement to, as colo
	// partition -o does (data.part, param.part, summary.json last).
	Out string `json:"out"`
	// SpillDir holds each machine's spill files of the data file, in a
	// directory of its own that it removes ("" is the system's
	// temporary directory).
	SpillDir string `json:"spill_dir,omitempty"`
	// SharedSpill says that the machines share SpillDir, one file system
	// (Processes on loopback sets it): each machine then parses only its
	// own range of the data file's lines and gets the file's numbering
	// from the others' summaries (all-reduces) and the other ranges' rows
	// from their files in SpillDir (ooc.FileRanges), which must be
	// set, and the job's own directory. Without it, or for a compressed data file,
	// which cannot be split by byte offsets, every machine parses the
	// whole file, and so does the one machine of a job of one.
	SharedSpill bool `json:"shared_spill,omitempty"`
	// Memory caps each machine's process in bytes (0: no cap): the
	// machines plan the blocks to keep under it, keep the Go runtime
	// under it, and fail, saying how much they need, when it is too
	// small (ooc.Machine).
	Memory int64 `json:"memory,omitempty"`
	// Keys is the size of the key space, Layout.NumKeys of the graph: the
	// scheduler's (colo node --role scheduler --job parsa reads it here),
	// checked by every machine against the graph it loads.
	Keys uint64 `json:"keys"`
}

// LoadOptions returns the job's loader options.
func (j Job) LoadOptions() graph.LoadOptions {
	return graph.LoadOptions{Format: graph.Format(j.Format), IndexBase: j.IndexBase, DropSelfLoops: j.DropSelfLoops, HashBits: j.HashBits,
		Name: j.DataName}
}

// Options returns the job's partition options.
func (j Job) Options() partition.Options {
	return partition.Options{K: j.K, Seed: j.Seed, ParamAlgo: j.ParamAlgo, Parsa: partition.ParsaOptions{
		Blocks: j.Blocks, Init: partition.InitMode(j.Init), GlobalFraction: j.GlobalFraction,
		GrowBy: partition.GrowBy(j.GrowBy), Epsilon: j.Epsilon, Refine: j.Refine}}
}

// Validate checks the job; errors name the field.
func (j Job) Validate() error {
	switch {
	case j.Data == "":
		return fmt.Errorf("distparsa: job: no data file")
	case j.Out == "":
		return fmt.Errorf("distparsa: job: no output directory")
	case j.K < 1:
		return fmt.Errorf("distparsa: job: k = %d: want at least 1", j.K)
	case j.Keys < 1:
		return fmt.Errorf("distparsa: job: keys = 0: want the key space of the graph (Layout.NumKeys)")
	case j.Memory < 0:
		return fmt.Errorf("distparsa: job: memory = %d: want 0 (no cap) or a number of bytes", j.Memory)
	case j.SharedSpill && j.SpillDir == "":
		return fmt.Errorf("distparsa: job: shared_spill without a spill_dir: want the directory, of this job alone, that every machine mounts")
	}
	if err := j.LoadOptions().Validate(); err != nil {
		return fmt.Errorf("distparsa: job: %w", err)
	}
	if err := j.Options().Parsa.Validate(); err != nil {
		return fmt.Errorf("distparsa: job: %w", err)
	}
	return j.Config.Validate()
}

// ReadJob reads a job written by WriteJob.
func ReadJob(path string) (Job, error) {
	var j Job
	f, err := os.Open(path)
	if err != nil {
		return j, fmt.Errorf("distparsa: job: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return j, fmt.Errorf("distparsa: job %s: %w", path, err)
	}
	return j, j.Validate()
}

// WriteJob writes j to path, readable by its owner only.
func WriteJob(path string, j Job) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// RunNode runs the job on the running node n, a machine (a server and a
// worker) of a cluster whose scheduler set the key space and width of
// the job's Layout and its consistency model. The node reads the data
// file itself (ooc.PlanParsaFile): it parses the file once into a
// binary spill in a temporary directory (job.SpillDir) — with
// job.SharedSpill only its own range of the file's lines, the rest
// coming from the other machines (ooc.FileRanges) — draws the plan
// from the seed as every other machine does, and keeps the rows of its
// own blocks only; machine 0 also keeps the global sample, the rows of
// every sample and their blocks, from which it repairs the balance,
// evaluates the placement and writes it. Then it runs the worker's share
// (work). Worker 0 writes the placement to job.Out, summary.json last,
// with the Parsa statistics and the job's Config in the summary's
// details. n.Finish is the caller's.
func RunNode(ctx context.Context, n *node.Node, job Job) (*Result, error) {
	w := n.Worker()
	if w == nil {
		return nil, fmt.Errorf("distparsa: the node has no worker: a partition job runs on machines")
	}
	a := n.Assignment()
	if a.NumWorkers != job.Config.Workers {
		return nil, fmt.Errorf("distparsa: the cluster has %d workers, the job %d", a.NumWorkers, job.Config.Workers)
	}
	rank, W := w.Rank(), job.Config.Workers
	opt := job.Options()
	defer ooc.LimitMemory(job.Memory)()
	fo := ooc.FilePlanOptions{
		Load: job.LoadOptions(), TempDir: job.SpillDir, MinBlocks: job.Config.minBlocks(),
		Keep:   func(j, _ int) bool { return j%W == rank },
		Global: rank == 0, Whole: rank == 0,
		Machine: &ooc.Machine{Memory: job.Memory, Workers: W, Rank: rank,
			Sum: func(vals []float64) ([]float64, error) { return w.AllReduce(ctx, vals) },
			Server: func(n, m int) (int64, int64) {
				return job.Config.LayoutOf(n, m, opt.K).ServerBytes(job.Config.Tau == 0)
			}}}
	if job.SharedSpill && W > 1 {
		fo.Ranges = &ooc.FileRanges{Rank: rank, Count: W, Dir: job.SpillDir,
			Sum: func(vals []float64) ([]float64, error) { return w.AllReduce(ctx, vals) }}
	}
	fp, err := ooc.PlanParsaFile(job.Data, opt, fo)
	if err != nil {
		return nil, fmt.Errorf("distparsa: worker %d: %w", rank, err)
	}
	defer fp.Close()
	l := Layout{Params: fp.Params(), Samples: fp.Samples(), K: opt.K, Workers: W}
	if l.NumKeys() != job.Keys {
		return nil, fmt.Errorf("distparsa: worker %d: %s needs %d keys, the job has %d: a job for another file", rank, job.Data, l.NumKeys(), job.Keys)
	}
	if w.Width() != l.Width() {
		return nil, fmt.Errorf("distparsa: the cluster's width is %d, the job needs k = %d", w.Width(), l.Width())
	}
	res, err := work(ctx, w, fileSource{fp}, fp.ParsaPlan, job.Config, nil)
	if err != nil {
		return nil, err
	}
	res.File = fp.FileStats()
	if res.Placement != nil {
		t0 := time.Now()
		defer func() { res.WriteSeconds = time.Since(t0).Seconds() }()
		s, err := fp.Summary(res.Placement, 0)
		if err != nil {
			return nil, fmt.Errorf("distparsa: worker 0: the cost of the placement: %w", err)
		}
		s.Algorithm, s.Seed, s.Seconds, s.Dataset = "parsa-ps", job.Seed, res.Seconds, job.Data
		s.Details = map[string]any{"parsa": res.Stats, "distributed": job.Config}
		if err := fp.WriteDir(job.Out, res.Placement, s); err != nil {
			return nil, fmt.Errorf("distparsa: worker 0: writing the placement: %w", err)
		}
	}
	res.PeakRSS = ooc.PeakRSS()
	return res, nil
}

// fileSource reads a worker's blocks of a file.
type fileSource struct{ fp *ooc.FilePlan }

func (s fileSource) rows(j int) (partition.BlockRows, error) { return s.fp.Rows(j) }
func (s fileSource) global() (partition.BlockRows, error)    { return s.fp.GlobalRows() }

func (s fileSource) repair(p *placement.Placement) (*partition.ParsaStats, error) {
	return s.fp.Repair(p)
}

func (s fileSource) assign(*placement.Placement) (partition.ParamStats, error) {
	return partition.ParamStats{}, fmt.Errorf("distparsa: parameter assignment %q needs the graph in memory", s.fp.ParamAlgo())
}
