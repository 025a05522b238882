package ooc

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TestAutoMemory: a small file, compressed or not, is partitioned in
// memory; a missing one is left to the loader; the magic bytes of a gzip
// file are seen, plain text's are not.
func TestAutoMemory(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "g.svm")
	if err := os.WriteFile(plain, []byte("1 1:1 2:1\n0 2:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "g.svm.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	w := gzip.NewWriter(f)
	w.Write([]byte("1 1:1 2:1\n"))
	w.Close()
	f.Close()
	if compressedFile(plain) || !compressedFile(gz) {
		t.Errorf("compressed: plain %v, gzip %v", compressedFile(plain), compressedFile(gz))
	}
	if availableMemory() <= 0 {
		t.Skip("no /proc/meminfo: nothing to compare with")
	}
	for _, p := range []string{plain, gz, filepath.Join(dir, "missing")} {
		if c, ok := AutoMemory(p); ok || c != 0 {
			t.Errorf("%s: out of core within %d bytes, want in memory", filepath.Base(p), c)
		}
	}
}
