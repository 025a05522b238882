package transport

import (
	"errors"
	"fmt"
)

// Streamed values. A Decoder set up with SetStreaming delivers the frames
// it chooses as soon as their header, body and keys are read, with the
// values still on the wire: the receiver then either consumes them chunk
// by chunk as they arrive (Message.Consume), which lets it fold each
// chunk into its own memory while the chunk is in cache, or has them read
// into KV.Vals (Message.Complete). The Decoder reads nothing more from
// its stream until the receiver has chosen, so every streamed message
// must be consumed, completed or released.

// StreamChunk is the largest number of values that Message.Consume hands
// its function at once: 64 KiB, small enough to stay in a core's cache
// between the read and the function.
const StreamChunk = 16 << 10

// errNotRead is the error of a streamed message whose values were never
// read: the Decoder stopped first.
var errNotRead = errors.New("values not read: the stream stopped")

// stream is the hand-off of one message's values between the consumer,
// which asks for them once, and the Decoder, which reads them.
type stream struct {
	n    int            // number of values
	req  chan streamReq // capacity 1: the consumer's one request
	done chan struct{}  // closed once the request is served or refused
	err  error          // set before done is closed
}

// streamReq is what the consumer wants done with the values: each chunk
// handed to f, or all of them read into into, or (both nil) skipped.
type streamReq struct {
	f    func(off int, vals []float32)
	into []float32
}

// Streaming reports whether m's values are still on the wire: KV.Vals
// then has their length but not their content, until Complete. Only a
// Decoder set up with SetStreaming delivers such messages.
func (m *Message) Streaming() bool { return m.stream != nil }

// Consume hands the values of m to f in order, in chunks of at most
// StreamChunk values: f(off, vals) gets the values from index off. For a
// streamed message, f runs on the reading goroutine as each chunk
// arrives, while Consume waits, and vals is only valid during the call;
// KV.Vals is left as it was (its content undefined). For any other
// message f is called once with KV.Vals. An error means the stream broke
// after some chunks, perhaps none, were handed to f; the rest of the
// values are lost. A message's values are consumed at most once: after
// Consume or Complete, m is no longer streaming.
func (m *Message) Consume(f func(off int, vals []float32)) error {
	s := m.stream
	if s == nil {
		if len(m.KV.Vals) > 0 {
			f(0, m.KV.Vals)
		}
		return nil
	}
	m.stream = nil
	s.req <- streamReq{f: f}
	<-s.done
	return s.err
}

// Complete reads the values of a streamed message into KV.Vals and
// returns once they are there; it does nothing for other messages. After
// an error KV.Vals is undefined and the stream is broken.
func (m *Message) Complete() error {
	s := m.stream
	if s == nil {
		return nil
	}
	m.stream = nil
	s.req <- streamReq{into: m.KV.Vals}
	<-s.done
	return s.err
}

// discard lets the Decoder skip the values of a streamed message that
// the receiver drops, without waiting for it.
func (m *Message) discard() {
	if s := m.stream; s != nil {
		m.stream = nil
		s.req <- streamReq{}
	}
}

// SetStreaming makes the Decoder deliver the frames for which choose
// returns true (given the header and the number of values; frames with
// lengths or whose values land in a berth are never streamed) before
// their values are read (see Message.Streaming). The next Decode first
// waits for the receiver's choice about the values and reads them; it
// fails when stop is closed first.
func (d *Decoder) SetStreaming(choose func(h *Header, nvals int) bool, stop <-chan struct{}) {
	d.choose, d.stop = choose, stop
}

// finish serves the request for the values of the streamed message that
// Decode delivered last.
func (d *Decoder) finish() error {
	s := d.pending
	d.pending = nil
	var r streamReq
	select {
	case r = <-s.req:
	case <-d.stop:
		s.err = errNotRead
		close(s.done)
		return fmt.Errorf("streamed values: %w", ErrClosed)
	}
	var err error
	if r.into != nil {
		err = readArray(d, r.into)
	} else {
		err = d.readChunks(s.n, r.f)
	}
	if err != nil {
		s.err = fmt.Errorf("streamed values: %w", err)
	}
	close(s.done)
	return s.err
}

// readChunks reads n values and hands them to f (when not nil) as they
// arrive, each read's whole values at once; the bytes of a value split
// between two reads wait for the second.
func (d *Decoder) readChunks(n int, f func(off int, vals []float32)) error {
	if d.chunk == nil {
		// One value more than a chunk for the bytes of a split value, so
		// that every read but the last asks for a whole chunk.
		d.chunk = make([]float32, StreamChunk+1)
	}
	b := asBytes(d.chunk)
	left := 4 * n // bytes still on the wire
	have := 0     // bytes of a split value at the start of b
	off := 0      // values handed to f
	for left > 0 {
		k, err := d.r.Read(b[have : have+min(4*StreamChunk, left)])
		left -= k
		have += k
		if whole := have / 4; whole > 0 {
			if !littleEndianHost() {
				swapBytes(b[:4*whole], 4)
			}
			if f != nil {
				f(off, d.chunk[:whole])
			}
			off += whole
			have = copy(b, b[4*whole:have])
		}
		if err != nil && left > 0 {
			return unexpected(err)
		}
	}
	return nil
}
