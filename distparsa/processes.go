package distparsa

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"colo/graph"
	"colo/launch"
	"colo/partition"
	"colo/placement"
)

// Processes runs partition jobs as processes of the colo binary on
// loopback, a launch.Cluster of the partition kind (Kind): a scheduler
// whose key space, width and consistency model are the job's Layout and
// Config.Clock, and W machines, each a server and a worker that reads its
// own blocks of the data file (RunNode). The first process to fail is
// named in the error, and the others are stopped.
type Processes struct {
	// Bin is the colo binary; "" is this executable.
	Bin string
	// Deadline stops the cluster after this long; 0 is no limit (a failed
	// or silent node ends the job anyway).
	Deadline time.Duration
	// Heartbeat and Timeout are the scheduler's failure detection; 0 for
	// 100 ms and 5 s.
	Heartbeat, Timeout time.Duration
}

// Run runs job, whose worker 0 writes the placement to job.Out, and
// returns each worker's result. The machines' spill files go to a
// directory of their own in job.SpillDir, removed at the end.
func (pd Processes) Run(ctx context.Context, job Job) (*Report, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	if pd.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pd.Deadline)
		defer cancel()
	}
	// The machines' spills go to a directory of the job's, which this
	// process removes however the machines end (a machine killed while
	// it reads the file cannot remove its own).
	spill, err := os.MkdirTemp(job.SpillDir, "colo-parsa-spill-")
	if err != nil {
		return nil, fmt.Errorf("distparsa: spill directory: %w", err)
	}
	defer os.RemoveAll(spill)
	job.SpillDir = spill
	// The machines share the spill directory: each parses its own range
	// of the file.
	job.SharedSpill = true
	hb, to := pd.Heartbeat, pd.Timeout
	if hb == 0 {
		hb = 100 * time.Millisecond
	}
	if to == 0 {
		to = 5 * time.Second
	}
	cl := job.Config.Clock()
	W := job.Config.Workers
	env, err := launch.NewEnvelope(KindName, job)
	if err != nil {
		return nil, err
	}
	c := &launch.Cluster{Envelope: env, Machines: W, Bin: pd.Bin, Heartbeat: hb, Timeout: to, JoinTimeout: joinTimeout}
	out, err := c.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("distparsa: %w", err)
	}
	t0 := out.Started
	rep := &Report{Workers: W, Tau: job.Config.Tau, Consistency: cl.Mode.String(), Seconds: time.Since(t0).Seconds()}
	for _, m := range out.Members {
		var res Result
		if m.Report == nil {
			return nil, fmt.Errorf("distparsa: %s: %w", m.Name, m.ReportErr)
		}
		if err := m.Report.Decode(&res); err != nil {
			return nil, fmt.Errorf("distparsa: %s: report: %w", m.Name, err)
		}
		rep.PerWorker = append(rep.PerWorker, res)
	}
	return rep, nil
}

// joinTimeout is how long the cluster waits for its machines to join:
// they read the data first.
const joinTimeout = 60 * time.Second

// PlainCopy returns, for a compressed data file at path, a copy of its
// content in a directory of its own in spill ("" for the system's
// temporary directory), which processes on this machine read by ranges
// (set Job.DataName to path so that errors name it), and the function
// that removes the copy; for a file that is not compressed, "" and a
// function that does nothing.
func PlainCopy(path, spill string) (copyPath string, remove func(), err error) {
	remove = func() {}
	if c, err := graph.Compressed(path); err != nil || !c {
		return "", remove, err
	}
	dir, err := os.MkdirTemp(spill, "colo-plain-")
	if err != nil {
		return "", remove, fmt.Errorf("%s is compressed: a copy to read by ranges needs a directory (--spill-dir): %w", path, err)
	}
	if copyPath, err = graph.Decompressed(path, dir); err != nil {
		os.RemoveAll(dir)
		return "", remove, err
	}
	return copyPath, func() { os.RemoveAll(dir) }, nil
}

// WriteDir runs job as Run does, with job.Out a temporary directory that
// it removes, and then writes the placement that worker 0 wrote there to
// dir as placement.WriteDir does: data.part and param.part copied, and
// summary.json last, which is what finish returns given worker 0's
// summary and the run's report (finish nil: the summary as worker 0
// wrote it). No process loads the graph. A failed run writes nothing to
// dir. It returns worker 0's summary and the report, whose Parsa is
// worker 0's statistics.
func (pd Processes) WriteDir(ctx context.Context, job Job, dir string, finish func(*placement.Summary, *Report) (any, error)) (*placement.Summary, *Report, error) {
	tmp, err := os.MkdirTemp("", "colo-parsa-ps-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	job.Out = filepath.Join(tmp, "placement")
	rep, err := pd.Run(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(filepath.Join(job.Out, placement.SummaryFile))
	if err != nil {
		return nil, nil, fmt.Errorf("distparsa: the placement of machine 0: %w", err)
	}
	var s placement.Summary
	var stats struct {
		Details struct {
			Parsa *partition.ParsaStats `json:"parsa"`
		} `json:"details"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("distparsa: the summary of machine 0: %w", err)
	}
	if err := json.Unmarshal(b, &stats); err != nil {
		return nil, nil, fmt.Errorf("distparsa: the summary of machine 0: %w", err)
	}
	rep.Parsa = stats.Details.Parsa
	var out any = &s
	if finish != nil {
		if out, err = finish(&s, rep); err != nil {
			return nil, nil, err
		}
	}
	copyOf := func(name string, lines int) placement.PartSource {
		return placement.PartSource{Lines: lines, Write: func(w io.Writer) error {
			f, err := os.Open(filepath.Join(job.Out, name))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(w, f)
			return err
		}}
	}
	if err := placement.WriteDirFrom(dir, job.K, copyOf(placement.DataPartFile, s.NumSamp),
		copyOf(placement.ParamPartFile, s.NumParams), out); err != nil {
		return nil, nil, err
	}
	return &s, rep, nil
}
