package transport

import (
	"bytes"
	"net"
	"slices"
	"testing"
)

// TestLentReclaimMidway: the owner reclaims its values while a write of
// the frame is under way (the first, third or last of its writes, each
// taking at most 300,001 bytes as a writev into a full socket does; or
// never) and then overwrites them; the frame written holds the values
// as they were lent, head and tail included.
func TestLentReclaimMidway(t *testing.T) {
	const n, most = 300_000, 300_001 // 1.2 MB in five writes
	for _, at := range []int{0, 2, 4, 9} {
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(i)
		}
		head, tail := []byte("head"), []byte("tail")
		want := slices.Concat(head, floatBytes(vals), tail)
		nwrites := (len(want) + most - 1) / most
		var p Pool
		l := NewLent(vals, &p)
		var out bytes.Buffer
		started, release := make(chan struct{}), make(chan struct{})
		writes := 0
		write := func(b net.Buffers) (int, error) {
			if writes == at {
				close(started)
				<-release
			}
			writes++
			w := 0
			for _, x := range b {
				k, _ := out.Write(x[:min(len(x), most-w)])
				if w += k; w == most {
					break
				}
			}
			return w, nil
		}
		done := make(chan error)
		go func() {
			bufs := net.Buffers{head, floatBytes(vals), tail}
			for len(bufs) > 0 {
				k, err := l.Write(bufs, write)
				if err != nil {
					done <- err
					return
				}
				for k > 0 {
					if len(bufs[0]) > k {
						bufs[0] = bufs[0][k:]
						break
					}
					k -= len(bufs[0])
					bufs = bufs[1:]
				}
			}
			done <- nil
		}()
		reclaimed := make(chan struct{})
		if at < nwrites {
			<-started
			go func() {
				l.Reclaim()
				close(reclaimed)
			}()
			close(release)
			<-reclaimed
			for i := range vals {
				vals[i] = -1
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if writes != nwrites {
			t.Fatalf("reclaim at write %d: %d writes, want %d", at, writes, nwrites)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("reclaim at write %d: the frame differs from the lent values", at)
		}
		if l.Reclaimed() != (at < nwrites) {
			t.Fatalf("reclaim at write %d: Reclaimed %v", at, l.Reclaimed())
		}
		l.Release()
		l.Reclaim() // after Release: nothing
		if l.Reclaimed() {
			t.Fatal("Reclaim after Release made a copy")
		}
	}
}

// TestLentDetach: Detach points the buffers in the values at a copy and
// leaves the others alone.
func TestLentDetach(t *testing.T) {
	vals := []float32{1, 2, 3, 4}
	head := []byte("h")
	bufs := net.Buffers{head, floatBytes(vals)[:8], floatBytes(vals)[8:]}
	l := NewLent(vals, nil)
	l.Detach(bufs)
	vals[0], vals[3] = 9, 9
	got := slices.Concat(bufs...)
	if want := slices.Concat(head, floatBytes([]float32{1, 2, 3, 4})); !bytes.Equal(got, want) {
		t.Fatalf("detached frame %v, want %v", got, want)
	}
	if &bufs[0][0] != &head[0] {
		t.Fatal("the head was moved")
	}
}

// TestLentReclaimAfterLastValue: once the writes have handed every
// value to the kernel, Reclaim gives them back without a copy (none is
// drawn from the pool), the rest of the frame is written as it is, and
// a write meeting a buffer of the values' memory leaves it alone.
func TestLentReclaimAfterLastValue(t *testing.T) {
	vals := []float32{1, 2, 3, 4}
	head, tail := []byte("head"), []byte("tail")
	l := NewLent(vals, new(Pool))
	var out bytes.Buffer
	write := func(most int) func(net.Buffers) (int, error) {
		return func(bufs net.Buffers) (int, error) {
			w := 0
			for _, b := range bufs {
				k := min(len(b), most-w)
				out.Write(b[:k])
				w += k
				if w == most {
					break
				}
			}
			return w, nil
		}
	}
	// The head and every value, not the tail.
	n, err := l.Write(net.Buffers{head, floatBytes(vals), tail}, write(len(head)+16))
	if err != nil || n != len(head)+16 {
		t.Fatalf("first write took %d bytes (%v), want %d", n, err, len(head)+16)
	}
	l.Reclaim()
	if !l.Reclaimed() {
		t.Fatal("the values were not given back")
	}
	if l.owned != nil || l.own != nil {
		t.Fatal("Reclaim copied values the kernel had taken already")
	}
	vals[0] = -1 // the owner's again
	if _, err := l.Write(net.Buffers{tail}, write(len(tail))); err != nil {
		t.Fatal(err)
	}
	if want := slices.Concat(head, floatBytes([]float32{1, 2, 3, 4}), tail); !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("frame %v, want %v", out.Bytes(), want)
	}
	l.Release()
	if l.Reclaimed() {
		t.Fatal("Reclaimed after Release")
	}
}
