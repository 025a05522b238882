package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheck: writable places pass without anything left behind; a file
// in a missing directory, a directory in place of a file, a file in place
// of a directory and a read-only directory are refused with their path.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(root, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "new.json"), file} {
		if err := CheckFile(p); err != nil {
			t.Errorf("CheckFile(%s): %v", p, err)
		}
	}
	for _, p := range []string{root, filepath.Join(root, "a", "b", "c")} {
		if err := CheckDir(p); err != nil {
			t.Errorf("CheckDir(%s): %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "a")); err == nil {
		t.Error("CheckDir made a directory")
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{CheckFile(filepath.Join(root, "missing", "x.json")), "cannot write " + root + "/missing/x.json: directory " + root + "/missing does not exist"},
		{CheckFile(root), "cannot write " + root + ": it is a directory"},
		{CheckFile(filepath.Join(file, "x.json")), "cannot write " + file + "/x.json: " + file + " is not a directory"},
		{CheckDir(filepath.Join(file, "out")), "cannot write into " + file + "/out: " + file + " is not a directory"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v\nwant %s", c.err, c.want)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		want := "cannot write into " + ro + "/out: open " + ro + "/.colo-probe-"
		if err := CheckDir(filepath.Join(ro, "out")); err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("read-only: %v, want %s…", err, want)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestCheckDirFiles: a directory in the place of one of the files is
// refused, naming it; files not there yet pass, as do regular ones.
func TestCheckDirFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDirFiles(dir, "a", "b"); err != nil {
		t.Errorf("CheckDirFiles: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckDirFiles(dir, "a", "b"); err == nil || err.Error() != "cannot write "+filepath.Join(dir, "b")+": it is a directory" {
		t.Errorf("CheckDirFiles with a directory b: %v", err)
	}
	if err := CheckDirFiles(filepath.Join(dir, "a"), "x"); err == nil {
		t.Error("CheckDirFiles under a file passed")
	}
}

// TestRemoveRegular: only a regular file is removed; a link, a directory
// and nothing at all are left as they are.
func TestRemoveRegular(t *testing.T) {
	dir := t.TempDir()
	file, link, sub := filepath.Join(dir, "f"), filepath.Join(dir, "l"), filepath.Join(dir, "d")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, sub, filepath.Join(dir, "missing"), filepath.Join(file, "under")} {
		if err := RemoveRegular(p); err != nil {
			t.Errorf("RemoveRegular(%s): %v", p, err)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
	if _, err := os.Stat(sub); err != nil {
		t.Errorf("the directory was removed: %v", err)
	}
	if err := RemoveRegular(file); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(file); !os.IsNotExist(err) {
		t.Errorf("the regular file is still there: %v", err)
	}
}
