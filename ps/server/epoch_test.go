package server

import (
	"context"
	"slices"
	"sync"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/replica"
	"colo/ps/route"
	"colo/transport"
)

// recordConn records the replies of a server.
type recordConn struct {
	mu      sync.Mutex
	replies []*transport.Message
}

func (c *recordConn) Reply(_ context.Context, to transport.NodeID, m *transport.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := *m
	cp.Receiver = to
	cp.KV.Vals = append([]float32(nil), m.KV.Vals...)
	c.replies = append(c.replies, &cp)
	return nil
}

// epochRequest returns worker w's sparse request of keys {1, 2} in the
// given round and epoch: a push of vals, or a pull.
func epochRequest(w int, id uint64, round int64, epoch uint64, vals []float32) *transport.Message {
	flags := transport.FlagRequest | transport.FlagPull
	if vals != nil {
		flags = transport.FlagRequest | transport.FlagPush
	}
	return &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: flags, Cmd: proto.DataSparse, ID: id,
			Sender: proto.WorkerID(w), Receiver: proto.ServerID(0)},
		Body: proto.AppendMetaEpoch(nil, round, epoch),
		KV:   kv.Batch{Keys: []uint64{1, 2}, Vals: vals},
	}
}

// TestServerEpochs: under BSP with two workers, a request of a later
// membership epoch rewinds the server (the store empty, the clock at
// round 0, worker 0's held push of the old epoch dropped), and requests
// of earlier epochs are dropped unanswered.
func TestServerEpochs(t *testing.T) {
	tb, _ := route.Uniform(1, 8)
	s, err := NewServer(Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}})
	if err != nil {
		t.Fatal(err)
	}
	conn := &recordConn{}
	in := make(chan *transport.Message, 16)
	for _, m := range []*transport.Message{
		// Epoch 0: round 0 summed, worker 0's push of round 1 held.
		epochRequest(0, 1, 0, 0, []float32{1, 2}),
		epochRequest(1, 1, 0, 0, []float32{10, 20}),
		epochRequest(0, 2, 1, 0, []float32{100, 200}),
		// Epoch 1: worker 1 pushes round 0 again; worker 0's push of
		// epoch 0 arrives late and is dropped.
		epochRequest(1, 2, 0, 1, []float32{3, 4}),
		epochRequest(0, 3, 1, 0, []float32{1000, 2000}),
		epochRequest(0, 4, 0, 1, []float32{5, 6}),
		epochRequest(0, 5, 1, 1, nil),
		epochRequest(1, 3, 1, 0, nil),
	} {
		in <- m
	}
	close(in)
	if err := s.Run(context.Background(), in, conn); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	var pulled []float32
	for _, r := range conn.replies {
		if r.Cmd == proto.DataError {
			t.Fatalf("error reply: %s", r.Body)
		}
		ids = append(ids, uint64(r.Receiver)<<8|r.ID)
		if r.Flags&transport.FlagPull != 0 {
			pulled = r.KV.Vals
		}
	}
	// Acks in worker order: round 0 of epoch 0, round 0 of epoch 1,
	// then worker 0's pull of epoch 1.
	w0, w1 := uint64(proto.WorkerID(0))<<8, uint64(proto.WorkerID(1))<<8
	want := []uint64{w0 | 1, w1 | 1, w0 | 4, w1 | 2, w0 | 5}
	if len(ids) != len(want) {
		t.Fatalf("replies to %x, want %x", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("replies to %x, want %x", ids, want)
		}
	}
	// The sum of epoch 1's round 0 alone: 3+5 and 4+6, nothing of epoch
	// 0.
	if len(pulled) != 2 || pulled[0] != 8 || pulled[1] != 10 {
		t.Fatalf("pulled %v after the rewind, want [8 10]", pulled)
	}
}

