package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/partition"
)

// TestParsaIncrementalCommand partitions the first samples of a file, then
// the whole file from that placement, and checks that the old samples kept
// their machines.
func TestParsaIncrementalCommand(t *testing.T) {
	var old, all strings.Builder
	for u := 0; u < 300; u++ {
		line := fmt.Sprintf("1 %d:1 %d:1 %d:1\n", 1+u%17, 20+u%23, 50+u%5)
		all.WriteString(line)
		if u < 200 {
			old.WriteString(line)
		}
	}
	dir := t.TempDir()
	oldFile := writeFile(t, "old.libsvm", old.String())
	allFile := writeFile(t, "all.libsvm", all.String())
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	if code, _, errOut := colo(t, "partition", "--algo", "parsa", "-k", "4", oldFile, "-o", first); code != 0 {
		t.Fatalf("first: exit %d: %s", code, errOut)
	}
	if code, _, errOut := colo(t, "partition", "--algo", "parsa", "-k", "4", "--init-from", first, "--threads", "2", allFile, "-o", second); code != 0 {
		t.Fatalf("second: exit %d: %s", code, errOut)
	}
	a, err := os.ReadFile(filepath.Join(first, "data.part"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second, "data.part"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), string(a)) || strings.Count(string(b), "\n") != 300 {
		t.Errorf("the second placement does not extend the first")
	}
	// A placement of more samples than the file has is refused.
	if code, _, errOut := colo(t, "partition", "-k", "4", "--init-from", second, oldFile, "-o", filepath.Join(dir, "x")); code == 0 || !strings.Contains(errOut, "more than") {
		t.Errorf("too long a previous placement: exit %d: %s", code, errOut)
	}
}

// TestParsaFlags checks the parsing of the Parsa flags.
func TestParsaFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
		tau  int
	}{
		{[]string{"--tau", "3"}, true, 3},
		{[]string{"--tau", "inf"}, true, partition.TauInfinite},
		{[]string{"--tau", "auto"}, true, partition.TauAuto},
		{[]string{"--tau", "-1"}, false, 0},
		{[]string{"--init", "global", "--grow-by", "params"}, true, partition.TauAuto},
		{[]string{"--init", "random"}, false, 0},
		{[]string{"--grow-by", "edges"}, false, 0},
	} {
		f := newFlags(&env{}, "t", "", "")
		var opt partition.Options
		algoFlags(f, &opt)
		err := f.Parse(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("%v: error %v", tc.args, err)
			continue
		}
		if tc.ok && opt.Parsa.Tau != tc.tau {
			t.Errorf("%v: tau %d, want %d", tc.args, opt.Parsa.Tau, tc.tau)
		}
	}
	f := newFlags(&env{}, "t", "", "")
	var opt partition.Options
	algoFlags(f, &opt)
	if err := opt.Parsa.Validate(); err != nil || opt.Parsa.Init != partition.DefaultInit {
		t.Errorf("default flags: %+v, %v", opt.Parsa, err)
	}
}

// TestBenchCommand runs colo bench partition on a small file and checks
// the three outputs, and the new partitioner flags of colo partition.
func TestBenchCommand(t *testing.T) {
	var data strings.Builder
	for u := 0; u < 200; u++ {
		fmt.Fprintf(&data, "1 %d:1 %d:1 %d:1\n", 1+u%17, 20+u%23, 50+u%5)
	}
	file := writeFile(t, "d.libsvm", data.String())
	dir := t.TempDir()
	code, out, errOut := colo(t, "bench", "partition", file+"@libsvm", "--k", "2,4", "--algos", "random,tsh1,tsh2,mbp,parsa+refine", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"bench.csv", "bench.json", "improvement.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !strings.Contains(out, "parsa+refine") {
		t.Errorf("table lacks parsa+refine:\n%s", out)
	}
	if code, _, errOut := colo(t, "bench", "partition", file, "--algos", "nope", "-o", dir); code != 2 {
		t.Errorf("unknown algorithm: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{
		{"--algo", "tsh", "--alpha", "2", "--beta", "3", "--sample-rate", "0.5"},
		{"--algo", "mbp", "--mbp-initial", "greedy", "--param-algo", "minmax"},
		{"--algo", "parsa", "--refine", "--refine-target", "objective"},
		{"--algo", "parsa+refine", "--refine-vcycles", "-1", "--parsa-refine", "2"},
	} {
		a := append([]string{"partition", "-k", "3", file, "-o", filepath.Join(dir, "p")}, args...)
		if code, _, errOut := colo(t, a...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if code, _, errOut := colo(t, "eval", file, "--data-part", filepath.Join(dir, "p", "data.part"), "--param-algo", "minmax", "--json"); code != 0 || !strings.Contains(errOut+"x", "x") {
		t.Errorf("eval --param-algo minmax: exit %d: %s", code, errOut)
	}
}
