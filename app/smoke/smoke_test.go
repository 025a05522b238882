package smoke_test

import (
	"context"
	"testing"
	"time"

	"colo/app/smoke"
	"colo/cluster"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/worker"
)

func TestSmokeInProcess(t *testing.T) {
	for _, ck := range []clock.Config{{Mode: clock.BSP}, {Mode: clock.Async}} {
		cfg := cluster.DefaultConfig()
		cfg.Network, cfg.Clock, cfg.NumKeys = node.TCP{}, ck, 5000
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := cluster.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := smoke.Config{Keys: 5000, Batch: 500, Rounds: 10, Seed: 3}
		checked := make(chan bool, 2)
		err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
			r, err := s.Run(ctx, w, c.NumWorkers())
			checked <- r.Checked
			return err
		})
		if err != nil {
			t.Fatalf("%v: %v", ck, err)
		}
		if !<-checked && !<-checked {
			t.Fatalf("%v: nobody checked the sums", ck)
		}
		c.Close()
		cancel()
	}
}
