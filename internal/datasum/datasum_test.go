package datasum

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/colotest"
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

// TestCheck: a summary with the data's sum passes, one with another sum
// is refused naming both, one without a sum passes with a warning, and
// a malformed sum is refused.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	summary := func(s string) string {
		p := filepath.Join(dir, "summary.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const sum, other = "crc32c:0000abcd", "crc32c:12345678"
	for _, tc := range []struct {
		summary, sum, warning, err string
	}{
		{`{"k": 2, "data_checksum": "crc32c:0000abcd"}`, sum, "", ""},
		{`{"k": 2, "data_checksum": "crc32c:12345678"}`, sum, "", "summary.json: made from other data: data_checksum " + other + ", but d.svm is " + sum},
		{`{"k": 2}`, sum, "summary.json records no data_checksum (written by an earlier colo): not checked against d.svm", ""},
		{`{"k": 2, "data_checksum": 7}`, sum, "", "data_checksum 7: want crc32c: and 8 hexadecimal digits"},
		{`[1]`, sum, "", "want a JSON object"},
		{`{"data_checksum": "crc32c:12345678"}`, "", "", ""},
	} {
		warn, err := Check(summary(tc.summary), tc.sum, "d.svm")
		if !strings.HasSuffix(warn, tc.warning) || (warn == "") != (tc.warning == "") ||
			tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.summary, warn, err, tc.warning, tc.err)
		}
	}
}

// TestCheckRefusesNonRegular: a summary that is a FIFO or a link to
// /dev/zero is refused unread, naming it; before, Check waited for the
// FIFO's writer, and read /dev/zero (its size 0 passed the bound) until
// memory ran out.
func TestCheckRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := filepath.Join(dir, "fifo.json"), filepath.Join(dir, "zero.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Skip(err)
	}
	for path, want := range map[string]string{
		fifo: "open " + fifo + ": a named pipe (FIFO): want a regular file",
		zero: "open " + zero + ": a character device: want a regular file",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Check(path, "crc32c:0000abcd", "d.svm")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != want {
				t.Errorf("Check(%s): %v, want %s", path, err, want)
			}
		case <-time.After(colotest.HangTimeout(t)):
			t.Fatalf("Check(%s) has not returned in %v", path, colotest.HangTimeout(t))
		}
	}
}
