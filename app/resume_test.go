package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"colo/app"
	"colo/checkpoint"
	"colo/ps/clock"
	"colo/ps/worker"
	"colo/train"
	"colo/train/deploy"
)

// captured is an application whose evaluation also pulls the trained
// model on worker 0.
type captured struct {
	train.App
	model []float32
}

func (c *captured) Evaluate(ctx context.Context, w *worker.Worker, part train.Part) (train.Eval, error) {
	if w.Rank() == 0 {
		m, err := train.PullModel(w, c.NumKeys())
		if err != nil {
			return train.Eval{}, err
		}
		c.model = m
	}
	return c.App.Evaluate(ctx, w, part)
}

// resumeJob returns the job of application name that the resume tests
// run: resumeData's file, random placement, 3 machines, batches of 23, 3
// passes.
func resumeJob(t *testing.T, name string) train.Job {
	t.Helper()
	job, err := app.DefaultJob(name)
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement = resumeData(t, name), "random"
	if name == "mf" {
		job.Data.Load.Format = "ratings"
	}
	job.Config.Machines, job.Config.Batch, job.Config.MaxPasses, job.Config.Epsilon = 3, 23, 3, 0
	return job
}

// resumeData writes a seeded sparse classification file (lr), ratings
// file (mf) or edge list (embed).
func resumeData(t *testing.T, name string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(18, 1))
	var b strings.Builder
	if name == "embed" {
		seen := map[[2]int]bool{}
		for len(seen) < 95 {
			u, v := rng.IntN(30), rng.IntN(30)
			if u < v && !seen[[2]int{u, v}] {
				seen[[2]int{u, v}] = true
				fmt.Fprintf(&b, "%d %d\n", u, v)
			}
		}
		return writeFile(t, name+".txt", b.String())
	}
	for u := range 90 {
		if name == "mf" {
			for _, i := range rng.Perm(25)[:4] {
				fmt.Fprintf(&b, "%d %d %d\n", u+1, 1+i, 1+rng.IntN(5))
			}
			continue
		}
		fmt.Fprintf(&b, "%d", rng.IntN(3))
		f := 1
		for range 4 {
			f += 1 + rng.IntN(6)
			fmt.Fprintf(&b, " %d:%.3f", f, 0.5+rng.Float64())
		}
		b.WriteString("\n")
	}
	return writeFile(t, name+".txt", b.String())
}

