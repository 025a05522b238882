package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"colo/datasets"
	"colo/internal/decompress"
)

// TestPartitionOutOfCore: `colo partition --memory` writes the same part
// files and the same costs as the in-memory run, and colo eval scores them
// the same way; a cap too small says how much is needed and leaves no
// summary behind.
func TestPartitionOutOfCore(t *testing.T) {
	data := news20(t)
	mem := filepath.Join(t.TempDir(), "mem")
	ooc := filepath.Join(t.TempDir(), "ooc")
	if code, _, errOut := colo(t, "partition", "-k", "8", "--seed", "2", data, "-o", mem); code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, errOut)
	}
	code, out, errOut := colo(t, "partition", "-k", "8", "--seed", "2", "--memory", "4GiB", "--spill-dir", t.TempDir(), data, "-o", ooc)
	if code != 0 {
		t.Fatalf("out of core: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "read out of core") || !strings.Contains(out, "peak resident") {
		t.Errorf("output does not report the out-of-core run:\n%s", out)
	}
	for _, f := range []string{"data.part", "param.part"} {
		a, _ := os.ReadFile(filepath.Join(mem, f))
		b, _ := os.ReadFile(filepath.Join(ooc, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between the in-memory and the out-of-core run", f)
		}
	}
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := read(filepath.Join(mem, "summary.json")), read(filepath.Join(ooc, "summary.json"))
	for _, key := range []string{"k", "M_max", "T_max", "T_sum", "max_samples", "objective", "samples", "params",
		"memory", "worker", "server", "traffic", "random", "improvement_over_random", "num_samples", "num_params", "num_edges", "part_files"} {
		if !reflect.DeepEqual(a[key], b[key]) {
			t.Errorf("summary %s: in memory %v, out of core %v", key, a[key], b[key])
		}
	}
	code, evalOut, errOut := colo(t, "eval", data, "--data-part", filepath.Join(ooc, "data.part"),
		"--param-part", filepath.Join(ooc, "param.part"), "--json")
	if code != 0 {
		t.Fatalf("eval exit %d: %s", code, errOut)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(evalOut), &e); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e["T_max"], b["T_max"]) || !reflect.DeepEqual(e["traffic"], b["traffic"]) {
		t.Errorf("colo eval: T_max %v, traffic %v; the summary: %v, %v", e["T_max"], e["traffic"], b["T_max"], b["traffic"])
	}

	small := filepath.Join(t.TempDir(), "small")
	code, _, errOut = colo(t, "partition", "-k", "8", "--memory", "2MiB", data, "-o", small)
	if code == 0 || !strings.Contains(errOut, "memory cap 2.0 MiB is below the") || !strings.Contains(errOut, "this run needs") {
		t.Fatalf("2 MiB cap: exit %d, %q: want an error saying how much is needed", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(small, "summary.json")); err == nil {
		t.Fatal("a failed run left a summary")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory", "lots"}, "--memory lots"},
		{[]string{"--memory", "64MiB", "--algo", "random"}, "only --algo parsa runs out of core"},
		{[]string{"--memory", "64MiB", "--threads", "2"}, "want one thread"},
	} {
		args := append([]string{"partition", "-k", "2"}, c.args...)
		code, _, errOut := colo(t, append(args, data, "-o", t.TempDir())...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q: want an error containing %q", c.args, code, errOut, c.want)
		}
	}
}

// TestMemoryAuto: with --memory auto a file that fits runs in memory.
func TestMemoryAuto(t *testing.T) {
	m := memoryFlags{memory: "auto"}
	path := writeFile(t, "small.svm", "1 1:1\n-1 2:1\n")
	if _, ok, err := m.cap(path, "parsa"); ok || err != nil {
		t.Fatalf("a small file: out of core %v, %v; want in memory", ok, err)
	}
	m.memory = "off"
	if _, ok, _ := m.cap(path, "parsa"); ok {
		t.Fatal("--memory off: want in memory")
	}
	m.memory = "1GiB"
	if c, ok, err := m.cap(path, "parsa"); !ok || err != nil || c != 1<<30 {
		t.Fatalf("--memory 1GiB: %d, %v, %v", c, ok, err)
	}
}

// TestPartitionBeyondTheBudget: a graph that would not fit the memory
// budget is refused at its line by the commands that load it whole, and
// colo partition with --memory auto (the default) partitions it out of
// core within the budget instead (here a budget too small for that too,
// which the out-of-core run says), while --memory off points to it.
func TestPartitionBeyondTheBudget(t *testing.T) {
	data := filepath.Join(t.TempDir(), "news.svm")
	r, err := decompress.NewReader(datasets.OpenNews20Train())
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := colo(t, "stats", "--memory-budget", "16MiB", data)
	if code != 1 || !strings.Contains(errOut, data+":") || !strings.Contains(errOut, "more than the memory budget of 16.0 MiB (raise it with --memory-budget SIZE, or off)") {
		t.Fatalf("stats: exit %d: %s", code, errOut)
	}
	code, _, errOut = colo(t, "partition", "-k", "4", "--memory-budget", "16MiB", "--memory", "off", data, "-o", filepath.Join(t.TempDir(), "p"))
	if code != 1 || !strings.Contains(errOut, "; or partition it out of core with --memory SIZE") {
		t.Fatalf("partition --memory off: exit %d: %s", code, errOut)
	}
	code, _, errOut = colo(t, "partition", "-k", "4", "--memory-budget", "16MiB", data, "-o", filepath.Join(t.TempDir(), "p"))
	if code != 1 || !strings.Contains(errOut, "partitioning out of core within the budget instead") || !strings.Contains(errOut, "out of core within 16.0 MiB") {
		t.Fatalf("partition --memory auto: exit %d: %s", code, errOut)
	}
	if code, _, errOut := colo(t, "stats", "--memory-budget", "64MiB", data); code != 0 {
		t.Fatalf("stats within the budget: exit %d: %s", code, errOut)
	}
}
