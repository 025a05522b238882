package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"colo/transport"
)

// chopReader returns at most a random number of bytes a read.
type chopReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (c chopReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1+c.rng.IntN(len(p))]
	}
	return c.r.Read(p)
}

// TestIngressReaderStream: whatever the frames' sizes and the reads'
// lengths on either side, an ingressReader returns the stream it reads
// byte for byte, and puts on its wire exactly the frames within the
// limit, prefix included, and none over it.
func TestIngressReaderStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 35))
	const max = 3000
	for trial := range 200 {
		var stream bytes.Buffer
		var onWire int64
		for range rng.IntN(12) {
			n := rng.IntN(max + 200)
			if n < transport.PrefixSize {
				n = transport.PrefixSize
			}
			var prefix [transport.PrefixSize]byte
			binary.LittleEndian.PutUint32(prefix[:], uint32(n-transport.PrefixSize))
			stream.Write(prefix[:])
			body := make([]byte, n-transport.PrefixSize)
			for i := range body {
				body[i] = byte(rng.IntN(256))
			}
			stream.Write(body)
			if n <= max {
				onWire += int64(n)
			}
			if n > max {
				break // the decoder refuses the frame: the stream ends there
			}
		}
		want := bytes.Clone(stream.Bytes())
		wire := transport.NewWire(1e12, transport.DefaultQuantum)
		r := &ingressReader{r: chopReader{&stream, rng}, wires: []*transport.Wire{wire}, flow: transport.Flow{From: 1, To: 2}, max: max, ctx: context.Background()}
		var got bytes.Buffer
		buf := make([]byte, 1+rng.IntN(5000))
		for {
			n, err := r.Read(buf[:1+rng.IntN(len(buf))])
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("trial %d: read %d bytes, want the stream's %d, the same", trial, got.Len(), len(want))
		}
		if c := wire.Carried(); c != onWire {
			t.Fatalf("trial %d: the wire carries %d bytes, want the frames' within the limit, %d", trial, c, onWire)
		}
	}
}

// FuzzIngressReader: on any stream, an ingressReader returns the stream
// byte for byte, and its wire carries no more than the stream's frames
// announce within the limit.
func FuzzIngressReader(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0})
	f.Add([]byte{255, 255, 255, 255, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		wire := transport.NewWire(1e12, transport.DefaultQuantum)
		r := &ingressReader{r: bytes.NewReader(data), wires: []*transport.Wire{wire}, flow: transport.Flow{From: 1, To: 2}, max: 1 << 16, ctx: context.Background()}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, want the stream's %d, the same", len(got), len(data))
		}
		var announced int64
		for rest := data; len(rest) >= transport.PrefixSize; {
			n := transport.PrefixSize + int(binary.LittleEndian.Uint32(rest))
			if n <= 1<<16 {
				announced += int64(n)
			}
			if n > len(rest) {
				break
			}
			rest = rest[n:]
		}
		if c := wire.Carried(); c != announced {
			t.Fatalf("the wire carries %d bytes, the stream's frames within the limit announce %d", c, announced)
		}
	})
}
