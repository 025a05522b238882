package features

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"colo/table"
)

func TestLoadFirst(t *testing.T) {
	dir := t.TempDir()
	pq, _ := writeTable(t, dir, tinyRows())
	s, _ := Parse("delay ~ origin + std(score) + 1")
	f, err := Fit(pq, s, table.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	empty, saved := filepath.Join(dir, "empty"), filepath.Join(dir, "saved")
	for _, d := range []string{empty, saved} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Save(saved); err != nil {
		t.Fatal(err)
	}
	got, at, err := LoadFirst("", pq, empty, saved)
	if err != nil || at != saved || !reflect.DeepEqual(got, f) {
		t.Fatalf("LoadFirst = %v, %q, %v; want the spec of %s", got, at, err, saved)
	}
	if got, at, err := LoadFirst("", empty, filepath.Join(dir, "missing")); got != nil || at != "" || err != nil {
		t.Fatalf("LoadFirst of no spec = %v, %q, %v", got, at, err)
	}
	if err := os.WriteFile(filepath.Join(empty, FileName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadFirst(empty, saved); err == nil {
		t.Fatal("LoadFirst of a broken spec: no error")
	}
}
