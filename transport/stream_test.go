package transport

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"colo/kv"
)

// choppyReader returns at most a random number of bytes per Read, so
// that reads split values at every possible byte.
type choppyReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (c *choppyReader) Read(p []byte) (int, error) {
	if n := 1 + c.rng.IntN(3*StreamChunk); len(p) > n {
		p = p[:n]
	}
	return c.r.Read(p)
}

// TestStreamedValues checks that streamed frames hand every value to
// Consume exactly once, in order and bit for bit, whatever the reads'
// sizes and for lengths that are not a multiple of the chunk; that
// Complete fills KV.Vals; that Release skips the values; and that frames
// not chosen are read as usual, the stream staying in step throughout.
func TestStreamedValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lens := []int{1, 3, StreamChunk - 1, StreamChunk, StreamChunk + 1, 3*StreamChunk + 7}
	var wire []byte
	var sent [][]float32
	for _, n := range lens {
		for range 3 { // consumed, completed, released
			v := make([]float32, n)
			for i := range v {
				v[i] = math.Float32frombits(rng.Uint32())
			}
			b, err := AppendFrame(wire, &Message{Header: Header{ID: uint64(len(sent))}, KV: kv.Batch{Keys: []uint64{1, 2}, Vals: v}}, 2, 9, FrameOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wire, sent = b, append(sent, v)
		}
	}
	for _, chop := range []bool{false, true} {
		var r io.Reader = bytes.NewReader(wire)
		if chop {
			r = &choppyReader{r: r, rng: rng}
		}
		dec := NewDecoder(r, 0)
		var pool Pool
		dec.SetPool(&pool)
		dec.SetStreaming(func(h *Header, n int) bool { return n > 1 }, make(chan struct{}))
		for i, want := range sent {
			m := new(Message)
			if _, err := dec.Decode(m); err != nil {
				t.Fatalf("chop %v frame %d: %v", chop, i, err)
			}
			if m.Streaming() != (len(want) > 1) || len(m.KV.Vals) != len(want) || len(m.KV.Keys) != 2 {
				t.Fatalf("chop %v frame %d: streaming %v with %d values, keys %v", chop, i, m.Streaming(), len(m.KV.Vals), m.KV.Keys)
			}
			var got []float32
			switch i % 3 {
			case 0:
				got = consumeAsync(t, dec, m)
			case 1:
				got = completeAsync(t, dec, m)
			case 2:
				m.Release()
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("chop %v frame %d: %d values, want %d", chop, i, len(got), len(want))
			}
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("chop %v frame %d: value %d is %#x, want %#x", chop, i, j, math.Float32bits(got[j]), math.Float32bits(want[j]))
				}
			}
			m.Release()
		}
		if _, err := dec.Decode(new(Message)); err != io.EOF {
			t.Fatalf("chop %v: after the last frame: %v, want EOF", chop, err)
		}
	}
}

// serve lets the Decoder serve the pending request of a streamed message,
// as the next Decode of a link's reader does.
func serve(t *testing.T, dec *Decoder) {
	t.Helper()
	if dec.pending == nil {
		return
	}
	if err := dec.finish(); err != nil {
		t.Errorf("serving streamed values: %v", err)
	}
}

// consumeAsync consumes m's values while another goroutine serves them,
// checking that chunks are contiguous and at most StreamChunk long.
func consumeAsync(t *testing.T, dec *Decoder, m *Message) []float32 {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); serve(t, dec) }()
	var got []float32
	err := m.Consume(func(off int, v []float32) {
		if off != len(got) || len(v) == 0 || len(v) > StreamChunk {
			t.Errorf("chunk of %d values at %d after %d values", len(v), off, len(got))
		}
		got = append(got, v...)
	})
	<-done
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if m.Streaming() {
		t.Fatal("still streaming after Consume")
	}
	return got
}

// completeAsync completes m while another goroutine serves the values.
func completeAsync(t *testing.T, dec *Decoder, m *Message) []float32 {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); serve(t, dec) }()
	err := m.Complete()
	<-done
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return append([]float32(nil), m.KV.Vals...)
}

// TestStreamStopped checks that a Decoder told to stop before the
// receiver chose fails its next Decode, and that the receiver's Consume
// then fails instead of waiting, having consumed nothing.
func TestStreamStopped(t *testing.T) {
	b, err := AppendFrame(nil, &Message{KV: kv.Batch{Vals: make([]float32, 100)}}, 2, 9, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	dec := NewDecoder(bytes.NewReader(b), 0)
	dec.SetStreaming(func(*Header, int) bool { return true }, stop)
	m := new(Message)
	if _, err := dec.Decode(m); err != nil || !m.Streaming() {
		t.Fatalf("Decode: %v, streaming %v", err, m.Streaming())
	}
	close(stop)
	if _, err := dec.Decode(new(Message)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Decode after stop: %v, want ErrClosed", err)
	}
	calls := 0
	if err := m.Consume(func(int, []float32) { calls++ }); err == nil || calls != 0 {
		t.Fatalf("Consume after stop: %v after %d chunks", err, calls)
	}
}

// TestStreamTruncated checks that a stream that ends inside streamed
// values fails both the consumer and the Decoder.
func TestStreamTruncated(t *testing.T) {
	b, err := AppendFrame(nil, &Message{KV: kv.Batch{Vals: make([]float32, 2*StreamChunk)}}, 2, 9, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(bytes.NewReader(b[:len(b)-5]), 0)
	dec.SetStreaming(func(*Header, int) bool { return true }, make(chan struct{}))
	m := new(Message)
	if _, err := dec.Decode(m); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := dec.Decode(new(Message)); done <- err }()
	n := 0
	cerr := m.Consume(func(_ int, v []float32) { n += len(v) })
	if !errors.Is(cerr, io.ErrUnexpectedEOF) || n >= 2*StreamChunk {
		t.Fatalf("Consume: %v after %d values", cerr, n)
	}
	if err := <-done; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Decode: %v", err)
	}
}
