package clib

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/ps/route"
)

// TestPlacedRoute: each parameter of param.part goes to the server of its
// machine, the ids the file does not name to id mod servers; a bad line
// is refused naming the file and line.
func TestPlacedRoute(t *testing.T) {
	write := func(text string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "param.part"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	b, err := PlacedRoute(write("0 1\n3 0\n\n4 1\n"), 2)
	if err != nil {
		t.Fatal(err)
	}
	var tab route.Table
	if err := tab.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for key, want := range []int{1, 1, 0, 0, 1} { // 1 and 2 unnamed: 1 mod 2, 2 mod 2
		if got := tab.Owner(uint64(key)); got != want {
			t.Errorf("key %d on server %d, want %d", key, got, want)
		}
	}
	for text, want := range map[string]string{
		"0 1 2\n":    "param.part:1: \"0 1 2\": want `<parameter id> <machine>`",
		"0 1\n1 2\n": "param.part:2: \"1 2\": want a parameter id below 2^32 and a machine in 0..1",
		"x 0\n":      "param.part:1: \"x 0\": want a parameter id",
		"\n":         "param.part: no parameters",
	} {
		if _, err := PlacedRoute(write(text), 2); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
	if _, err := PlacedRoute(t.TempDir(), 2); err == nil {
		t.Error("a directory without param.part: no error")
	}
}
