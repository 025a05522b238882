package train_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"colo/checkpoint"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/train"
	"colo/transport/tcp"
)

// dies is the linear application whose evaluation on its machine first
// closes the machine's node: a machine that dies after training. It
// records in latest the round of the newest complete checkpoint in dir
// when it dies.
type dies struct {
	*linear
	n      *node.Node
	dir    string
	latest *int
}

func (a dies) Evaluate(ctx context.Context, w *worker.Worker, part train.Part) (train.Eval, error) {
	*a.latest = -1
	if m, _, err := checkpoint.Latest(a.dir); err == nil {
		*a.latest = m.Round
	}
	a.n.Close()
	return train.Eval{}, errors.New("machine closed")
}

// rollbackCluster runs job on two machines over TCP whose scheduler
// replaces failed nodes; kill, when set, closes machine 1 when its
// evaluation starts, and a replacement resumes from the job's
// checkpoints. It returns machine 0's result and the final model.
func rollbackCluster(t *testing.T, job train.Job, a *linear, kill bool) (train.WorkerResult, []float32, int) {
	t.Helper()
	res, model, _, latest := rollbackClusterWatched(t, job, a, kill, false)
	return res, model, latest
}

// scoredLinear is the linear application as an evaluator scores it: the
// RMSE of a model over every sample.
type scoredLinear struct{ *linear }

func (a scoredLinear) ScoreModel(model []float32) train.Eval { return a.eval(model) }

