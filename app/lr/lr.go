// Package lr is sparse logistic regression on the parameter server, the
// workload of seeds 000 (§6.3) and 001 (§5.5): binary (one weight per
// feature) or multinomial (softmax, one key per feature holding one weight
// per class). App implements train.App; the registry (package app) opens
// it as "lr" with Options as the job's options.
//
//	a, err := lr.New(g, test, sparse.FeaturesAuto)
package lr

import (
	"context"
	"fmt"

	"colo/app/sparse"
	"colo/graph"
	"colo/ps/worker"
	"colo/train"
)

// maxClasses bounds the number of classes of a multinomial model.
const maxClasses = 1000

// App is logistic regression on a training graph, evaluated on a test
// set. It implements App.
type App struct {
	Model  Model
	Labels sparse.Labels
	Graph  *graph.Graph
	Train  *sparse.Rows
	// Test is the test set; nil evaluates on the training set.
	Test *sparse.Rows
	// Features is the transform of the feature values, resolved on the
	// training graph (never FeaturesAuto).
	Features sparse.Features
	// Threads is the number of goroutines a worker's step runs on
	// (Options.Threads).
	Threads int
}

// New prepares logistic regression on train (and test, when not
// nil) with features f (FeaturesAuto resolved on train): two distinct
// labels make a binary model, more a multinomial one.
func New(train, test *graph.Graph, f sparse.Features) (*App, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	f = f.For(train)
	labels, err := sparse.NewLabels(train, maxClasses)
	if err != nil {
		return nil, err
	}
	a := &App{Model: Model{Classes: labels.Classes()}, Labels: labels, Graph: train, Features: f}
	if a.Train, err = sparse.TrainRows(train, labels, f); err != nil {
		return nil, err
	}
	if test != nil {
		if a.Test, err = sparse.TestRows(test, train, labels, f); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Name returns "lr".
func (a *App) Name() string { return "lr" }

// Width returns the values per key.
func (a *App) Width() int { return a.Model.Width() }

// NumSamples returns the number of training samples.
func (a *App) NumSamples() int { return a.Train.Len() }

// NumKeys returns the number of features of the training set.
func (a *App) NumKeys() int { return a.Graph.NumParams() }

// Part cuts the rows of one machine into batches.
func (a *App) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	return &lrPart{model: a.Model, batches: sparse.Batches(a.Train, rows, batches, seed^uint64(rank+1)<<32, a.NumKeys()), threads: NewThreads(a.Threads)}
}

// Evaluate pulls the whole model on worker 0 and scores the test set
// (the training set without one); other workers return nothing.
func (a *App) Evaluate(ctx context.Context, w *worker.Worker, _ train.Part) (train.Eval, error) {
	if w.Rank() != 0 {
		return train.Eval{}, nil
	}
	model, err := train.PullModel(w, a.NumKeys())
	if err != nil {
		return train.Eval{}, err
	}
	rows, on := a.Test, "test"
	if rows == nil {
		rows, on = a.Train, "train"
	}
	m := a.Model.Evaluate(rows, model)
	return train.Eval{On: on, Samples: m.Samples, Accuracy: &m.Accuracy, LogLoss: &m.LogLoss, AUC: &m.AUC}, nil
}

// NonFiniteAdvice names the features transform when it left the
// training values at a scale that can overflow the model's logits (raw
// values beyond ±1): a train.Advisor.
func (a *App) NonFiniteAdvice() string {
	top := a.top()
	if top <= 1 {
		return ""
	}
	return fmt.Sprintf("the features, transformed by %s, reach %g: scale them (--features l2 or log1p-l2), or lower the learning rate", a.Features, top)
}

// Classes returns the number of classes (train.Classifier).
func (a *App) Classes() int { return a.Model.Classes }

// Chance returns the accuracy, on the set Evaluate scores, of always
// answering the training set's most frequent class (train.Classifier).
func (a *App) Chance() float64 {
	rows := a.Test
	if rows == nil {
		rows = a.Train
	}
	return chance(a.Train.Class, rows.Class, a.Model.Classes)
}

// chance returns the fraction of scored whose class is train's most
// frequent.
func chance(train, scored []int32, classes int) float64 {
	counts := make([]int, classes)
	for _, c := range train {
		counts[c]++
	}
	top := 0
	for c, n := range counts {
		if n > counts[top] {
			top = c
		}
	}
	hits := 0
	for _, c := range scored {
		if int(c) == top {
			hits++
		}
	}
	return float64(hits) / float64(max(1, len(scored)))
}

// Causes names the features' scale when their transform leaves them
// beyond ±1 (train.Diagnoser).
func (a *App) Causes() []string {
	if top := a.top(); top > 1 {
		return []string{fmt.Sprintf("the features' scale: transformed by %s, they reach %g (--features l2 or log1p-l2)", a.Features, top)}
	}
	return nil
}

// top returns the largest magnitude of the training values.
func (a *App) top() float32 {
	var top float32
	for _, x := range a.Train.Val {
		top = max(top, x, -x)
	}
	return top
}

// lrPart is a machine's share of logistic regression.
type lrPart struct {
	model   Model
	batches []*sparse.Batch
	threads *Threads
}

func (p *lrPart) Batches() int          { return len(p.batches) }
func (p *lrPart) Keys(b int) train.Keys { return train.ListKeys(p.batches[b].Keys) }
func (p *lrPart) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	bt := p.batches[b]
	loss, correct := p.threads.LossGrad(p.model, bt, vals, grad, scale)
	return loss, bt.Len(), correct
}

// Options are logistic regression's settings in a job.
type Options struct {
	// Features is the transformation of the feature values: auto, raw,
	// l2 or log1p-l2 (see sparse.Features).
	Features sparse.Features `json:"features"`
	// Threads is the number of goroutines each worker's step runs on
	// (Threads; 0 or 1: one, at most MaxThreads); the results are the
	// same to the bit at any number.
	Threads int `json:"threads"`
}

// DefaultOptions returns auto features: raw for binary data, log1p-l2
// otherwise.
func DefaultOptions() Options { return Options{Features: sparse.FeaturesAuto} }

// Defaults sets logistic regression's defaults in job: the engine's rule
// (AdaGrad, rate 0.5, no L2) and DefaultOptions.
func Defaults(job *train.Job) error {
	return job.SetOptions(DefaultOptions())
}

// Open builds logistic regression of job on the loaded training graph g,
// evaluated on test (nil: the training set), with the job's options over
// DefaultOptions.
func Open(job train.Job, g, test *graph.Graph) (*App, error) {
	o := DefaultOptions()
	if err := job.DecodeOptions(&o); err != nil {
		return nil, err
	}
	if o.Threads < 0 || o.Threads > MaxThreads {
		return nil, fmt.Errorf("lr: options.threads = %d: want 0..%d", o.Threads, MaxThreads)
	}
	a, err := New(g, test, o.Features)
	if err != nil {
		return nil, err
	}
	a.Threads = o.Threads
	return a, nil
}
