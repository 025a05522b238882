// Package transport moves the parameter server's messages between nodes:
// the Endpoint interface that the scheduler, servers and workers talk
// through, the Message they exchange, its binary frame, per-link
// counters and the emulation of link bandwidth.
//
// Two implementations live in subpackages: tcp, for processes on one or
// many machines, and mem, an in-memory network with a seeded model of
// each link's bandwidth, latency, loss and partitions, for tests.
// transporttest is the conformance and benchmark suite both pass.
//
// # Messages
//
// A Message is what ps-lite calls metadata plus data: a small fixed
// Header (type, flags for request/push/pull, a command, sender and
// receiver, app and customer ids, a request id), an opaque Body for
// control messages, and a key–value batch (colo/kv): sorted uint64 keys,
// float32 values and optional int32 lengths. Workers push and pull with
// them (seed 001 §2.3, "push local results … pull recent parameters");
// the scheduler coordinates with control messages (§4.3). The transport
// interprets none of the header fields; the layer above does.
//
// # Frames
//
// On the wire a message is one length-prefixed frame: a 4-byte length, a
// 56-byte header starting with the magic byte 0xC6 and a version, then
// the body and the key, value and length arrays as raw little-endian
// bytes (the table at PrefixSize and HeaderSize gives every field). Keys are gap-encoded as varints
// (kv.AppendKeys) when they are increasing and that is smaller, which
// for sparse requests takes one or two bytes a key instead of eight;
// FrameOptions.RawKeys turns this off where CPU is scarcer than
// bandwidth. Encoder returns a frame as a few buffers that reference the
// message's arrays, for a vectored write without copying; Decoder reads
// arrays straight into their final memory, taken from a Pool when the
// receiver recycles messages with Message.Release, or, for the values of
// an expected answer, the destination the receiver registered in Berths.
// A Decoder can also deliver chosen frames before their values are read
// (Decoder.SetEarly) and read the values into the message afterwards,
// publishing their progress, so that the receiver works on the first
// values while the rest arrive (Message.Await).
//
// # Key caching
//
// A worker pushes and pulls the same key lists to a server every round
// (full-batch training, embeddings, a PyTorch client's fixed parameter
// sets), so the receiver of a stream keeps the lists it was sent and the
// sender names them instead of sending them again (Li et al., OSDI 2014,
// §3.5): FrameOptions.KeyCache, on in tcp.DefaultConfig. The sender owns
// KeySlots slots per stream and decides everything: a frame either
// stores its keys in a slot (emptying the slots it evicts) or names a
// slot and carries no key bytes; the receiver does what the frame says,
// so both sides agree without a policy of their own. A repeat is found
// by a fingerprint of the length and eight sampled keys and confirmed by
// comparing the whole list (never a hash alone); a list is stored the
// second time it is seen, and lists shorter than MinCachedKeys never, so
// traffic whose lists never repeat pays O(1) a frame. Both sides keep at
// most KeyCache bytes of keys per stream; the receiver refuses, as a
// malformed frame naming the slot, a store over its limit, a reference
// to an empty slot or a count of keys that is not the slot's. Slots are
// immutable: a decoded message shares its slot's keys read-only, and a
// store puts a new array in the slot; the receiver checks a stored
// list's order once (Message.KeysAscending), so that a server need not
// check it again at every frame that names it. A slot lives as long as its
// connection: tcp starts every new connection (a redial, a peer that
// moved or was replaced) with empty tables on both sides, and a frame
// that was not written whole stores nothing (Encoder.Sent). For a 1×1
// sparse push of 100,000 raw keys the frame shrinks from 1.2 MB to 0.4
// MB (see docs/ps.md for the CPU it saves). Stats count a frame that
// names a slot at FrameSize, the size it would have without the cache,
// so that the counters measure the messages, alike in transport/mem
// (which has no frames and nothing to cache) and tcp, in process or
// not; the emulated wires (Wire) carry the bytes actually written.
//
// Every frame is checked: the magic, version and reserved bytes, the key
// encoding, and that the segment sizes add up to the length prefix.
// FrameOptions.MaxFrame bounds the size of a frame on both sides; the
// receiver rejects a longer one from its length prefix, before allocating
// anything for it. Encoding costs O(keys) for gap coding and O(1)
// otherwise; decoding costs O(keys) plus the read.
//
// # Endpoints
//
// An Endpoint sends to any node by id and receives from all of them on
// one channel, so a node's driver can select on its messages, its peer
// failures and its timers in one place. Delivery is ordered per link
// (sender to receiver) and unordered across links. Send blocks while the
// link or the receiver is busy, within its context; it does not hang on a
// dead peer: a failure of the link ends it with a *PeerError naming the
// peer, and every link failure is also reported on Down (tcp's timeouts
// bound how long a machine that vanished without closing its sockets goes
// unnoticed). Close is idempotent and unblocks everything. Stats counts messages and frame
// bytes (FrameSize, key caching or not) per peer; with a map from peers to machines, Stats.Sum splits
// them into inner-machine and inter-machine traffic (seed 000 §3.2).
//
// # Emulated networks
//
// Both implementations emulate the same network: each host (machine) has
// a network interface, one wire of its rate for every byte it sends to
// other hosts and one for every byte it receives from them, shared by all
// of its endpoints' links; a Bandwidth matrix, read by ParseBandwidth
// from a small text file of k×k rates such as 100mbit or 1gbit, adds a
// wire per directed path between two hosts. Traffic within a host pays
// nothing. Both use the same wires (Wire): the connections with bytes on
// a wire take turns of one Ethernet frame (DefaultQuantum, a deficit
// round robin in closed form), so a small message waits for one frame of
// each other busy connection, not for their messages. mem queues a
// message on its wires when it is sent (mem.Network.SetNIC, SetHostLink).
// tcp queues a frame on the sender's interface and path when it is sent
// and writes each part of it as they carry it, and on the receiver's
// interface when its first bytes arrive, delivering it once that has
// carried it too, without holding the sender back (tcp.Config.Shared;
// ps/node.Rates builds the wires of a process's endpoints, one interface
// per machine). In both a send returns once the sender's side has carried
// the message. A cluster on one host, or on a uniform network, so
// behaves like one of machines with interfaces and paths of the emulated
// rates, without privileges; Linux network namespaces shaped
// by tc (launch/netns) limit each host's sending the same way, by the
// kernel.
//
//	ep, _ := tcp.Listen(cfg)
//	ep.SetPeer(2, addr)
//	err := ep.Send(ctx, 2, &transport.Message{
//		Header: transport.Header{Flags: transport.FlagRequest | transport.FlagPush, ID: 1},
//		KV:     kv.Batch{Keys: keys, Vals: grads},
//	})
//	for m := range ep.Recv() { … }
package transport