// runResumable trains job on an in-process cluster and returns the
// result and the final model.
func runResumable(t *testing.T, job train.Job) (*train.Result, []float32) {
	t.Helper()
	o, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := o.Place(job)
	if err != nil {
		t.Fatal(err)
	}
	c := &captured{App: o.App}
	res, err := train.Run(context.Background(), job, c, p, deploy.InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	return res, c.model
}

// losses returns the passes' rounds and losses.
func losses(res *train.Result) []string {
	var out []string
	for _, p := range res.RoundsDetail {
		out = append(out, fmt.Sprintf("pass %d rounds %d samples %d loss %x accuracy %x", p.Pass, p.Rounds, p.Samples, p.TrainLoss, p.TrainAccuracy))
	}
	return out
}

// TestResumeBitForBit trains logistic regression (servers with rule
// state, keys placed by a partitioner), matrix factorisation (workers
// with state of their own: the row factors) and node embeddings (parts
// whose negatives are drawn from the round's number) under BSP on 3 machines, 4
// rounds a pass, 3 passes, in four ways: straight; straight with a
// checkpoint every 5 rounds; stopped after 7 rounds (its checkpoint of
// round 5) then resumed; and resumed again after the newest checkpoint
// of the checkpointed run (round 10) had its snapshot damaged, so that
// the one of round 5 is used. Every run ends with the same model and
// the same passes, bit for bit.
func TestResumeBitForBit(t *testing.T) {
	for _, name := range []string{"lr", "mf", "embed"} {
		t.Run(name, func(t *testing.T) {
			job := resumeJob(t, name)
			straight, want := runResumable(t, job)
			if straight.Rounds != 12 || len(want) == 0 {
				t.Fatalf("straight run: %d rounds, model of %d values; want 12 rounds", straight.Rounds, len(want))
			}

			every := job
			// Every checkpoint due is taken, however fast the rounds.
			every.Config.Checkpoint = train.Checkpoint{Dir: t.TempDir(), Every: 5, Wait: true}
			res, got := runResumable(t, every)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(losses(res), losses(straight)) {
				t.Fatalf("checkpointing changed the training:\n%v\nwant %v", losses(res), losses(straight))
			}
			rounds, err := checkpoint.Rounds(every.Config.Checkpoint.Dir)
			if err != nil || !reflect.DeepEqual(rounds, []int{10, 5}) {
				t.Fatalf("checkpoints %v (%v), want rounds 10 and 5", rounds, err)
			}

			stopped := job
			stopped.Config.Checkpoint = train.Checkpoint{Dir: t.TempDir(), Every: 5}
			stopped.Config.MaxSteps = 7 * 3
			if res, _ := runResumable(t, stopped); res.Rounds != 7 {
				t.Fatalf("stopped run: %d rounds, want 7", res.Rounds)
			}
			resumed := job
			resumed.Config.Checkpoint = train.Checkpoint{Resume: stopped.Config.Checkpoint.Dir}
			res, got = runResumable(t, resumed)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(losses(res), losses(straight)) {
				t.Fatalf("resumed from round 5:\n%v\nwant %v", losses(res), losses(straight))
			}

			dir := every.Config.Checkpoint.Dir
			snap := filepath.Join(checkpoint.RoundDir(dir, 10), checkpoint.SnapshotName(2))
			data, err := os.ReadFile(snap)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(snap, data[:len(data)-1], 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var logged []string
			resumed.Config.Checkpoint = train.Checkpoint{Resume: dir}
			resumed.Config.Logf = func(format string, args ...any) {
				mu.Lock() // every node logs
				defer mu.Unlock()
				logged = append(logged, fmt.Sprintf(format, args...))
			}
			res, got = runResumable(t, resumed)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(losses(res), losses(straight)) {
				t.Fatalf("resumed from round 5 after round 10 was refused:\n%v\nwant %v", losses(res), losses(straight))
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(strings.Join(logged, "\n"), snap) {
				t.Fatalf("the refusal of the damaged checkpoint was not logged naming %s: %q", snap, logged)
			}
		})
	}
}

// TestResumeAsync checks that a job under bounded delay resumes from its
// checkpoint and completes its rounds, and that resuming refuses a
// directory without a checkpoint and a checkpoint of another job, naming
// them.
func TestResumeAsync(t *testing.T) {
	job, err := app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement = resumeData(t, "lr"), "random"
	job.Config.Machines, job.Config.Batch, job.Config.MaxPasses, job.Config.Epsilon = 3, 23, 3, 0
	job.Config.Clock = clock.Config{Mode: clock.Bounded, Tau: 2}
	dir := t.TempDir()
	stopped := job
	stopped.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 4}
	stopped.Config.MaxSteps = 6 * 3
	runResumable(t, stopped)
	resumed := job
	resumed.Config.Checkpoint = train.Checkpoint{Resume: dir}
	if res, model := runResumable(t, resumed); res.Rounds != 12 || len(model) == 0 {
		t.Fatalf("resumed: %d rounds, want 12", res.Rounds)
	}

	o, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := o.Place(job)
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	resumed.Config.Checkpoint = train.Checkpoint{Resume: empty}
	if _, err := train.Run(context.Background(), resumed, o.App, p, deploy.InProcess{}); err == nil || !strings.Contains(err.Error(), "no checkpoint in "+empty) {
		t.Errorf("resume from an empty directory: %v", err)
	}
	other := job
	other.Config.Seed = 9
	other.Config.Checkpoint = train.Checkpoint{Resume: dir}
	if _, err := train.Run(context.Background(), other, o.App, p, deploy.InProcess{}); err == nil || !strings.Contains(err.Error(), "checkpoint of another job") {
		t.Errorf("resume of another job: %v", err)
	}
}

// TestResumeChangedRule: the workers refuse a checkpoint of a job with
// another rate, naming it and both values, and resume from it with the
// new rate when the job overrides the check; never with another batch.
func TestResumeChangedRule(t *testing.T) {
	job, err := app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement = resumeData(t, "lr"), "random"
	job.Config.Machines, job.Config.Batch, job.Config.MaxPasses, job.Config.Epsilon = 3, 23, 3, 0
	dir := t.TempDir()
	stopped := job
	stopped.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 4}
	stopped.Config.MaxSteps = 6 * 3
	runResumable(t, stopped)

	o, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := o.Place(job)
	if err != nil {
		t.Fatal(err)
	}
	changed := job
	changed.Config.Rule.LR = 0.25
	changed.Config.Checkpoint = train.Checkpoint{Resume: dir}
	_, err = train.Run(context.Background(), changed, o.App, p, deploy.InProcess{})
	if err == nil || !strings.Contains(err.Error(), "checkpoint of another job: --lr: checkpoint 0.5, now 0.25 (--resume-override") {
		t.Errorf("resume with another rate: %v", err)
	}
	changed.Config.Checkpoint.Override = true
	if res, err := train.Run(context.Background(), changed, o.App, p, deploy.InProcess{}); err != nil || res.Rounds != 12 {
		t.Errorf("resume with another rate, overridden: %v", err)
	}
	changed.Config.Batch = 30
	if _, err := train.Run(context.Background(), changed, o.App, p, deploy.InProcess{}); err == nil || !strings.Contains(err.Error(), "--batch: checkpoint 23, now 30") {
		t.Errorf("resume with another batch, overridden: %v", err)
	}
}

// TestResumeIncremental runs the jobs of TestResumeBitForBit with
// incremental checkpoints: straight with a checkpoint every 2 rounds
// (whole snapshots and deltas, the same training bit for bit), and
// stopped after 7 rounds with one every 3, whose newest, of round 6,
// holds deltas on round 3's: resumed from it, and from round 3 once a
// delta of round 6 is damaged (the refusal naming it), each ends with
// the straight run's model and passes, bit for bit.
func TestResumeIncremental(t *testing.T) {
	for _, name := range []string{"lr", "mf", "embed"} {
		t.Run(name, func(t *testing.T) {
			job := resumeJob(t, name)
			straight, want := runResumable(t, job)

			every := job
			every.Config.Checkpoint = train.Checkpoint{Dir: t.TempDir(), Every: 2, Wait: true, Incremental: true}
			res, got := runResumable(t, every)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(losses(res), losses(straight)) {
				t.Fatalf("incremental checkpoints changed the training:\n%v\nwant %v", losses(res), losses(straight))
			}
			if res.Checkpoints != 6 || res.CheckpointDeltas == 0 {
				t.Fatalf("%d checkpoints, %d deltas: want 6 with deltas", res.Checkpoints, res.CheckpointDeltas)
			}

			stopped := job
			dir := t.TempDir()
			stopped.Config.Checkpoint = train.Checkpoint{Dir: dir, Every: 3, Incremental: true, Wait: true}
			stopped.Config.MaxSteps = 7 * 3
			if res, _ := runResumable(t, stopped); res.Rounds != 7 {
				t.Fatalf("stopped run: %d rounds, want 7", res.Rounds)
			}
			m, err := checkpoint.Open(dir, 6)
			if err != nil {
				t.Fatal(err)
			}
			var delta string
			for _, f := range m.Files {
				if strings.HasSuffix(f.Name, ".delta") {
					delta = filepath.Join(m.Dir, f.Name)
				}
			}
			if delta == "" || !reflect.DeepEqual(m.Needs, []int{3}) {
				t.Fatalf("round 6: files %v needing %v, want a delta on round 3", m.Files, m.Needs)
			}
			resumed := job
			resumed.Config.Checkpoint = train.Checkpoint{Resume: dir}
			res, got = runResumable(t, resumed)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(losses(res), losses(straight)) {
				t.Fatalf("resumed from round 6's deltas:\n%v\nwant %v", losses(res), losses(straight))
			}
			data, err := os.ReadFile(delta)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)-1] ^= 1
			if err := os.WriteFile(delta, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var logged []string
			resumed.Config.Logf = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, fmt.Sprintf(format, args...))
			}
			res, got = runResumable(t, resumed)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(losses(res), losses(straight)) {
				t.Fatalf("resumed from round 3 after round 6 was refused:\n%v\nwant %v", losses(res), losses(straight))
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(strings.Join(logged, "\n"), delta) {
				t.Fatalf("the refusal of the damaged delta was not logged naming %s: %q", delta, logged)
			}
		})
	}
}