// rollbackClusterWatched is rollbackCluster with, when watched is set,
// an evaluator beside the machines that scores only the final model
// (train.Watch every hour), whose report it returns. latest is the
// round of the newest complete checkpoint when machine 1 died.
func rollbackClusterWatched(t *testing.T, job train.Job, a *linear, kill, watched bool) (_ train.WorkerResult, _ []float32, _ *train.EvaluatorReport, latest int) {
	t.Helper()
	p := spread(len(a.X), a.Dim, 2)
	d, err := train.NewDeployment(job, a, p)
	if err != nil {
		t.Fatal(err)
	}
	table, err := route.FromPlacement(p.Param, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tcp.DefaultConfig()
	cfg.ID, cfg.Token = proto.SchedulerID, "t"
	sep, err := tcp.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token, sc.Table, sc.NumKeys, sc.Width = 2, 2, "t", table, uint64(a.Dim), 1
	if watched {
		sc.NumEvaluators = 1
	}
	sc.Heartbeat, sc.Timeout, sc.RecoverWait = 20*time.Millisecond, 2*time.Second, 10*time.Second
	s, err := sched.Start(sc, sep, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rule, err := update.New(job.Config.Rule)
	if err != nil {
		t.Fatal(err)
	}
	startAs := func(role proto.Role, rank int, recover bool) *node.Node {
		c := node.DefaultConfig()
		c.Role, c.Token, c.Scheduler, c.Rank, c.Recover, c.Rule = role, "t", sep.Addr().String(), rank, recover, rule
		c.Network, c.JoinTimeout = node.TCP{Host: "127.0.0.1", Token: "t"}, 10*time.Second
		n, err := node.Start(context.Background(), c)
		if err != nil {
			t.Error(err)
		}
		return n
	}
	start := func(rank int, recover bool) *node.Node { return startAs(proto.RoleMachine, rank, recover) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	work := func(n *node.Node, rank int, app train.App, resume bool) (train.WorkerResult, error) {
		sch, _, err := d.WorkerSchedule(rank, n.Server())
		if err != nil {
			return train.WorkerResult{}, err
		}
		if resume {
			sch.Checkpoint.Config.Resume = sch.Checkpoint.Config.Dir
		}
		return train.Work(ctx, n.Worker(), app, d.Part(rank), sch, nil)
	}
	ns := make([]*node.Node, 2)
	ready := make(chan int, 3)
	for i := range ns {
		go func() { ns[i] = start(i, false); ready <- i }()
	}
	var ev *node.Node
	if watched {
		go func() { ev = startAs(proto.RoleEvaluator, 0, false); ready <- -1 }()
		<-ready
	}
	<-ready
	<-ready
	if t.Failed() {
		t.FailNow()
	}
	defer func() {
		for _, n := range append(ns, ev) {
			if n != nil { // a replacement that failed to start
				n.Close()
			}
		}
	}()
	type report struct {
		rep *train.EvaluatorReport
		err error
	}
	watch := make(chan report, 1)
	if watched {
		go func() {
			rep, err := train.Watch(ctx, ev, scoredLinear{a}, train.Every{Interval: time.Hour}, int64(len(a.X)), nil)
			ev.Finish(err)
			watch <- report{rep, err}
		}()
	}
	type result struct {
		res train.WorkerResult
		err error
	}
	out := make([]chan result, 2)
	for i := range ns {
		out[i] = make(chan result, 1)
		var app train.App = a
		if kill && i == 1 {
			app = dies{a, ns[1], job.Config.Checkpoint.Dir, &latest}
		}
		go func() { r, err := work(ns[i], i, app, false); out[i] <- result{r, err} }()
	}
	if kill {
		if r := <-out[1]; r.err == nil {
			t.Fatal("machine 1 survived its evaluation")
		}
		ns[1] = start(1, true)
		if t.Failed() {
			t.FailNow()
		}
		go func() { r, err := work(ns[1], 1, a, true); out[1] <- result{r, err} }()
	}
	r0, r1 := <-out[0], <-out[1]
	if r0.err != nil || r1.err != nil {
		t.Fatalf("machine 0: %v; machine 1: %v", r0.err, r1.err)
	}
	model := make([]float32, a.Dim)
	if err := ns[0].Worker().PullRange(0, uint64(a.Dim), model).Wait(); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		n.Finish(nil)
	}
	var rep *train.EvaluatorReport
	if watched {
		w := <-watch
		if w.err != nil {
			t.Fatalf("evaluator: %v", w.err)
		}
		rep = w.rep
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("scheduler: %v", err)
	}
	return r0.res, model, rep, latest
}

// TestRollbackAfterTraining: machine 1 dies in the evaluation after
// training (its node closes). Machine 0's evaluation fails with the
// pause; it rolls back to the newest complete checkpoint at the death
// (round 10 of 12, or round 5 when the checkpoint of round 10 was
// skipped while the one of round 5 was being written) with the
// replacement, trains the last rounds again and evaluates, and the job
// ends with the same passes and final model, bit for bit, as without the
// failure.
func TestRollbackAfterTraining(t *testing.T) {
	testRollbackAfterTraining(t, train.Checkpoint{Every: 5})
}

// TestRollbackAfterTrainingIncremental is TestRollbackAfterTraining with
// incremental checkpoints, every one taken: the checkpoint of round 10
// holds deltas on round 5's, and the survivors and the replacement roll
// back to it (base and deltas), ending as without the failure.
func TestRollbackAfterTrainingIncremental(t *testing.T) {
	got := testRollbackAfterTraining(t, train.Checkpoint{Every: 5, Wait: true, Incremental: true})
	if got.CheckpointDeltas == 0 || len(got.Restores) != 1 || got.Restores[0].Round != 10 {
		t.Errorf("%d deltas written, restored %+v: want deltas, and round 10 restored", got.CheckpointDeltas, got.Restores)
	}
}

// testRollbackAfterTraining is TestRollbackAfterTraining with the
// checkpoints of ck (its directory set here); it returns machine 0's
// result of the run with the failure.
func testRollbackAfterTraining(t *testing.T, ck train.Checkpoint) train.WorkerResult {
	a := newLinear(40, 6, 3)
	job := linearJob(2, 3, 10) // 4 rounds a pass, 12 in all
	job.Config.Checkpoint = ck
	job.Config.Checkpoint.Dir = filepath.Join(t.TempDir(), "ck")
	want, wantModel, _ := rollbackCluster(t, job, a, false)
	job.Config.Checkpoint.Dir = filepath.Join(t.TempDir(), "ck")
	got, gotModel, latest := rollbackCluster(t, job, a, true)
	if !slices.Equal(gotModel, wantModel) {
		t.Errorf("final model %v, without failure %v", gotModel, wantModel)
	}
	if len(got.Passes) != len(want.Passes) {
		t.Fatalf("%d passes, without failure %d", len(got.Passes), len(want.Passes))
	}
	for i, p := range want.Passes {
		if q := got.Passes[i]; q.TrainLoss != p.TrainLoss || q.Rounds != p.Rounds {
			t.Errorf("pass %d: loss %v after %d rounds, without failure %v after %d", i+1, q.TrainLoss, q.Rounds, p.TrainLoss, p.Rounds)
		}
	}
	if latest != 5 && latest != 10 {
		t.Errorf("the newest complete checkpoint when machine 1 died is of round %d, want 10, or 5 when 10 was skipped", latest)
	}
	if len(got.Restores) != 1 || got.Restores[0].Round != latest {
		t.Errorf("machine 0 restored %+v, want the checkpoint of round %d (the newest complete one at the death) once", got.Restores, latest)
	}
	if got.Eval.RMSE == nil || want.Eval.RMSE == nil || *got.Eval.RMSE != *want.Eval.RMSE {
		t.Errorf("evaluation %+v, without failure %+v", got.Eval, want.Eval)
	}
	return got
}

// TestEvaluatorAfterRollback: machine 1 dies after training and is
// replaced while an evaluator that scores only the final model (every
// hour) never calls during the pause; its calls fail with the pause
// until it rejoins, which it must do at the final score. Its final
// score is that of the final model, the same as without the failure.
func TestEvaluatorAfterRollback(t *testing.T) {
	a := newLinear(40, 6, 3)
	job := linearJob(2, 3, 10)
	job.Config.Checkpoint = train.Checkpoint{Dir: filepath.Join(t.TempDir(), "ck"), Every: 5}
	_, wantModel, want, _ := rollbackClusterWatched(t, job, a, false, true)
	job.Config.Checkpoint.Dir = filepath.Join(t.TempDir(), "ck")
	_, gotModel, got, _ := rollbackClusterWatched(t, job, a, true, true)
	if !slices.Equal(gotModel, wantModel) {
		t.Fatalf("final model %v, without failure %v", gotModel, wantModel)
	}
	last := func(r *train.EvaluatorReport) train.Check {
		if r == nil || len(r.Checks) == 0 {
			t.Fatalf("no score in %+v", r)
		}
		return r.Checks[len(r.Checks)-1]
	}
	g, w := last(got), last(want)
	if !g.Final || g.Validation.RMSE == nil || *g.Validation.RMSE != *w.Validation.RMSE || g.Step != w.Step {
		t.Fatalf("final score %+v (RMSE %v), without failure %+v (RMSE %v)", g, g.Validation.RMSE, w, w.Validation.RMSE)
	}
}
