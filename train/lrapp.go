package train

import (
	"context"

	"colo/graph"
	"colo/ps/worker"
)

// maxClasses bounds the number of classes of a multinomial model.
const maxClasses = 1000

// LRApp is logistic regression on a training graph, evaluated on a test
// set. It implements App.
type LRApp struct {
	Model  LR
	Labels Labels
	Graph  *graph.Graph
	Train  *Rows
	// Test is the test set; nil evaluates on the training set.
	Test *Rows
}

// NewLRApp prepares logistic regression on train (and test, when not
// nil) with features f (FeaturesAuto resolved on train): two distinct
// labels make a binary model, more a multinomial one.
func NewLRApp(train, test *graph.Graph, f Features) (*LRApp, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	f = f.For(train)
	labels, err := NewLabels(train, maxClasses)
	if err != nil {
		return nil, err
	}
	a := &LRApp{Model: LR{Classes: labels.Classes()}, Labels: labels, Graph: train}
	if a.Train, err = TrainRows(train, labels, f); err != nil {
		return nil, err
	}
	if test != nil {
		if a.Test, err = TestRows(test, train, labels, f); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Name returns "lr".
func (a *LRApp) Name() string { return "lr" }

// Width returns the values per key.
func (a *LRApp) Width() int { return a.Model.Width() }

// NumSamples returns the number of training samples.
func (a *LRApp) NumSamples() int { return a.Train.Len() }

// NumKeys returns the number of features of the training set.
func (a *LRApp) NumKeys() int { return a.Graph.NumParams() }

// Part cuts the rows of one machine into batches.
func (a *LRApp) Part(rank int, rows []int32, batches int, seed uint64) Part {
	return &lrPart{model: a.Model, batches: Batches(a.Train, rows, batches, seed^uint64(rank+1)<<32, a.NumKeys())}
}

// Evaluate pulls the whole model on worker 0 and scores the test set
// (the training set without one); other workers return nothing.
func (a *LRApp) Evaluate(ctx context.Context, w *worker.Worker, _ Part) (Eval, error) {
	if w.Rank() != 0 {
		return Eval{}, nil
	}
	model, err := PullModel(w, a.NumKeys())
	if err != nil {
		return Eval{}, err
	}
	rows, on := a.Test, "test"
	if rows == nil {
		rows, on = a.Train, "train"
	}
	m := a.Model.Evaluate(rows, model)
	return Eval{On: on, Samples: m.Samples, Accuracy: &m.Accuracy, LogLoss: &m.LogLoss, AUC: &m.AUC}, nil
}

// PullModel pulls the values of keys [0, numKeys) from the servers.
func PullModel(w *worker.Worker, numKeys int) ([]float32, error) {
	keys := make([]uint64, numKeys)
	for i := range keys {
		keys[i] = uint64(i)
	}
	model := make([]float32, numKeys*w.Width())
	if err := w.Pull(keys, model).Wait(); err != nil {
		return nil, err
	}
	return model, nil
}

// lrPart is a machine's share of logistic regression.
type lrPart struct {
	model   LR
	batches []*Batch
}

func (p *lrPart) Batches() int        { return len(p.batches) }
func (p *lrPart) Keys(b int) []uint64 { return p.batches[b].Keys }
func (p *lrPart) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	bt := p.batches[b]
	loss, correct := p.model.LossGrad(bt, vals, grad, scale)
	return loss, bt.Len(), correct
}
