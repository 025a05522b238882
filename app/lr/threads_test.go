package lr

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"colo/app/sparse"
	"colo/train"
)

// TestThreadsBitIdentical checks that a step on 2–5 goroutines gives
// LossGrad's loss, count and gradient to the bit: binary and multinomial
// models of widths that take every path of the kernels (blocks of 16, 8
// and 4 classes and the rest), on one batch and on several, stepped twice
// (the second from the kept plan), and on 20 Newsgroups.
func TestThreadsBitIdentical(t *testing.T) {
	type problem struct {
		name string
		app  *App
	}
	var problems []problem
	for _, classes := range []int{2, 3, 7, 20, 29} {
		g := randomProblem(t, 700, 300, classes, uint64(classes)+11)
		app, err := New(g, nil, sparse.FeaturesLog1pL2)
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, problem{"random", app})
	}
	problems = append(problems, problem{"20 Newsgroups", loadNews20(t)})
	for _, pr := range problems {
		app := pr.app
		rows := make([]int32, app.NumSamples())
		for i := range rows {
			rows[i] = int32(i)
		}
		W := app.Width()
		for _, nb := range []int{1, 3} {
			for _, b := range sparse.Batches(app.Train, rows, nb, 5, app.NumKeys()) {
				rng := rand.New(rand.NewPCG(uint64(W), uint64(nb)))
				w := make([]float32, len(b.Keys)*W)
				for i := range w {
					w[i] = float32(rng.NormFloat64())
				}
				want := make([]float32, len(w))
				wantLoss, wantCorrect := app.Model.LossGrad(b, w, want, 0.37)
				for _, n := range []int{2, 3, 5} {
					th := NewThreads(n)
					th.minEntries = 1
					for step := range 2 {
						got := make([]float32, len(w))
						loss, correct := th.LossGrad(app.Model, b, w, got, 0.37)
						if loss != wantLoss || correct != wantCorrect || !slices.Equal(got, want) {
							t.Fatalf("%s, %d classes, %d batches, %d goroutines, step %d: loss %v correct %d, LossGrad's %v and %d; gradients equal: %v",
								pr.name, app.Model.Classes, nb, n, step, loss, correct, wantLoss, wantCorrect, slices.Equal(got, want))
						}
					}
				}
			}
		}
	}
}

// TestOpenThreads: options.threads outside 0…MaxThreads is refused,
// naming the option; within, the parts step on that many goroutines.
func TestOpenThreads(t *testing.T) {
	app := loadNews20(t)
	for _, n := range []int{-1, MaxThreads + 1} {
		job := train.Job{App: "lr", Options: []byte(fmt.Sprintf(`{"threads": %d}`, n))}
		if _, err := Open(job, app.Graph, nil); err == nil || !strings.Contains(err.Error(), "options.threads") {
			t.Errorf("threads %d: %v, want a refusal naming options.threads", n, err)
		}
	}
	job := train.Job{App: "lr", Options: []byte(`{"threads": 2}`)}
	a, err := Open(job, app.Graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := a.Part(0, []int32{0, 1, 2}, 1, 1).(*lrPart); p.threads.n != 2 {
		t.Errorf("a part steps on %d goroutines, want 2", p.threads.n)
	}
}
