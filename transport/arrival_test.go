package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"colo/kv"
)

// choppyReader returns at most a random number of bytes per Read, so
// that reads split values at every possible byte.
type choppyReader struct {
	r   io.Reader
	rng *rand.Rand
	max int
}

func (c *choppyReader) Read(p []byte) (int, error) {
	if n := 1 + c.rng.IntN(c.max); len(p) > n {
		p = p[:n]
	}
	return c.r.Read(p)
}

// earlyFrames returns frames with values of the given lengths, three
// frames per length, and their values.
func earlyFrames(t *testing.T, rng *rand.Rand, lens []int) ([]byte, [][]float32) {
	t.Helper()
	var wire []byte
	var sent [][]float32
	for _, n := range lens {
		for range 3 {
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
	return wire, sent
}

// TestEarlyValues decodes frames on one goroutine, as a link's reader
// does, and follows their values on another: every early frame's values
// arrive in order and bit for bit, Await never reports fewer values than
// before and never more than are there, whatever the reads' sizes
// (splitting values at every byte) and for lengths that are not a
// multiple of a read; frames not chosen arrive whole; and the stream
// stays in step throughout, also past messages released before their
// values arrived.
func TestEarlyValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const q = EarlyRead / 4
	lens := []int{1, 3, q - 1, q, q + 1, 3*q + 7}
	wire, sent := earlyFrames(t, rng, lens)
	for _, chop := range []int{0, 5, 3 * EarlyRead} {
		var r io.Reader = bytes.NewReader(wire)
		if chop > 0 {
			r = &choppyReader{r: r, rng: rng, max: chop}
		}
		dec := NewDecoder(r, 0)
		var pool Pool
		dec.SetPool(&pool)
		dec.SetEarly(func(h *Header, n int) bool { return n > 1 && h.ID%3 != 2 })
		msgs := make(chan *Message)
		done := make(chan error, 1)
		go func() {
			defer close(msgs)
			for range sent {
				m := new(Message)
				if _, err := dec.Decode(m); err != nil {
					done <- err
					return
				}
				msgs <- m
			}
			_, err := dec.Decode(new(Message))
			done <- err
		}()
		i := 0
		for m := range msgs {
			want := sent[i]
			early := len(want) > 1 && i%3 != 2
			if m.Early() != early || len(m.KV.Vals) != len(want) || len(m.KV.Keys) != 2 || m.ID != uint64(i) {
				t.Fatalf("chop %d frame %d: early %v with %d values, keys %v, id %d", chop, i, m.Early(), len(m.KV.Vals), m.KV.Keys, m.ID)
			}
			if early && i%3 == 1 {
				// Released unread: the Decoder still reads the values.
				m.Release()
				i++
				continue
			}
			// Every other early frame is followed in parts of at least
			// step values (AwaitAtLeast), as a server applies a dense
			// push.
			step := 0
			if early && i%6 == 0 {
				step = 1 + i*7919%(2*q) // rng is the reader's
			}
			have := 0
			for have < len(want) {
				var n int
				var err error
				if step == 0 {
					n, err = m.Await(context.Background(), have)
				} else {
					n, err = m.AwaitAtLeast(context.Background(), have+step)
					if err == nil && n < min(have+step, len(want)) {
						t.Fatalf("chop %d frame %d: AwaitAtLeast(%d) = %d of %d", chop, i, have+step, n, len(want))
					}
				}
				if err != nil || n <= have || n > len(want) {
					t.Fatalf("chop %d frame %d: Await(%d) = %d, %v of %d", chop, i, have, n, err, len(want))
				}
				if a, err := m.Arrived(); err != nil || a < n {
					t.Fatalf("chop %d frame %d: Arrived %d, %v after Await %d", chop, i, a, err, n)
				}
				for j := have; j < n; j++ {
					if math.Float32bits(m.KV.Vals[j]) != math.Float32bits(want[j]) {
						t.Fatalf("chop %d frame %d: value %d is %#x, want %#x", chop, i, j, math.Float32bits(m.KV.Vals[j]), math.Float32bits(want[j]))
					}
				}
				have = n
			}
			if err := m.Complete(context.Background()); err != nil {
				t.Fatal(err)
			}
			m.Release()
			i++
		}
		if err := <-done; err != io.EOF || i != len(sent) {
			t.Fatalf("chop %d: after %d of %d frames: %v, want EOF", chop, i, len(sent), err)
		}
	}
}

// TestEarlyReleased checks that a message released before its values
// arrived keeps its array out of the pool, that the Decoder still reads
// the values past it, and that the next frame decodes.
func TestEarlyReleased(t *testing.T) {
	const n = 2 * EarlyRead
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	b, err := AppendFrame(nil, &Message{KV: kv.Batch{Keys: []uint64{0, n}, Vals: v}}, 2, 9, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = AppendFrame(b, &Message{Header: Header{ID: 1}, KV: kv.Batch{Vals: v[:3]}}, 2, 9, FrameOptions{})
	pr, pw := io.Pipe()
	dec := NewDecoder(pr, 0)
	var pool Pool
	dec.SetPool(&pool)
	dec.SetEarly(func(_ *Header, n int) bool { return n > 3 })
	half := len(b) - 4*n/2
	go func() {
		pw.Write(b[:half])
		pw.Write(b[half:])
		pw.Close()
	}()
	m := new(Message)
	if _, err := dec.Decode(m); err != nil || !m.Early() {
		t.Fatalf("Decode: %v, early %v", err, m.Early())
	}
	vals := m.KV.Vals
	m.Release()
	for range 4 {
		if got := pool.f32.get(n); &got[0] == &vals[0] {
			t.Fatal("values released to the pool before they arrived")
		}
	}
	next := new(Message)
	if _, err := dec.Decode(next); err != nil || next.ID != 1 || next.Early() || len(next.KV.Vals) != 3 || next.KV.Vals[2] != 2 {
		t.Fatalf("next frame: %v, %v", next, err)
	}
	for i, x := range vals {
		if x != float32(i) {
			t.Fatalf("value %d of the released message read as %v", i, x)
		}
	}
}

// get takes an array of n elements from the classes, for the tests.
func (c *classes) get(n int) []float32 { return get[float32](c, n, 4) }

// TestEarlyValuesCut checks that values broken off by the end of the
// stream fail Await and Complete, after the values that did arrive, and
// the Decoder's next Decode; and that a message released after the
// failure gives its array back.
func TestEarlyValuesCut(t *testing.T) {
	const n = 3*EarlyRead/4 + 5
	b, err := AppendFrame(nil, &Message{KV: kv.Batch{Keys: []uint64{0, n}, Vals: make([]float32, n)}}, 2, 9, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	dec := NewDecoder(pr, 0)
	dec.SetEarly(func(*Header, int) bool { return true })
	go func() {
		pw.Write(b[:len(b)-4*n/2-3]) // half the values and a split one
		pw.Close()
	}()
	m := new(Message)
	if _, err := dec.Decode(m); err != nil || !m.Early() {
		t.Fatalf("Decode: %v, early %v", err, m.Early())
	}
	done := make(chan error, 1)
	go func() { _, err := dec.Decode(new(Message)); done <- err }()
	want := (4*n - 4*n/2 - 3) / 4
	if got, err := m.AwaitAtLeast(context.Background(), n); !errors.Is(err, io.ErrUnexpectedEOF) || got != want {
		t.Fatalf("AwaitAtLeast(all): %v after %d values, want %d and an unexpected EOF", err, got, want)
	}
	got, err := 0, error(nil)
	for err == nil {
		got, err = m.Await(context.Background(), got)
		if err == nil && got == n {
			t.Fatal("all values arrived from a cut stream")
		}
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || got != want {
		t.Fatalf("Await: %v after %d values, want %d and an unexpected EOF", err, got, want)
	}
	if err := m.Complete(context.Background()); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := m.Arrived(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Arrived: %v", err)
	}
	if err := <-done; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Decode: %v", err)
	}
}

// TestEarlyValuesStopped checks that a Decoder stopped before reading the
// values of an early message fails its Await instead of leaving it
// waiting, and that Await gives up when its context ends.
func TestEarlyValuesStopped(t *testing.T) {
	b, err := AppendFrame(nil, &Message{KV: kv.Batch{Vals: make([]float32, 100)}}, 2, 9, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []bool{true, false} {
		dec := NewDecoder(bytes.NewReader(b[:len(b)-40]), 0)
		dec.SetEarly(func(*Header, int) bool { return true })
		m := new(Message)
		if _, err := dec.Decode(m); err != nil || !m.Early() {
			t.Fatalf("Decode: %v, early %v", err, m.Early())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if stop {
			dec.Stop()
			if n, err := m.Await(ctx, 0); !errors.Is(err, errDropped) || n != 0 {
				t.Fatalf("Await after Stop: %d, %v", n, err)
			}
		} else if n, err := m.Await(ctx, 0); !errors.Is(err, context.DeadlineExceeded) || n != 0 {
			t.Fatalf("Await without reader: %d, %v", n, err)
		}
		cancel()
	}
}

// FuzzEarlyDecode decodes a stream of frames twice, with every frame
// with values delivered early and without, and checks that both see the
// same messages and stop at the same frame with the same error, the
// values of an early message arriving in full exactly when the next
// Decode has read them.
func FuzzEarlyDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	var two []byte
	for range 2 {
		two, _ = AppendFrame(two, randomMessage(r), 1, 2, FrameOptions{})
	}
	if len(two) < 8192 {
		f.Add(two)
	}
	b, _ := AppendFrame(nil, &Message{KV: kv.Batch{Keys: []uint64{1, 2}, Vals: []float32{1, 2, 3}}}, 3, 4, FrameOptions{RawKeys: true})
	f.Add(b)
	f.Add(b[:len(b)-2])
	f.Add(append(b, b[:len(b)-5]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		plain := NewDecoder(bytes.NewReader(data), 1<<20)
		early := NewDecoder(&choppyReader{r: bytes.NewReader(data), rng: rand.New(rand.NewPCG(1, uint64(len(data)))), max: 7}, 1<<20)
		early.SetEarly(func(*Header, int) bool { return true })
		var last, lastWant *Message
		for i := 0; ; i++ {
			want := new(Message)
			_, werr := plain.Decode(want)
			got := new(Message)
			_, gerr := early.Decode(got)
			if last != nil {
				// That Decode read the values of the last message first.
				if n, err := last.Arrived(); err != nil || n != len(last.KV.Vals) || !equalMessages(last, lastWant) {
					t.Fatalf("frame %d: %d of %d values, %v: %v early, %v plain", i-1, n, len(last.KV.Vals), err, last, lastWant)
				}
			}
			if werr != nil && gerr == nil && got.Early() {
				// The frame broke off in its values.
				_, gerr = early.Decode(new(Message))
				n, err := got.Arrived()
				if !errors.Is(werr, io.ErrUnexpectedEOF) || !errors.Is(gerr, io.ErrUnexpectedEOF) || !errors.Is(err, io.ErrUnexpectedEOF) || n >= len(got.KV.Vals) {
					t.Fatalf("frame %d: %v plain; early %v, then %d of %d values, %v", i, werr, gerr, n, len(got.KV.Vals), err)
				}
				return
			}
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("frame %d: %v early, %v plain", i, gerr, werr)
			}
			if werr != nil {
				return
			}
			last, lastWant = nil, nil
			if got.Early() {
				last, lastWant = got, want
			} else if !equalMessages(got, want) {
				t.Fatalf("frame %d: %v early, %v plain", i, got, want)
			}
		}
	})
}
