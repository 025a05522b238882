package server

import (
	"context"
	"slices"
	"testing"

	"colo/kv"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/transport"
)

// takenOver returns server 1's takeover of server 0's ranges under BSP
// with two workers and width 1 (keys [0, 4) of 8): its copy had round 0's
// sum, {3, 4} on keys {1, 2}, and not round 1's, which the failed
// primary had acknowledged to the workers (replica.Primary.ApplyAhead)
// before it reached the backup.
func takenOver(t *testing.T) *Server {
	t.Helper()
	tb, _ := route.Uniform(2, 8)
	var taken *Server
	b, err := NewReplicated(Config{Rank: 1, Workers: 2, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}},
		Replication{Copies: []int{0}, Takeover: func(rank int, srv *Server) {
			if rank == 0 {
				taken = srv
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	in := make(chan *transport.Message, 2)
	in <- replicaSum(1, 0, []uint64{1, 2}, []float32{3, 4})
	in <- proto.Control(proto.CmdFailover, proto.Failover{Server: 0, Backup: 1, Seq: 1})
	close(in)
	if err := b.Run(context.Background(), in, &recordConn{}); err != nil {
		t.Fatal(err)
	}
	if taken == nil {
		t.Fatal("server 1 did not take server 0's ranges over")
	}
	return taken
}

// resent marks m as sent again to the server that took its ranges over.
func resent(m *transport.Message) *transport.Message {
	m.Flags |= proto.FlagResent
	return m
}

// TestTakenOverWaitsForRound: after a failover under BSP, a worker sends
// the backup that took over its push of round 1, which the failed
// primary had acknowledged before its backup had the round, and then
// the request it made between rounds 1 and 2 once every worker's pushes
// of round 1 were acknowledged: a checkpoint's snapshot, or a move's new
// routing table. The other worker's push of round 1 comes after it (each
// worker sends again when it learns of the failover). The request waits
// for the round: it is served once the backup has summed round 1, as
// the primary served it, not refused because a push of round 1 is held.
func TestTakenOverWaitsForRound(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *transport.Message
	}{
		{"snapshot", &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPull, Cmd: proto.DataSave, ID: 6,
				Sender: proto.WorkerID(1), Receiver: proto.ServerID(0)},
			Body: proto.AppendMetaEpoch(nil, 2, 0),
			KV:   kv.Batch{Keys: []uint64{0, 1 << 16}},
		}},
		{"routing table", &transport.Message{
			Header: transport.Header{Type: transport.TypeData, Flags: transport.FlagRequest | transport.FlagPush, Cmd: proto.DataTable, ID: 6,
				Sender: proto.WorkerID(1), Receiver: proto.ServerID(0)},
			Body: proto.AppendMetaEpoch(nil, 2, 0),
			KV:   kv.Batch{Keys: []uint64{1, 8, 0, 3}}, // version 1: server 0 keeps [0, 3)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := takenOver(t)
			conn := &recordConn{}
			in := make(chan *transport.Message, 4)
			in <- resent(epochRequest(1, 5, 1, 0, []float32{10, 20}))
			in <- resent(tc.req)
			in <- resent(epochRequest(0, 7, 1, 0, []float32{1, 2}))
			close(in)
			if err := s.Run(context.Background(), in, conn); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, r := range conn.replies {
				if r.Cmd == proto.DataError {
					t.Fatalf("request %d of %s answered with an error: %s", r.ID, proto.Name(r.Receiver), r.Body)
				}
				got = append(got, uint64(r.Receiver)<<8|r.ID)
			}
			w0, w1 := uint64(proto.WorkerID(0))<<8, uint64(proto.WorkerID(1))<<8
			// Round 1's acknowledgements, in worker order, then the
			// request that waited for the round.
			if want := []uint64{w0 | 7, w1 | 5, w1 | 6}; !slices.Equal(got, want) {
				t.Fatalf("replies to %x, want %x", got, want)
			}
			if tc.req.Cmd == proto.DataSave {
				snap := conn.replies[2].KV
				if want := []float32{0, 14, 26, 0}; !slices.Equal(snap.Keys, []uint64{0, 1, 2, 3}) || !slices.Equal(snap.Vals, want) {
					t.Fatalf("snapshot of keys %v with %v, want keys [0 1 2 3] with %v (rounds 0 and 1)", snap.Keys, snap.Vals, want)
				}
			}
		})
	}
}
