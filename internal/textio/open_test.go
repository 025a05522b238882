package textio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); !errors.Is(err, ErrIsDir) || err.Error() != "open "+dir+": is a directory, want a file" {
		t.Errorf("Open(a directory): %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(a missing file): %v, want fs.ErrNotExist", err)
	}
	path := filepath.Join(dir, "data")
	if err := os.WriteFile(path, []byte("1 1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 6)
	if n, err := f.Read(b); err != nil || string(b[:n]) != "1 1:1\n" {
		t.Errorf("read %q, %v", b[:n], err)
	}
}
