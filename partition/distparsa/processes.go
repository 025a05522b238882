package distparsa

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"colo/graph"
	"colo/launch"
	"colo/placement"
)

// Processes runs partition jobs as processes of the colo binary on
// loopback: a scheduler (colo node --role scheduler) whose key space,
// width and consistency model are the job's Layout and Config.Clock, and
// W machines (colo node --role machine --job parsa --job-file FILE), each
// a server and a worker that reads the data file itself. The supervisor
// of package launch watches them: the first process to fail is named in
// the error, and the others are stopped. The cluster token reaches the
// children in their environment.
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
// returns each worker's result.
func (pd Processes) Run(ctx context.Context, job Job) (*Report, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	if pd.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pd.Deadline)
		defer cancel()
	}
	dir, err := os.MkdirTemp("", "colo-partition-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	jobFile := filepath.Join(dir, "job.json")
	if err := WriteJob(jobFile, job); err != nil {
		return nil, err
	}
	hb, to := pd.Heartbeat, pd.Timeout
	if hb == 0 {
		hb = 100 * time.Millisecond
	}
	if to == 0 {
		to = 5 * time.Second
	}
	cl := job.Config.Clock()
	W := job.Config.Workers
	st := launch.Loopback{}
	sup := launch.NewSupervisor(pd.Bin, st)
	env := []string{"COLO_TOKEN=" + launch.NewToken()}
	size := []string{"--num-servers", strconv.Itoa(W), "--num-workers", strconv.Itoa(W)}
	t0 := time.Now()
	addr, err := sup.StartScheduler(ctx, launch.Spec{Name: "scheduler", Host: 0, Env: env, Args: append([]string{
		"node", "--role", "scheduler", "--scheduler", st.SchedulerAddr(),
		"--job", "parsa", "--job-file", jobFile,
		"--heartbeat", hb.String(), "--timeout", to.String(),
		"--join-timeout", launch.JoinTimeout.String()}, size...)})
	if err != nil {
		return nil, fmt.Errorf("distparsa: %w", err)
	}
	results := make([]string, W)
	for r := range W {
		results[r] = filepath.Join(dir, fmt.Sprintf("machine-%d.json", r))
		sup.Start(ctx, launch.Spec{Name: fmt.Sprintf("machine %d", r), Host: r + 1, Env: env, Args: append([]string{
			"node", "--role", "machine", "--job", "parsa", "--scheduler", addr, "--rank", strconv.Itoa(r),
			"--host", st.Addr(r + 1), "--job-file", jobFile, "--result", results[r]}, size...)})
	}
	if err := sup.Wait(ctx); err != nil {
		return nil, fmt.Errorf("distparsa: %w", err)
	}
	rep := &Report{Workers: W, Tau: job.Config.Tau, Consistency: cl.Mode.String(), Seconds: time.Since(t0).Seconds()}
	for r, path := range results {
		res, err := readResult(path)
		if err != nil {
			return nil, fmt.Errorf("distparsa: machine %d: %w", r, err)
		}
		rep.PerWorker = append(rep.PerWorker, *res)
	}
	return rep, nil
}

// readResult reads a machine's result.
func readResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("no result: %w", err)
	}
	defer f.Close()
	var r Result
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("result %s: %w", path, err)
	}
	return &r, nil
}

// Partition runs job as Run does, with job.Out a temporary directory that
// it removes, and returns the placement of g that worker 0 wrote, the
// run's report, and worker 0's Parsa statistics as its summary records
// them (details.parsa; nil when it has none).
func (pd Processes) Partition(ctx context.Context, job Job, g *graph.Graph) (*placement.Placement, *Report, json.RawMessage, error) {
	tmp, err := os.MkdirTemp("", "colo-parsa-ps-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(tmp)
	job.Out = filepath.Join(tmp, "placement")
	rep, err := pd.Run(ctx, job)
	if err != nil {
		return nil, nil, nil, err
	}
	pl, err := placement.ReadDir(job.Out, g, job.K)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the placement of machine 0: %w", err)
	}
	var sum struct {
		Details struct {
			Parsa json.RawMessage `json:"parsa"`
		} `json:"details"`
	}
	if b, err := os.ReadFile(filepath.Join(job.Out, placement.SummaryFile)); err == nil && json.Unmarshal(b, &sum) == nil {
		return pl, rep, sum.Details.Parsa, nil
	}
	return pl, rep, nil, nil
}