// TestTakenOverLaterEpoch: a server taken over in epoch 1 drops a
// request of that epoch without proto.FlagResent (its worker sends it
// again, marked, in order with the others) and serves a marked one; a
// request of a later epoch, from a worker that joined after the
// failover and never had the failed server's old address, is served
// unmarked.
func TestTakenOverLaterEpoch(t *testing.T) {
	tb, _ := route.Uniform(1, 8)
	s, err := NewServer(Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}})
	if err != nil {
		t.Fatal(err)
	}
	s.epoch = 1
	s.rep = &replication{primary: replica.NewPrimary[Reply](nil), taken: replica.NewReplica(2), takenEpoch: 1}
	resent := epochRequest(1, 2, 0, 1, []float32{10, 20})
	resent.Flags |= proto.FlagResent
	conn := &recordConn{}
	in := make(chan *transport.Message, 16)
	for _, m := range []*transport.Message{
		epochRequest(1, 1, 0, 1, []float32{1, 2}), // dropped
		resent,
		epochRequest(0, 3, 0, 2, []float32{3, 4}), // a later epoch
		epochRequest(0, 4, 1, 2, nil),
	} {
		in <- m
	}
	close(in)
	if err := s.Run(context.Background(), in, conn); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	var pulled []float32
	for _, r := range conn.replies {
		if r.Cmd == proto.DataError {
			t.Fatalf("error reply: %s", r.Body)
		}
		ids = append(ids, uint64(r.Receiver)<<8|r.ID)
		if r.Flags&transport.FlagPull != 0 {
			pulled = r.KV.Vals
		}
	}
	w0, w1 := uint64(proto.WorkerID(0))<<8, uint64(proto.WorkerID(1))<<8
	if want := []uint64{w1 | 2, w0 | 3, w0 | 4}; !slices.Equal(ids, want) {
		t.Fatalf("replies to %x, want %x", ids, want)
	}
	// Epoch 2 rewinds the store: worker 0's push alone.
	if !slices.Equal(pulled, []float32{3, 4}) {
		t.Fatalf("pulled %v, want [3 4]", pulled)
	}
}

// replicaAck is backup b's acknowledgement of the updates up to seq of
// the given epoch.
func replicaAck(b int, seq, epoch uint64) *transport.Message {
	return &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataReplicaAck, ID: seq, Sender: proto.ServerID(b), Receiver: proto.ServerID(0)},
		Body:   proto.AppendMetaEpoch(nil, 0, epoch),
	}
}

