package atomicfile

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// writeString writes s to path with Write.
func writeString(path, s string) error {
	return Write(path, func(w io.Writer) error { _, err := io.WriteString(w, s); return err })
}

// TestKinds writes to each kind of target: a regular file keeps its mode
// and gets the content, a new file gets Mode, a link stays a link and its
// target gets the content, a FIFO's reader gets the content and the FIFO
// stays, a character device stays the device it was.
func TestKinds(t *testing.T) {
	dir := t.TempDir()
	const want = "{\"loss\": 0.25}\n"

	t.Run("regular 0600", func(t *testing.T) {
		p := filepath.Join(dir, "private.json")
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := CheckFile(p); err != nil {
			t.Fatal(err)
		}
		if err := writeString(p, want); err != nil {
			t.Fatal(err)
		}
		expectFile(t, p, want, 0o600)
	})
	t.Run("new", func(t *testing.T) {
		p := filepath.Join(dir, "new.json")
		if err := CheckFile(p); err != nil {
			t.Fatal(err)
		}
		if err := writeString(p, want); err != nil {
			t.Fatal(err)
		}
		expectFile(t, p, want, Mode)
	})
	t.Run("symlink to a file", func(t *testing.T) {
		p := filepath.Join(dir, "target.json")
		if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
			t.Fatal(err)
		}
		// A chain of two links, the second relative.
		l1, l2 := filepath.Join(dir, "link1"), filepath.Join(dir, "link2")
		if err := os.Symlink("target.json", l2); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l2, l1); err != nil {
			t.Fatal(err)
		}
		if err := CheckFile(l1); err != nil {
			t.Fatal(err)
		}
		if err := writeString(l1, want); err != nil {
			t.Fatal(err)
		}
		expectFile(t, p, want, 0o640)
		for _, l := range []string{l1, l2} {
			if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer a link: %v %v", l, st.Mode(), err)
			}
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		p := filepath.Join(dir, "made.json")
		l := filepath.Join(dir, "to-made")
		if err := os.Symlink(p, l); err != nil {
			t.Fatal(err)
		}
		if err := writeString(l, want); err != nil {
			t.Fatal(err)
		}
		expectFile(t, p, want, Mode)
		if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link", l)
		}
	})
	t.Run("symlink into a missing directory", func(t *testing.T) {
		p := filepath.Join(dir, "gone", "out.json")
		l := filepath.Join(dir, "to-gone")
		if err := os.Symlink(p, l); err != nil {
			t.Fatal(err)
		}
		wantErr := "write " + l + " (a link to " + p + "): directory " + filepath.Join(dir, "gone") + " does not exist"
		if err := writeString(l, want); err == nil || err.Error() != wantErr {
			t.Errorf("got %v\nwant %s", err, wantErr)
		}
		if err := CheckFile(l); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("CheckFile: %v", err)
		}
		if st, err := os.Lstat(l); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link", l)
		}
	})
	t.Run("FIFO with a reader", func(t *testing.T) {
		p := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("no FIFO here: %v", err)
		}
		// CheckFile must not open the FIFO: with no reader, opening waits.
		if err := CheckFile(p); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(p)
			if err != nil {
				got <- err.Error()
				return
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(b)
		}()
		if err := writeString(p, want); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != want {
			t.Errorf("the reader got %q, want %q", g, want)
		}
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s is no longer a FIFO: %v", p, err)
		}
		if names := entries(t, dir); strings.Contains(strings.Join(names, " "), ".tmp") {
			t.Errorf("temporary file left: %q", names)
		}
	})
	t.Run("character device", func(t *testing.T) {
		const null = "/dev/null"
		before, err := os.Lstat(null)
		if err != nil || before.Mode()&os.ModeCharDevice == 0 {
			t.Skipf("no character device %s here", null)
		}
		if err := CheckFile(null); err != nil {
			t.Fatal(err)
		}
		if err := writeString(null, want); err != nil {
			t.Fatal(err)
		}
		after, err := os.Lstat(null)
		if err != nil {
			t.Fatal(err)
		}
		if after.Mode() != before.Mode() || after.Sys().(*syscall.Stat_t).Rdev != before.Sys().(*syscall.Stat_t).Rdev ||
			after.Sys().(*syscall.Stat_t).Ino != before.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("%s changed: %v -> %v", null, before.Mode(), after.Mode())
		}
	})
	t.Run("descriptor", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		p := "/dev/fd/" + strconv.Itoa(int(w.Fd()))
		if err := CheckFile(p); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { b, _ := io.ReadAll(r); got <- string(b) }()
		if err := writeString(p, want); err != nil {
			t.Fatal(err)
		}
		w.Close() // Write closed its copy; this is the last writer
		if g := <-got; g != want {
			t.Errorf("the pipe got %q, want %q", g, want)
		}
	})
	t.Run("socket", func(t *testing.T) {
		p := filepath.Join(dir, "sock")
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Skipf("no Unix socket here: %v", err)
		}
		defer ln.Close()
		got := make(chan string, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			got <- string(b)
		}()
		if err := CheckFile(p); err != nil {
			t.Fatal(err)
		}
		if err := writeString(p, want); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != want {
			t.Errorf("the socket got %q, want %q", g, want)
		}
	})
	t.Run("directory", func(t *testing.T) {
		sub := filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeString(sub, want); err == nil || err.Error() != "write "+sub+": it is a directory" {
			t.Errorf("got %v", err)
		}
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			t.Errorf("%s is no longer a directory", sub)
		}
	})
}

// TestReadOnly: a file in a read-only directory, and a read-only file,
// are refused by CheckFile and by Write, and stay as they were. Root
// writes both, so the test skips as root.
func TestReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only files and directories: nothing to refuse")
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	inRO := filepath.Join(ro, "out.json")
	if err := os.WriteFile(inRO, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o755)
	roFile := filepath.Join(dir, "ro.json")
	if err := os.WriteFile(roFile, []byte("old"), 0o444); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{inRO, filepath.Join(ro, "new.json"), roFile} {
		if err := CheckFile(p); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("CheckFile(%s): %v, want permission denied", p, err)
		}
		if err := writeString(p, "new"); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("Write(%s): %v, want permission denied", p, err)
		}
	}
	expectFile(t, inRO, "old", 0o644)
	expectFile(t, roFile, "old", 0o444)
	if _, err := os.Stat(filepath.Join(ro, "new.json")); err == nil {
		t.Error("a new file appeared in the read-only directory")
	}
}

// TestUnwritableForRoot: a directory that no one may add a file to, root
// included (sysfs takes no new files), is refused by CheckFile and Write.
func TestUnwritableForRoot(t *testing.T) {
	const dir = "/sys"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("no %s here", dir)
	}
	p := filepath.Join(dir, "colo-out.json")
	if err := CheckFile(p); err == nil || !strings.HasPrefix(err.Error(), "cannot write "+p+": open "+dir+"/.colo-probe-") {
		t.Errorf("CheckFile: %v", err)
	}
	if err := writeString(p, "{}"); err == nil || !strings.HasPrefix(err.Error(), "write "+p+": open "+dir+"/.colo-out.json.tmp") {
		t.Errorf("Write: %v", err)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("%s appeared", p)
	}
}

// expectFile checks that path is a regular file holding want with mode.
func expectFile(t *testing.T, path, want string, mode os.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want a regular file of %v", path, st.Mode(), mode)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s holds %q (%v), want %q", path, b, err, want)
	}
}
