package mem_test

import (
	"context"
	"fmt"

	"colo/kv"
	"colo/transport"
	"colo/transport/mem"
)

// A worker pushes a gradient to a server, which answers; both count the
// traffic of their link.
func Example() {
	net, _ := mem.New(mem.DefaultConfig())
	defer net.Close()
	worker, _ := net.Attach(1)
	server, _ := net.Attach(2)
	ctx := context.Background()

	go func() {
		for m := range server.Recv() {
			fmt.Printf("server: push %d from node %d, keys %v\n", m.ID, m.Sender, m.KV.Keys)
			server.Send(ctx, m.Sender, &transport.Message{Header: transport.Header{ID: m.ID}})
		}
	}()

	push := &transport.Message{
		Header: transport.Header{Flags: transport.FlagRequest | transport.FlagPush, ID: 1},
		KV:     kv.Batch{Keys: []uint64{3, 7, 12}, Vals: []float32{0.5, -1, 2}},
	}
	if err := worker.Send(ctx, 2, push); err != nil {
		fmt.Println(err)
		return
	}
	ack := <-worker.Recv()
	fmt.Printf("worker: response to %d\n", ack.ID)
	fmt.Printf("worker → server: %+v\n", worker.Stats().Links[2])
	// Output:
	// server: push 1 from node 1, keys [3 7 12]
	// worker: response to 1
	// worker → server: {MsgsSent:1 BytesSent:75 MsgsRecv:1 BytesRecv:60 Dropped:0}
}
