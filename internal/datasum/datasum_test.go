package datasum

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFiles: the sum of files is the CRC-32C of their bytes one after
// another, whatever their names; another byte gives another sum, and a
// missing file is named.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := write("a", "1 1:2\n"), write("b", "0 3:1\n"), write("c", "1 1:2\n0 3:1\n")
	ab, err := Files(a, "", b)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := Files(c)
	if want := crc32.Checksum([]byte("1 1:2\n0 3:1\n"), crc32.MakeTable(crc32.Castagnoli)); ab != whole || !Valid(ab) || ab != fmt.Sprintf("%s%08x", Prefix, want) {
		t.Fatalf("sums %s and %s, want both %s%08x", ab, whole, Prefix, want)
	}
	if ba, _ := Files(b, a); ba == ab {
		t.Fatalf("the files in another order have the same sum %s", ba)
	}
	if _, err := Files(filepath.Join(dir, "missing")); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a missing file: %v", err)
	}
	for _, s := range []string{"", "crc32c:", "crc32c:1234567", "crc32c:1234567G", "md5:12345678"} {
		if Valid(s) {
			t.Errorf("Valid(%q)", s)
		}
	}
}
