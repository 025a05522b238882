package lr

import (
	"runtime"
	"testing"

	"colo/app/sparse"
	"colo/partition"
	"colo/train"
)

// BenchmarkLossGrad measures one full-batch pass of softmax regression
// over 20 Newsgroups (1.47M entries × 20 classes), forward and backward,
// on GOMAXPROCS goroutines (Threads; -cpu 1,2).
func BenchmarkLossGrad(b *testing.B) {
	app, err := news20()
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]int32, app.NumSamples())
	for i := range rows {
		rows[i] = int32(i)
	}
	bt := sparse.Batches(app.Train, rows, 1, 1, app.NumKeys())[0]
	w := make([]float32, len(bt.Keys)*app.Width())
	for i := range w {
		w[i] = float32(i%7) * 0.01
	}
	grad := make([]float32, len(w))
	th := NewThreads(runtime.GOMAXPROCS(0))
	th.LossGrad(app.Model, bt, w, grad, 1e-4) // its plan, kept between steps
	b.ResetTimer()
	for b.Loop() {
		clear(grad)
		th.LossGrad(app.Model, bt, w, grad, 1e-4)
	}
	b.ReportMetric(float64(len(bt.Pos))/1e6/(b.Elapsed().Seconds()/float64(b.N)), "Mentries/s")
}

// BenchmarkRunNews20 trains 3 full-batch passes of 20 Newsgroups on 8
// in-process machines with unlimited links: the cost of a round apart
// from the network.
func BenchmarkRunNews20(b *testing.B) {
	app, err := news20()
	if err != nil {
		b.Fatal(err)
	}
	run, err := partition.Lookup("parsa")
	if err != nil {
		b.Fatal(err)
	}
	p, err := run(app.Graph, partition.Options{K: 8, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	cfg := train.DefaultConfig()
	cfg.Machines, cfg.MaxPasses, cfg.Epsilon = 8, 12, 0
	for b.Loop() {
		if _, err := trainOn(app, p, "parsa", nil, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/12*1000, "ms/round")
}
