package server

import (
	"context"
	"math/rand/v2"
	"testing"

	"colo/internal/workload"
	"colo/kv"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/update"
	"colo/transport"
)

// BenchmarkStorePushSparse adds a sparse push of colo bench kv (100k
// random keys of 2^24, one value each) into a store of 2^24 values.
func BenchmarkStorePushSparse(b *testing.B) {
	keys := workload.SparseKeySet()
	tb, _ := route.Uniform(1, workload.SparseSpace)
	s := NewStore(tb.Index(0), 1, update.Sum{})
	batch := kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}
	for i := range batch.Vals {
		batch.Vals[i] = 1
	}
	b.SetBytes(int64(12 * len(keys)))
	for b.Loop() {
		if err := s.Push(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAdviseHugeKeepsValues checks that the advice of huge pages leaves
// the values of arrays of any size and alignment as they were.
func TestAdviseHugeKeepsValues(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1 << 20, 3<<20 + 7} {
		for _, skip := range []int{0, 1, 3} {
			if skip > n {
				continue
			}
			a := make([]float32, n)
			for i := range a {
				a[i] = float32(i)
			}
			adviseHuge(a[skip:])
			for i, v := range a {
				if v != float32(i) {
					t.Fatalf("n %d skip %d: value %d is %v", n, skip, i, v)
				}
			}
		}
	}
}

// nopConn drops replies.
type nopConn struct{}

func (nopConn) Reply(context.Context, transport.NodeID, *transport.Message) error { return nil }

// BenchmarkServerHandlePull serves a pull of one key of width 16 as the
// loop does (locked, Run), and bare: the difference is the cost of the
// lock a co-located worker's direct pulls need (PullLocal).
func BenchmarkServerHandlePull(b *testing.B) {
	tb, _ := route.Uniform(1, 1<<20)
	s, err := NewServer(Config{Workers: 1, Table: tb, Width: 16})
	if err != nil {
		b.Fatal(err)
	}
	m := &transport.Message{Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPull,
		Cmd: proto.DataSparse, Sender: proto.WorkerID(0)}, Body: proto.AppendMetaEpoch(nil, 0, 0), KV: kv.Batch{Keys: []uint64{77}}}
	ctx := context.Background()
	for _, locked := range []bool{true, false} {
		b.Run(map[bool]string{true: "loop", false: "bare"}[locked], func(b *testing.B) {
			for b.Loop() {
				if locked {
					s.serve.Lock()
				}
				s.handle(ctx, m, nopConn{})
				if locked {
					s.serve.Unlock()
				}
			}
		})
	}
}

// BenchmarkStorePushTracked is the cost of the marks of incremental
// checkpoints (Store.Track) on the push path: the sparse push of
// BenchmarkStorePushSparse (100k keys of 2^24, width 1, the sum), and
// ctr's shape (4,000 keys of 12,500, width 32, AdaGrad), each with and
// without the marks.
func BenchmarkStorePushTracked(b *testing.B) {
	keys := workload.SparseKeySet()
	tb, _ := route.Uniform(1, workload.SparseSpace)
	ctrKeys := make([]uint64, 0, 4000)
	for k := uint64(0); k < 12500 && len(ctrKeys) < 4000; k += 3 {
		ctrKeys = append(ctrKeys, k)
	}
	tc, _ := route.Uniform(1, 12500)
	cfg := update.DefaultConfig()
	cfg.Name = "adagrad"
	for _, tracked := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[tracked]
		b.Run("sparse/"+name, func(b *testing.B) {
			s := NewStore(tb.Index(0), 1, update.Sum{})
			if tracked {
				s.Track()
			}
			batch := kv.Batch{Keys: keys, Vals: make([]float32, len(keys))}
			b.SetBytes(int64(12 * len(keys)))
			for b.Loop() {
				if err := s.Push(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("ctr/"+name, func(b *testing.B) {
			rule, err := update.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			s := NewStore(tc.Index(0), 32, rule)
			if tracked {
				s.Track()
			}
			batch := kv.Batch{Keys: ctrKeys, Vals: make([]float32, 32*len(ctrKeys))}
			for i := range batch.Vals {
				batch.Vals[i] = 0.01
			}
			b.SetBytes(int64(4 * len(batch.Vals)))
			for b.Loop() {
				if err := s.Accumulate(batch); err != nil {
					b.Fatal(err)
				}
				s.Flush()
			}
		})
	}
}

// BenchmarkCapture is a checkpoint's capture of a store of ctr's shape on
// flights-3m (12,500 keys of 32 values, AdaGrad) of which 61% of the rows
// were written since the capture before, as between two checkpoints 10
// rounds apart: the whole snapshot against the changed slots.
func BenchmarkCapture(b *testing.B) {
	tc, _ := route.Uniform(1, 12500)
	cfg := update.DefaultConfig()
	cfg.Name = "adagrad"
	rule, err := update.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := NewStore(tc.Index(0), 32, rule)
	s.Track()
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []uint64
	for k := range uint64(12500) {
		if rng.Float64() < 0.61 {
			keys = append(keys, k)
		}
	}
	if err := s.Push(kv.Batch{Keys: keys, Vals: make([]float32, 32*len(keys))}); err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			s.Snapshot(0, s.Keys())
		}
	})
	b.Run("changed", func(b *testing.B) {
		for b.Loop() {
			s.SnapshotChanged(0, s.Keys())
		}
	})
}