// TestReplicaAckEpoch: server 0, backed up by server 1, holds worker 0's
// two pushes of epoch 0, then (after a rollback) its two pushes of epoch
// 1, updates 1 and 2 of their epoch. The backup's late acknowledgement
// of epoch 0's update 2 releases nothing; its acknowledgement of epoch
// 1's update 1 releases that push alone. A backup's acknowledgement carries the
// epoch of its copy.
func TestReplicaAckEpoch(t *testing.T) {
	tb, _ := route.Uniform(2, 8)
	cfg := Config{Rank: 0, Workers: 1, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}}
	s, err := NewReplicated(cfg, Replication{Backups: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	conn := &recordConn{}
	in := make(chan *transport.Message, 16)
	for _, m := range []*transport.Message{
		epochRequest(0, 1, 0, 0, []float32{1, 2}),
		epochRequest(0, 2, 1, 0, []float32{1, 2}),
		epochRequest(0, 3, 0, 1, []float32{3, 4}),
		epochRequest(0, 4, 1, 1, []float32{3, 4}),
		replicaAck(1, 2, 0), // late: of epoch 0
		replicaAck(1, 1, 1),
	} {
		in <- m
	}
	close(in)
	if err := s.Run(context.Background(), in, conn); err != nil {
		t.Fatal(err)
	}
	var acked []uint64
	for _, r := range conn.replies {
		if role, _ := proto.Identify(r.Receiver); role == proto.RoleWorker {
			acked = append(acked, r.ID)
		}
	}
	// Epoch 1's first push alone: the late acknowledgement of epoch 0's
	// update 2 would release both of epoch 1's.
	if !slices.Equal(acked, []uint64{3}) {
		t.Fatalf("pushes acknowledged %v, want [3] (epoch 1's first, by its own acknowledgement)", acked)
	}

	// The backup's side: its acknowledgement names its copy's epoch.
	b, err := NewReplicated(Config{Rank: 1, Workers: 1, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.Async}}, Replication{Copies: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	var fwd *transport.Message
	for _, r := range conn.replies {
		if r.Cmd == proto.DataReplicate && fwd == nil && r.ID == 3 {
			fwd = r // epoch 1's first update
		}
	}
	fwd.Sender = proto.ServerID(0)
	bconn := &recordConn{}
	bin := make(chan *transport.Message, 1)
	bin <- fwd
	close(bin)
	if err := b.Run(context.Background(), bin, bconn); err != nil {
		t.Fatal(err)
	}
	if len(bconn.replies) != 1 || bconn.replies[0].Cmd != proto.DataReplicaAck {
		t.Fatalf("backup replied %d messages, want one acknowledgement", len(bconn.replies))
	}
	if _, epoch, err := proto.ParseMetaEpoch(bconn.replies[0]); err != nil || epoch != 1 || bconn.replies[0].ID != 1 {
		t.Fatalf("backup's acknowledgement: update %d, epoch %d, %v; want update 1 of epoch 1", bconn.replies[0].ID, epoch, err)
	}
}

// replicaSum returns server 0's update seq to its backups: the sum of
// round of keys {1, 2}.
func replicaSum(seq uint64, round int64, keys []uint64, vals []float32) *transport.Message {
	return &transport.Message{
		Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagPush, Cmd: proto.DataReplicate, Sender: proto.ServerID(0)},
		Body:   proto.AppendReplica(proto.AppendMetaEpoch(nil, round, 0), seq, 0, proto.DataRound),
		KV:     kv.Batch{Keys: keys, Vals: vals},
	}
}

// TestBackupRefusesBadSum: a backup acknowledges a round's sum only once
// it knows its copy can apply it. A sum with more values than keys, and one
// of a round the copy is not at, are neither acknowledged nor recorded:
// the primary's acknowledgements wait, and the good sum sent after them
// with the same number is applied.
func TestBackupRefusesBadSum(t *testing.T) {
	tb, _ := route.Uniform(2, 8)
	b, err := NewReplicated(Config{Rank: 1, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}}, Replication{Copies: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	conn := &recordConn{}
	in := make(chan *transport.Message, 4)
	in <- replicaSum(1, 0, []uint64{2, 1}, []float32{5, 6, 7}) // 3 values of 2 keys
	in <- replicaSum(1, 3, []uint64{1, 2}, []float32{5, 6})    // the copy is at round 0
	in <- replicaSum(1, 0, []uint64{1, 2}, []float32{1, 2})
	close(in)
	if err := b.Run(context.Background(), in, conn); err != nil {
		t.Fatal(err)
	}
	var acks []uint64
	for _, r := range conn.replies {
		if r.Cmd == proto.DataReplicaAck {
			acks = append(acks, r.ID)
		}
	}
	if !slices.Equal(acks, []uint64{1}) {
		t.Errorf("acknowledged %v, want [1] (the good sum alone)", acks)
	}
	got := b.Copy(0).Pull(kv.Batch{}, []uint64{1, 2}).Vals
	if !slices.Equal(got, []float32{1, 2}) {
		t.Errorf("copy holds %v, want [1 2]", got)
	}
}

// TestRefusalWaitsForRound: under BSP a primary's refusal of a push (two
// values for two keys of width 2, counted in the round so that the
// others do not wait for it) goes once its backups have the round, not
// before: the worker does not keep a refused push, and were the primary
// to die before the backup has the round, the backup that takes over
// would wait for that worker's push of the round for ever. The other
// worker's acknowledgement goes as before, once the round before is
// replicated.
func TestRefusalWaitsForRound(t *testing.T) {
	tb, _ := route.Uniform(2, 8)
	run := func(acked bool) (refusals, acks int) {
		s, err := NewReplicated(Config{Rank: 0, Workers: 2, Table: tb, Width: 2, Clock: clock.Config{Mode: clock.BSP}}, Replication{Backups: []int{1}})
		if err != nil {
			t.Fatal(err)
		}
		conn := &recordConn{}
		in := make(chan *transport.Message, 4)
		in <- epochRequest(0, 1, 0, 0, []float32{1, 2}) // refused: width 2
		in <- epochRequest(1, 1, 0, 0, []float32{1, 2, 3, 4})
		if acked {
			in <- replicaAck(1, 1, 0)
		}
		close(in)
		if err := s.Run(context.Background(), in, conn); err != nil {
			t.Fatal(err)
		}
		for _, r := range conn.replies {
			switch {
			case r.Receiver == proto.WorkerID(0) && r.Cmd == proto.DataError:
				refusals++
			case r.Receiver == proto.WorkerID(1) && r.Cmd != proto.DataError:
				acks++
			}
		}
		return refusals, acks
	}
	if refusals, acks := run(false); refusals != 0 || acks != 1 {
		t.Errorf("round 0 not replicated: %d refusals to worker 0 (want 0), %d acknowledgements to worker 1 (want 1)", refusals, acks)
	}
	if refusals, acks := run(true); refusals != 1 || acks != 1 {
		t.Errorf("round 0 replicated: %d refusals to worker 0 (want 1), %d acknowledgements to worker 1 (want 1)", refusals, acks)
	}
}

// TestRewindDropsParked: a server taken over under BSP parks a pull sent
// again for a round not summed yet; a request of a later epoch (a
// rollback) drops it, released: its call failed with the pause, and the
// rounds of the new epoch count from 0 again, so that it would stay
// parked, holding its message, until the new epoch reached its round.
func TestRewindDropsParked(t *testing.T) {
	tb, _ := route.Uniform(1, 8)
	s, err := NewServer(Config{Rank: 0, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}})
	if err != nil {
		t.Fatal(err)
	}
	s.epoch = 1
	s.rep = &replication{primary: replica.NewPrimary[Reply](nil), taken: replica.NewReplica(2), takenEpoch: 1}
	pull := epochRequest(1, 2, 5, 1, nil)
	pull.Flags |= proto.FlagResent
	in := make(chan *transport.Message, 2)
	in <- pull
	close(in)
	if err := s.Run(context.Background(), in, &recordConn{}); err != nil {
		t.Fatal(err)
	}
	if len(s.rep.parked) != 1 {
		t.Fatalf("%d pulls parked, want 1", len(s.rep.parked))
	}
	in = make(chan *transport.Message, 2)
	in <- epochRequest(0, 3, 0, 2, []float32{3, 4})
	close(in)
	if err := s.Run(context.Background(), in, &recordConn{}); err != nil {
		t.Fatal(err)
	}
	if len(s.rep.parked) != 0 {
		t.Fatalf("%d pulls of epoch 1 still parked in epoch 2", len(s.rep.parked))
	}
}

// FuzzCopy feeds a backup a whole copy of server 0's ranges
// (proto.DataCopy) with any clock state and snapshot: it never panics or
// hangs, and it acknowledges exactly the copies it installs.
func FuzzCopy(f *testing.F) {
	good := proto.AppendCopyState(nil, 1, 4, []int64{2, 2})
	f.Add(uint8(clock.BSP), good, []byte{1, 2}, []byte{0, 0, 128, 63, 0, 0, 0, 64})
	f.Add(uint8(clock.Async), proto.AppendCopyState(nil, 1, 7, []int64{5, 2}), []byte{3}, []byte{0, 0, 128, 63})
	f.Add(uint8(clock.BSP), proto.AppendCopyState(nil, 1, 7, []int64{1 << 62, 1 << 62}), []byte{1}, []byte{0, 0, 128, 63})
	f.Fuzz(func(t *testing.T, mode uint8, state, keys, vals []byte) {
		ck := clock.Config{Mode: clock.Mode(mode % 3)}
		if ck.Mode == clock.Bounded {
			ck.Tau = 1
		}
		tb, _ := route.Uniform(2, 8)
		b, err := NewReplicated(Config{Rank: 1, Workers: 2, Table: tb, Width: 1, Clock: ck}, Replication{})
		if err != nil {
			t.Fatal(err)
		}
		batch := kv.Batch{Keys: []uint64{}, Vals: []float32{}}
		for _, k := range keys {
			batch.Keys = append(batch.Keys, uint64(k%16))
		}
		for i := 0; i+4 <= len(vals); i += 4 {
			batch.Vals = append(batch.Vals, float32(int32(vals[i])|int32(vals[i+1])<<8))
		}
		msg := &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Cmd: proto.DataReplicate, Sender: proto.ServerID(0)},
			Body:   append(proto.AppendReplica(proto.AppendMetaEpoch(nil, 0, 0), 3, 0, proto.DataCopy), state...),
			KV:     batch,
		}
		conn := &recordConn{}
		in := make(chan *transport.Message, 1)
		in <- msg
		close(in)
		if err := b.Run(context.Background(), in, conn); err != nil {
			t.Fatal(err)
		}
		acked := len(conn.replies) == 1 && conn.replies[0].Cmd == proto.DataReplicaAck && conn.replies[0].ID == 3
		if installed := b.Copy(0) != nil; acked != installed || len(conn.replies) > 1 {
			t.Fatalf("copy installed %v, %d replies (acknowledged %v)", installed, len(conn.replies), acked)
		}
	})
}
