package textio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(file, []byte(`{"k": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want string // the error's text, "" for none
		is   error
	}{
		{file, "", nil},
		{link, "", nil},
		{fifo, "open " + fifo + ": a named pipe (FIFO): want a regular file", ErrNotRegular},
		{zero, "open " + zero + ": a character device: want a regular file", ErrNotRegular},
		{dir, "open " + dir + ": is a directory, want a file", ErrIsDir},
	}
	for _, c := range cases {
		// A FIFO without a writer must not block: the test's guard is
		// go test's -timeout.
		b, err := ReadRegular(c.path, 100)
		if c.want == "" {
			if err != nil || string(b) != `{"k": 2}` {
				t.Errorf("ReadRegular(%s) = %q, %v", c.path, b, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !errors.Is(err, c.is) {
			t.Errorf("ReadRegular(%s): %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := ReadRegular(file, 3); err == nil || err.Error() != file+": 8 bytes, want at most 3" {
		t.Errorf("ReadRegular over the limit: %v", err)
	}
}

func TestReadLimited(t *testing.T) {
	if b, err := ReadLimited(strings.NewReader("abc"), "x", 3); err != nil || string(b) != "abc" {
		t.Errorf("ReadLimited at the limit: %q, %v", b, err)
	}
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if _, err := ReadLimited(f, "/dev/zero", 1<<10); err == nil || err.Error() != "/dev/zero: more than 1024 bytes, want at most 1024" {
		t.Errorf("ReadLimited(/dev/zero): %v", err)
	}
}
