package transport

import (
	"bytes"
	"io"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/kv"
)

// TestBerthLanding checks that a registered destination receives the
// values of the one frame it was registered for, that Release leaves it
// alone, and that frames that do not fit it are read as usual.
func TestBerthLanding(t *testing.T) {
	vals := make([]float32, 512) // pooled size
	for i := range vals {
		vals[i] = float32(i)
	}
	frame := func(from NodeID, id uint64, v []float32) []byte {
		b, err := AppendFrame(nil, &Message{Header: Header{ID: id}, KV: kv.Batch{Vals: v}}, from, 9, FrameOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var stream []byte
	stream = append(stream, frame(2, 7, vals)...)       // lands
	stream = append(stream, frame(2, 8, vals[:511])...) // wrong length
	stream = append(stream, frame(3, 9, vals)...)       // wrong sender
	stream = append(stream, frame(2, 7, vals)...)       // berth used once

	var b Berths
	var pool Pool
	dst := make([]float32, 512)
	b.Expect(2, 7, dst)
	b.Expect(2, 8, make([]float32, 512))
	b.Expect(3, 9, make([]float32, 512))
	dec := NewDecoder(bytes.NewReader(stream), 0)
	dec.SetPool(&pool)
	dec.SetBerths(&b, 2, nil)
	for i := range 4 {
		m := new(Message)
		if _, err := dec.Decode(m); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got := len(m.KV.Vals) > 0 && &m.KV.Vals[0] == &dst[0]; got != (i == 0) {
			t.Fatalf("frame %d landed in the berth: %v", i, got)
		}
		for j, v := range m.KV.Vals {
			if v != vals[j] {
				t.Fatalf("frame %d value %d: %v", i, j, v)
			}
		}
		m.Release()
	}
	if b.Len() != 2 {
		t.Fatalf("%d berths left, want the 2 that did not fit", b.Len())
	}
	// Release did not hand dst to the pool: a pooled array of that class
	// is never dst.
	for range 8 {
		if p := get[float32](&pool.f32, 512, 4); &p[0] == &dst[0] {
			t.Fatal("the berth was pooled")
		}
	}
	b.CancelAll()
	if b.Len() != 0 {
		t.Fatalf("%d berths after CancelAll", b.Len())
	}
}

// TestBerthCancelInterruptsRead checks that Cancel of a berth whose frame
// is half read interrupts the read and returns once the berth is no
// longer written.
func TestBerthCancelInterruptsRead(t *testing.T) {
	vals := make([]float32, 1<<16)
	f, err := AppendFrame(nil, &Message{Header: Header{ID: 1}, KV: kv.Batch{Vals: vals}}, 2, 9, FrameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var b Berths
	b.Expect(2, 1, make([]float32, len(vals)))
	dec := NewDecoder(pr, 0)
	dec.SetBerths(&b, 2, func() { pr.CloseWithError(io.ErrClosedPipe) })
	done := make(chan error, 1)
	go func() { _, err := dec.Decode(new(Message)); done <- err }()
	go pw.Write(f[:len(f)/2]) // the rest never comes
	for deadline := time.Now().Add(colotest.HangTimeout(t)); ; {
		b.mu.Lock()
		e := b.m[berthKey{2, 1}]
		reading := e != nil && e.reading
		b.mu.Unlock()
		if reading {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the decoder never claimed the berth")
		}
		time.Sleep(time.Millisecond)
	}
	b.Cancel(2, 1)
	if b.Len() != 0 {
		t.Fatal("berth still registered after Cancel")
	}
	if err := <-done; err == nil {
		t.Fatal("the interrupted frame decoded")
	}
}
