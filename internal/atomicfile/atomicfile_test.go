package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	// Larger than the buffer, so that the content crosses several flushes.
	want := strings.Repeat("0123456789abcdef\n", 3*bufSize/17+5)
	for _, old := range []string{"", "old content\n"} {
		if old != "" {
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, want); return err }); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("old %q: wrote %d bytes, read back %d", old, len(want), len(got))
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != Mode {
			t.Errorf("old %q: mode %v, want %v", old, st.Mode().Perm(), os.FileMode(Mode))
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("old %q: directory holds %q, want only out.txt", old, names)
		}
	}
}

func TestWriteErrorKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, n := range []int{0, 10, 3 * bufSize} { // before, inside and after the first flush
		err := Write(path, func(w io.Writer) error {
			if _, err := w.Write(make([]byte, n)); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%d bytes then an error: got %v, want boom naming %s", n, err, path)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != "old\n" {
			t.Fatalf("%d bytes then an error: file now %q (%v), want it untouched", n, got, err)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Fatalf("%d bytes then an error: directory holds %q, want only out.txt", n, names)
		}
	}
}

func TestWriteUnwritableDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		filepath.Join(dir, "missing", "out.txt"), // no such directory
		filepath.Join(file, "out.txt"),           // the "directory" is a file
	}
	if os.Geteuid() != 0 { // root writes into read-only directories
		paths = append(paths, filepath.Join(ro, "out.txt"))
	}
	for _, path := range paths {
		called := false
		err := Write(path, func(w io.Writer) error { called = true; return nil })
		if err == nil {
			t.Errorf("%s: no error", path)
			continue
		}
		if !strings.HasPrefix(err.Error(), fmt.Sprintf("write %s: ", path)) {
			t.Errorf("%s: error %q does not name the path", path, err)
		}
		if called {
			t.Errorf("%s: write was called although no file could be created", path)
		}
	}
}
