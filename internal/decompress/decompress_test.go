package decompress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"colo/internal/decompress/ztest"
	"colo/internal/membudget"
	"colo/internal/memcap"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// decompressAll reads all of r through NewReader and closes the decoder.
func decompressAll(r io.Reader) ([]byte, error) {
	dr, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	if c, ok := dr.(io.Closer); ok {
		defer c.Close()
	}
	return io.ReadAll(dr)
}

// testText returns a libsvm text of n lines.
func testText(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%d %d:1 %d:0.5 %d:2\n", i%2, i%7+1, i%11+8, i%13+20)
	}
	return b.Bytes()
}

func TestDecompressRoundTrip(t *testing.T) {
	text := testText(500)
	for kind, compress := range ztest.Compressors() {
		t.Run(kind, func(t *testing.T) {
			z, err := compress(text)
			if err != nil {
				t.Fatal(err)
			}
			// Two concatenated streams read as one, as the command-line
			// tools do.
			got, err := decompressAll(bytes.NewReader(append(bytes.Clone(z), z...)))
			if err != nil {
				t.Fatal(err)
			}
			if want := append(bytes.Clone(text), text...); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func TestDecompressBzip2(t *testing.T) {
	z, err := os.ReadFile("testdata/small.svm.bz2")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/small.svm")
	if err != nil {
		t.Fatal(err)
	}
	got, err := decompressAll(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDecompressPlain(t *testing.T) {
	for _, in := range []string{"", "1", "\x1f", "BZ", "BZh", "BZhx 1:1\n", "1 3:1\n2 4:1\n", "\xfd7zX"} {
		got, err := decompressAll(strings.NewReader(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if string(got) != in {
			t.Errorf("%q: got %q", in, got)
		}
	}
}

// TestDecompressTruncated cuts compressed streams at every length from 10
// bytes on and checks that none reads as a shorter file.
func TestDecompressTruncated(t *testing.T) {
	text := testText(300)
	streams := map[string][]byte{}
	for kind, compress := range ztest.Compressors() {
		z, err := compress(text)
		if err != nil {
			t.Fatal(err)
		}
		streams[kind] = z
	}
	bz, err := os.ReadFile("testdata/small.svm.bz2")
	if err != nil {
		t.Fatal(err)
	}
	streams["bzip2"] = bz
	for kind, z := range streams {
		t.Run(kind, func(t *testing.T) {
			for n := 10; n < len(z); n++ {
				got, err := decompressAll(bytes.NewReader(z[:n]))
				if err == nil {
					t.Errorf("cut at %d of %d bytes: read %d bytes without error", n, len(z), len(got))
					continue
				}
				if !strings.Contains(err.Error(), kind) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("cut at %d: error %q names neither %s nor an unexpected EOF", n, err, kind)
				}
			}
		})
	}
}

func TestDecompressBadHeader(t *testing.T) {
	for _, in := range []string{"\x1f\x8b\x00\x00", "\xfd7zXZ\x00\x00\x00\x00\x00\x00\x00", "\x28\xb5\x2f\xfd\xff\xff\xff"} {
		if got, err := decompressAll(strings.NewReader(in)); err == nil {
			t.Errorf("%q: read %q without error", in, got)
		}
	}
}

func FuzzDecompress(f *testing.F) {
	for _, s := range []string{"", "1 1:1\n", "\x1f\x8b", "BZh9", "\xfd7zXZ\x00", "\x28\xb5\x2f\xfd"} {
		f.Add([]byte(s))
	}
	text := testText(30)
	for _, compress := range ztest.Compressors() {
		z, err := compress(text)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(z)
		f.Add(z[:len(z)/2])
	}
	// A declared window beyond the budget would be allocated by the
	// decoder: under the cap, an out-of-memory crash.
	memcap.Cap(f, 1<<30)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any input: no panic, and no more output than the limit asks.
		if dr, err := NewReaderBudget(bytes.NewReader(data), 64<<20); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(dr, 1<<24))
			if c, ok := dr.(io.Closer); ok {
				c.Close()
			}
		}
		// Compressed data reads back as it was.
		for kind, compress := range ztest.Compressors() {
			z, err := compress(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decompressAll(bytes.NewReader(z))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s round trip: %d bytes, err %v", kind, len(got), err)
			}
		}
	})
}

// TestWindowBeyondTheBudget: a zstd frame or an xz block that declares a
// window beyond half the budget is refused before the decoder
// allocates it; under a budget it fits, it reads back.
func TestWindowBeyondTheBudget(t *testing.T) {
	text := testText(20000)
	var xzBuf bytes.Buffer
	w, err := xz.WriterConfig{DictCap: 16 << 20}.NewWriter(&xzBuf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(text)
	w.Close()
	// Streamed, the content's size unknown: the frame declares the window.
	var zstBuf bytes.Buffer
	zw, _ := zstd.NewWriter(&zstBuf, zstd.WithWindowSize(16<<20), zstd.WithEncoderConcurrency(1))
	zw.Write(text)
	zw.Close()
	zst := zstBuf.Bytes()
	// An xz stream header and a block header whose LZMA2 filter declares
	// a dictionary of 4 GiB - 1, and nothing after.
	huge := append([]byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46"), 0x02, 0x00, 0x21, 0x01, 40, 0, 0, 0, 0, 0, 0, 0)
	for _, c := range []struct {
		kind   string
		data   []byte
		window int64
	}{{"xz", xzBuf.Bytes(), 16 << 20}, {"zstd", zst, 16 << 20}, {"xz of 4 GiB", huge, 1<<32 - 1}} {
		var r io.Reader
		a := allocated(func() { r, err = NewReaderBudget(bytes.NewReader(c.data), 16<<20) })
		me, ok := errors.AsType[*membudget.Error](err)
		if !ok || me.Need != 2*c.window || me.Limit != 16<<20 {
			t.Errorf("%s under a budget of 16 MiB: %v", c.kind, err)
		}
		if a > 4<<20 {
			t.Errorf("%s: refusing allocated %d bytes", c.kind, a)
		}
		if c.kind == "xz of 4 GiB" {
			continue
		}
		if r, err = NewReaderBudget(bytes.NewReader(c.data), 32<<20); err != nil {
			t.Fatalf("%s under a budget of 32 MiB: %v", c.kind, err)
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, text) {
			t.Errorf("%s: read back %d bytes, %v", c.kind, len(got), err)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
