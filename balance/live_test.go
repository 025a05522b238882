package balance_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"colo/balance"
	"colo/cluster"
	"colo/ps/server"
	"colo/ps/worker"
	"colo/transport"
)

// TestAwareMeasuresTheLinks: on the in-memory network with every
// machine's sending rate drawn at random, the speeds Aware measures on
// the pulls of an evenly split model converge to the true rates within
// 2%. The cluster runs on the fake clock of a synctest bubble, so the
// emulated transfers take their time exactly, whatever else the machine
// runs.
func TestAwareMeasuresTheLinks(t *testing.T) {
	synctest.Test(t, awareMeasures)
}

func awareMeasures(t *testing.T) {
	const machines, keys, rounds, rate = 4, 1 << 17, 8, 8e6
	cfg := cluster.DefaultConfig()
	cfg.Machines, cfg.NumKeys, cfg.RandomBandwidth, cfg.Seed = machines, keys, rate, 3
	bc := balance.DefaultConfig()
	bc.Scheme, bc.MinGain = balance.Aware, 0.99 // measure, never move
	rep := measureRounds(t, cfg, bc, rounds)[0]
	truth := transport.RandomRates(machines, rate, 3, 0)
	got := rep.Decisions[len(rep.Decisions)-1].Speeds
	for j, r := range truth {
		want := r / 4 // keys per second
		if e := math.Abs(got[j]-want) / want; e > 0.02 {
			t.Errorf("node %d: measured %.0f keys/s, true %.0f (%.0f%% off)", j, got[j], want, 100*e)
		}
	}
	t.Logf("measured %v keys/s, true rates %v bytes/s", got, truth)
}

// measureRounds starts a cluster of cfg and runs rounds rounds of a
// dense model's pull and push of every key on every machine, each
// followed by the worker's balancer of bc; it returns every worker's
// report, by rank.
func measureRounds(t *testing.T, cfg cluster.Config, bc balance.Config, rounds int) []balance.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys := cfg.NumKeys
	reps := make([]balance.Report, cfg.Machines)
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		b, err := balance.New(bc, cfg.Machines, keys, nil, func() server.Egress { return c.Server(w.Rank()).Stats().Egress })
		if err != nil {
			return err
		}
		vals := make([]float32, keys)
		for r := range rounds {
			if err := w.PullRange(0, keys, vals).Wait(); err != nil {
				return err
			}
			if err := w.PushRange(0, vals).Wait(); err != nil {
				return err
			}
			if err := b.AfterRound(ctx, w, r+1); err != nil {
				return err
			}
		}
		reps[w.Rank()] = b.Report()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reps
}
