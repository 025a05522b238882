package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"colo/internal/membudget"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// gzipZeros returns an idx header of type uint8 and dims, followed by n
// zero bytes, gzip'd.
func gzipZeros(t *testing.T, dims []int, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(idxBytes(IDXUint8, dims, nil))
	zw.Write(make([]byte, n))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIDXClaimsMoreThanTheFileHolds: a header that declares more data
// than the file holds, or more memory than the budget, is refused before
// the data is allocated.
func TestIDXClaimsMoreThanTheFileHolds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 1 GiB declared by 20 bytes of file.
	plain := write("plain.idx", idxBytes(IDXUint8, []int{1 << 14, 1 << 8, 1 << 8}, []byte{1, 2, 3, 4}))
	var err error
	if a := allocated(func() { _, err = LoadIDX(plain, membudget.Off) }); a > 4<<20 {
		t.Errorf("refusing a header of 1 GiB in a file of 20 bytes allocated %d bytes", a)
	}
	if err == nil || !strings.Contains(err.Error(), "declare 1073741824 bytes of data, the file has 4") || !strings.HasPrefix(err.Error(), plain) {
		t.Errorf("plain file: %v", err)
	}

	// 64 GiB declared by a gzip'd stream of 1 MiB of zeros: over the
	// budget, refused before reading.
	huge := write("huge.idx.gz", gzipZeros(t, []int{262144, 512, 512}, 1<<20))
	if a := allocated(func() { _, err = LoadIDX(huge, 1<<30) }); a > 4<<20 {
		t.Errorf("refusing 64 GiB over a budget of 1 GiB allocated %d bytes", a)
	}
	me, ok := errors.AsType[*membudget.Error](err)
	if !ok || me.Need != 5*(1<<36) || me.Limit != 1<<30 || me.File != huge || !strings.Contains(err.Error(), "262144×512×512") {
		t.Fatalf("64 GiB over a budget of 1 GiB: %v", err)
	}

	// 256 MiB declared, within the budget, by a stream of 1 MiB: the
	// buffer grows with what arrives, and the end is a truncation.
	short := write("short.idx.gz", gzipZeros(t, []int{1 << 12, 1 << 8, 1 << 8}, 1<<20))
	if a := allocated(func() { _, err = LoadIDX(short, membudget.Off) }); a > 8<<20 {
		t.Errorf("a stream of 1 MiB claiming 256 MiB allocated %d bytes", a)
	}
	if err == nil || !strings.Contains(err.Error(), "declare 268435456 bytes of data, the file has 1048576") {
		t.Errorf("short stream: %v", err)
	}

	// Through Load, with the budget in the options.
	lo := DefaultLoadOptions()
	lo.Labels, lo.Memory = plain, 1<<20
	if _, err := Load(huge, lo); !membudget.Is(err) {
		t.Errorf("Load with a budget of 1 MiB: %v", err)
	}
}

// TestIDXWithinBudgetLoadsAsBefore: the exact-size buffer of an
// uncompressed file and the growing one of a stream read the same.
func TestIDXWithinBudgetLoadsAsBefore(t *testing.T) {
	data := make([]byte, 3*5*7)
	for i := range data {
		data[i] = byte(i * 7)
	}
	raw := idxBytes(IDXUint8, []int{3, 5, 7}, data)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"a.idx": raw, "a.idx.gz": gzipBytes(t, raw)} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		x, err := LoadIDX(p, membudget.Auto)
		if err != nil || !bytes.Equal(x.Data, data) || len(x.Dims) != 3 {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := LoadIDX(p, 3*5*7*5-1); !membudget.Is(err) {
			t.Errorf("%s: one byte under the need: %v", name, err)
		}
		if _, err := LoadIDX(p, 3*5*7*5); err != nil {
			t.Errorf("%s: exactly the need: %v", name, err)
		}
	}
}
