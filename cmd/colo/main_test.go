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
)

// colo runs one command line in-process and returns its exit status,
// standard output and standard error.
func colo(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(&env{out: &out, errOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

// news20 writes the embedded 20 Newsgroups training file to a temporary
// file and returns its path.
func news20(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "20news.train.libsvm.xz")
	b, err := io.ReadAll(datasets.OpenNews20Train())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStatsJSONOnNews20(t *testing.T) {
	code, out, errOut := colo(t, "stats", "--json", news20(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st struct {
		Samples    int   `json:"samples"`
		Parameters int   `json:"parameters"`
		Edges      int64 `json:"edges"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Samples != 11269 || st.Parameters != 53975 || st.Edges != 1467345 {
		t.Fatalf("stats --json = %.200s: %+v, %v", out, st, err)
	}
}

func TestPartitionAndEvalAgree(t *testing.T) {
	data := news20(t)
	dir := filepath.Join(t.TempDir(), "p")
	code, _, errOut := colo(t, "partition", "--algo", "random", "-k", "4", "--seed", "3", data, "-o", dir)
	if code != 0 {
		t.Fatalf("partition exit %d: %s", code, errOut)
	}
	code, out, errOut := colo(t, "eval", data, "--data-part", filepath.Join(dir, "data.part"),
		"--param-part", filepath.Join(dir, "param.part"), "--json")
	if code != 0 {
		t.Fatalf("eval exit %d: %s", code, errOut)
	}
	var fromPartition, fromEval map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fromPartition); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &fromEval); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"k", "M_max", "T_max", "T_sum", "max_samples", "objective", "over_theta",
		"samples", "params", "memory", "worker", "server", "traffic", "random", "improvement_over_random"} {
		if !reflect.DeepEqual(fromPartition[key], fromEval[key]) {
			t.Errorf("%s: partition %v, eval %v", key, fromPartition[key], fromEval[key])
		}
	}
	if fromPartition["algorithm"] != "random" || fromPartition["k"] != 4.0 || fromPartition["seed"] != 3.0 {
		t.Errorf("summary header: %v %v %v", fromPartition["algorithm"], fromPartition["k"], fromPartition["seed"])
	}
}

func TestBadInput(t *testing.T) {
	good := writeFile(t, "good.svm", "1 1:1 2:1\n-1 2:1 3:0.5\n1 3:2\n")
	bad := writeFile(t, "bad.svm", "1 1:1\n-1 2:x\n")
	hugeID := writeFile(t, "huge.part", "0\n10000000\n1\n")
	hugerID := writeFile(t, "huger.part", "0\n1\n99999999999\n")
	okPart := writeFile(t, "ok.part", "0\n1\n0\n")
	param3 := writeFile(t, "p3.part", "1 0\n2 3\n3 1\n")
	notDir := good + "/out" // under a file
	dataDir := t.TempDir()
	blocked := t.TempDir() // a directory where param.part goes
	if err := os.Mkdir(filepath.Join(blocked, "param.part"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "Usage: colo COMMAND"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", []string{"stats", "--nope", good}, 2, "flag provided but not defined: -nope"},
		{"missing file arg", []string{"stats"}, 2, "expected one file argument"},
		{"missing file", []string{"stats", "/nonexistent/x.svm"}, 1, "/nonexistent/x.svm"},
		{"malformed file", []string{"stats", bad}, 1, "bad.svm:2"},
		{"k missing", []string{"partition", good, "-o", t.TempDir()}, 2, "--machines 0: want the number of machines, at least 1"},
		{"k negative", []string{"partition", "-k", "-2", good, "-o", t.TempDir()}, 2, "--machines -2: want the number of machines"},
		{"k too large", []string{"partition", "-k", "4", good, "-o", t.TempDir()}, 1, "k = 4: more machines than the 3 samples"},
		{"unknown algo", []string{"partition", "--algo", "magic", "-k", "2", good, "-o", t.TempDir()}, 2, `unknown algorithm "magic"`},
		{"parsa setting refused before the input is read", []string{"partition", "-k", "2", "--threads", "-1", "/nonexistent/x.svm", "-o", t.TempDir()}, 2, "parsa threads = -1: want 0 (one) or a positive count"},
		{"refinement setting refused before the input is read", []string{"partition", "-k", "2", "--refine", "--refine-passes", "-3", "/nonexistent/x.svm", "-o", t.TempDir()}, 2, "refine passes = -3: want a positive count"},
		{"unknown format", []string{"stats", "--format", "csv", good}, 2, `unknown format "csv"`},
		{"no output dir", []string{"partition", "-k", "2", good}, 2, "-o DIR is required"},
		{"eval without part", []string{"eval", good}, 2, "--data-part P is required"},
		{"eval huge machine id", []string{"eval", good, "--data-part", hugeID}, 1, hugeID + ":2: machine 10000000: want a machine number below the 3 samples (k, the number of machines, is at most the number of samples)"},
		{"eval huger machine id", []string{"eval", good, "--data-part", hugerID}, 1, hugerID + ":3: machine 99999999999: want a machine number below the 3 samples"},
		{"eval huge k", []string{"eval", good, "-k", "99999999999", "--data-part", okPart}, 1, okPart + ": k = 99999999999: more machines than the 3 samples"},
		{"eval param part beyond the data's k", []string{"eval", good, "--data-part", okPart, "--param-part", param3}, 1, param3 + `:2: "3": want a machine number in 0..1`},
		{"partition output under a file", []string{"partition", "-k", "2", good, "-o", notDir}, 1, "-o: cannot write into " + notDir + ": " + good + " is not a directory"},
		{"train output in a missing directory", []string{"train", good, "--json", "/nonexistent/dir/r.json"}, 1, "--json: cannot write /nonexistent/dir/r.json: directory /nonexistent/dir does not exist"},
		{"train svg on a directory", []string{"train", good, "--svg", t.TempDir()}, 1, "is a directory"},
		{"bench output under a file", []string{"bench", "partition", good, "-o", notDir}, 1, "-o: cannot write into " + notDir},
		{"partition output on standard output", []string{"partition", "-k", "2", good, "-o", "-"}, 2, "-o -: -o writes a directory of files, not standard output: name the directory"},
		{"partition output with a directory for param.part", []string{"partition", "-k", "2", good, "-o", blocked}, 1, "-o: cannot write " + filepath.Join(blocked, "param.part") + ": it is a directory"},
		{"demo output in a missing directory", []string{"demo", "--json", "/nonexistent/d.json"}, 1, "--json: cannot write /nonexistent/d.json"},
		{"node result in a missing directory", []string{"node", "--role", "machine", "--scheduler", "127.0.0.1:1", "--result", "/nonexistent/r.json"}, 1, "--result: cannot write /nonexistent/r.json"},
		{"gen output in a missing directory", []string{"gen", "sparse", "-n", "10", "-o", "/nonexistent/g.svm"}, 1, "-o: cannot write /nonexistent/g.svm: directory /nonexistent does not exist"},
		{"convert output in a missing directory", []string{"convert", good, "-o", "/nonexistent/c.hgr"}, 1, "-o: cannot write /nonexistent/c.hgr"},
		{"stats JSON in a missing directory", []string{"stats", good, "--json=/nonexistent/s.json"}, 1, "--json: cannot write /nonexistent/s.json"},
		{"decentralised JSON in a missing directory", []string{"train", "--mode", "decentralised", good, "--json=/nonexistent/d.json"}, 1, "--json: cannot write /nonexistent/d.json"},
		{"eval short part", []string{"eval", good, "--data-part", writeFile(t, "d.part", "0\n1\n")}, 1, "d.part: 2 lines for 3 samples"},
		{"gen bad gamma", []string{"gen", "sparse", "--gamma", "1.5", "-o", "-"}, 2, "gamma = 1.5"},
		{"scheduler without token", []string{"node", "--role", "scheduler", "--scheduler", "127.0.0.1:0", "--num-servers", "1", "--num-workers", "1"}, 2, "the scheduler has no cluster token, so any process that reaches its port could join the job or end it"},
		{"convert bad target", []string{"convert", good, "--to", "dot", "-o", "-"}, 2, `--to "dot"`},
		{"train negative lr", []string{"train", good, "--lr", "-1"}, 2, "--lr -1 must be a finite number ≥ 0"},
		{"train NaN lr", []string{"train", good, "--lr", "NaN"}, 2, "--lr NaN must be a finite number"},
		{"decentralised negative lr", []string{"train", "--mode", "decentralised", good, "--lr", "-0.5"}, 2, "--lr -0.5 must be a finite number ≥ 0"},
		{"flag by a word of its name", []string{"train", good, "--passes", "3"}, 2, "did you mean --max-passes?"},
		{"train a directory", []string{"train", dataDir}, 1, "load: open " + dataDir + ": is a directory, want a file"},
		{"stats a directory", []string{"stats", dataDir}, 1, "load: open " + dataDir + ": is a directory, want a file"},
		{"eval a directory as the part", []string{"eval", good, "--data-part", dataDir}, 1, "open " + dataDir + ": is a directory, want a file"},
		{"json file after a space", []string{"stats", good, "--json", "out"}, 2, "got 2: " + good + " out (for --json's file write --json=out)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := colo(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d (want %d), output %q, want it to contain %q", code, tc.code, out+errOut, tc.want)
			}
		})
	}
}

func TestFailedPartitionLeavesNoSummary(t *testing.T) {
	bad := writeFile(t, "bad.svm", "1 1:1\n-1 2:x\n")
	dir := filepath.Join(t.TempDir(), "out")
	if code, _, _ := colo(t, "partition", "-k", "2", bad, "-o", dir); code == 0 {
		t.Fatal("partition of a malformed file succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		t.Fatal("summary.json written for a failed run")
	}
}

func TestHelp(t *testing.T) {
	for _, c := range commands() {
		code, out, _ := colo(t, c.name, "-h")
		if code != 0 || !strings.Contains(out, "Usage: colo "+c.name) {
			t.Errorf("%s -h: exit %d, %q", c.name, code, out)
		}
	}
}

func TestConvertAndGenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "g.svm")
	if code, _, errOut := colo(t, "gen", "synthetic-sparse", "--seed", "2", "-o", gen); code != 0 {
		t.Fatalf("gen: %s", errOut)
	}
	code, out, errOut := colo(t, "stats", "--json", gen)
	if code != 0 {
		t.Fatalf("stats: %s", errOut)
	}
	var st struct{ Samples, Edges int }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	// 10^4 × 10^4 entries at density 0.001: 10^5 expected, sd ≈ 316.
	if st.Samples != 10000 || st.Edges < 98000 || st.Edges > 102000 {
		t.Fatalf("synthetic-sparse: %d samples, %d edges", st.Samples, st.Edges)
	}
	hg := filepath.Join(dir, "g.hgr")
	if code, _, errOut := colo(t, "convert", gen, "--to", "hmetis", "-o", hg); code != 0 {
		t.Fatalf("convert: %s", errOut)
	}
	b, err := os.ReadFile(hg)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(string(b), "\n", 2)[0]
	if !strings.HasSuffix(first, " 10000") {
		t.Fatalf("hMETIS header %q: want <nets> 10000", first)
	}
}

func TestDemo(t *testing.T) {
	json := filepath.Join(t.TempDir(), "demo.json")
	code, out, errOut := colo(t, "demo", "--passes", "2", "--link-bandwidth", "10gbit", "--json", json)
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, errOut)
	}
	for _, want := range []string{"11,269 samples, 53,975 parameters, 1,467,345 edges", "placement", "random", "parsa",
		"T_max", "inter-machine MB", "test accuracy %", "speed-up"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	var runs []map[string]any
	b, err := os.ReadFile(json)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Results []map[string]any }
	err = jsonUnmarshal(b, &doc)
	if runs = doc.Results; err != nil || len(runs) != 2 {
		t.Fatalf("demo JSON: %v, %d runs", err, len(runs))
	}
}
