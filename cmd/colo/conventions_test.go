package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// headed parses out as one JSON object and checks that it starts with the
// run record: the version, the command and the final value of the flag
// option (want).
func headed(t *testing.T, what, out, option, want string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%s: standard output is not one JSON document: %v\n%.400s", what, err, out)
	}
	if v, _ := doc["version"].(string); v == "" {
		t.Errorf("%s: no version in %.300s", what, out)
	}
	if g, _ := doc["go"].(string); g != runtime.Version() {
		t.Errorf("%s: go = %q, want %q", what, g, runtime.Version())
	}
	opts, _ := doc["options"].(map[string]any)
	if got, ok := opts[option]; !ok || got != want {
		t.Errorf("%s: options[%q] = %v, want %q (options %v)", what, option, got, want, opts)
	}
	return doc
}

// TestJSONEverywhere runs every command with its JSON option on small
// data: standard output must be one JSON document, headed by the version
// and the options, and the human output must have gone to standard error.
func TestJSONEverywhere(t *testing.T) {
	var svm strings.Builder
	for i := range 40 {
		label := []string{"1", "-1"}[i%2]
		svm.WriteString(label + " " + itoa(1+i%7) + ":1 " + itoa(8+i%5) + ":0.5 " + itoa(13+i%3) + ":2\n")
	}
	data := writeFile(t, "d.svm", svm.String())
	var csv strings.Builder
	csv.WriteString("x,y,class\n")
	for i := range 30 {
		csv.WriteString(shardDigit(i%7) + "," + shardDigit(i%5) + "," + []string{"cat", "dog"}[i%2] + "\n")
	}
	dense := writeFile(t, "d.csv", csv.String())
	cases := []struct {
		name           string
		args           []string
		option, want   string
		humanInStderr  string
		resultsPresent bool
	}{
		{"stats", []string{"stats", "--json", data}, "format", "", "", false},
		{"partition", []string{"partition", "--json", "-k", "2", "--algo", "random", data, "-o", filepath.Join(t.TempDir(), "p")}, "machines", "2", "", false},
		{"eval", []string{"eval", data, "--data-part", writeFile(t, "p", strings.Repeat("0\n1\n", 20)), "--json=-"}, "machines", "0", "", false},
		{"train", []string{"train", data, "--machines", "2", "--max-passes", "2", "--json", "-"}, "max-passes", "2", "final train loss", false},
		{"train compare", []string{"train", data, "--workers", "2", "--max-passes", "2", "--compare", "random,parsa", "--json"}, "machines", "2", "speed-up", true},
		{"bench partition", []string{"bench", "partition", data, "--machines", "2,4", "--algos", "random", "-o", filepath.Join(t.TempDir(), "b"), "--json"}, "algos", "random", "T_max impr.", true},
		{"bench kv", []string{"bench", "kv", "--json", "--duration", "5ms", "--sparse-keys", "100", "--dense-values", "100"}, "duration", "5ms", "", true},
		{"shard", []string{"shard", dense, "--label-col", "class", "--workers", "3", "--scheme", "stratified", "-o", filepath.Join(t.TempDir(), "s"), "--json"}, "machines", "3", "", false},
		{"version", []string{"version", "--json"}, "json", "-", "", false},
	}
	for _, c := range cases {
		code, out, errOut := colo(t, c.args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", c.name, code, errOut)
			continue
		}
		doc := headed(t, c.name, out, c.option, c.want)
		if cmd, _ := doc["command"].(string); !strings.HasPrefix(strings.Join(c.args, " "), strings.TrimPrefix(cmd, "colo ")) {
			t.Errorf("%s: command %q", c.name, cmd)
		}
		if _, ok := doc["results"]; ok != c.resultsPresent {
			t.Errorf("%s: results present %v, want %v", c.name, ok, c.resultsPresent)
		}
		if c.humanInStderr != "" && !strings.Contains(errOut, c.humanInStderr) {
			t.Errorf("%s: the table (%q) is not on standard error:\n%s", c.name, c.humanInStderr, errOut)
		}
	}
	// The files written beside: summary.json of partition and shard, and
	// bench.json, are headed the same way.
	dir := filepath.Join(t.TempDir(), "p")
	if code, _, errOut := colo(t, "partition", "--machines", "2", "--seed", "7", data, "-o", dir); code != 0 {
		t.Fatalf("partition: %s", errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	headed(t, "summary.json", string(b), "seed", "7")
	// A --json FILE keeps the table on standard output.
	js := filepath.Join(t.TempDir(), "s.json")
	code, out, errOut := colo(t, "stats", data, "--json", js)
	if code != 0 || !strings.Contains(out, "degree histogram") {
		t.Fatalf("stats --json FILE: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err = os.ReadFile(js); err != nil {
		t.Fatal(err)
	}
	headed(t, js, string(b), "json", js)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestBuiltVersion checks colo version on a binary built by go build in
// the repository: the revision is the checked-out commit.
func TestBuiltVersion(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("no git repository: the build carries no revision")
	}
	out, err := exec.Command(coloBin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	doc := headed(t, "colo version --json", string(out), "json", "-")
	if doc["vcs_revision"] == nil {
		t.Skip("the binary carries no VCS stamp (built with -buildvcs=false)")
	}
	if rev := strings.TrimSpace(string(head)); doc["vcs_revision"] != rev {
		t.Errorf("vcs_revision %v, want %s", doc["vcs_revision"], rev)
	}
	line, err := exec.Command(coloBin, "version").Output()
	if err != nil || !strings.Contains(string(line), "revision "+strings.TrimSpace(string(head))) {
		t.Errorf("colo version = %q, %v", line, err)
	}
}

// TestLaunchJSON checks colo launch --json over real processes: the
// summary is headed by the version and options, -n an alias of
// --machines.
func TestLaunchJSON(t *testing.T) {
	out, err := exec.Command(coloBin, "launch", "--json", "-n", "2", "--rounds", "2", "--batch", "100", "--keys", "1000").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	doc := headed(t, "launch", string(out), "machines", "2")
	if doc["checked"] != true {
		t.Errorf("launch: %.300s", out)
	}
}

// TestListFlagsCheckedFirst gives every list-valued flag a bad item and a
// data file that does not exist: the flag must be refused (exit 2, named)
// before the file is read.
func TestListFlagsCheckedFirst(t *testing.T) {
	missing := "/nonexistent/data"
	out := filepath.Join(t.TempDir(), "o")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", missing, "--compare", "random,prasa"}, "prasa"},
		{[]string{"demo", "--compare", "random,prasa"}, "prasa"},
		{[]string{"train", missing, "--app", "mlp", "--hidden", "256,x"}, "--hidden"},
		{[]string{"train", missing, "--app", "cnn", "--conv-channels", "6,0"}, "--conv-channels"},
		{[]string{"train", "--mode", "decentralised", missing, "--worker-speeds", "1,x"}, "speeds"},
		{[]string{"bench", "partition", missing, "--algos", "random,prasa", "-o", out}, "prasa"},
		{[]string{"bench", "partition", missing, "--machines", "2,x", "-o", out}, "--machines"},
		{[]string{"bench", "partition", missing, "--k", "2,0", "-o", out}, "--machines"},
		{[]string{"bench", "sharding", missing, "--schemes", "random,bogus", "-o", out}, "bogus"},
		{[]string{"bench", "balance", missing, "--schemes", "average,bogus", "-o", out}, "bogus"},
		{[]string{"bench", "balance", missing, "--slices", "256,x", "-o", out}, "--slices"},
		{[]string{"bench", "rcd", missing, "--worker-speeds", "1,-2"}, "speeds"},
		{[]string{"shard", missing, "--machines", "2", "--scheme", "submodular", "--ratios", "1,x", "-o", out}, "--ratios"},
	} {
		code, _, errOut := colo(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, missing) {
			t.Errorf("colo %s: exit %d, %q; want exit 2 naming %q before reading the data", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trian"}, `unknown command "trian": did you mean train?`},
		{[]string{"partiton"}, "did you mean partition?"},
		{[]string{"stats", "--jsno", "x"}, "did you mean --json?"},
		{[]string{"partition", "--machnies", "2", "x"}, "did you mean --machines?"},
		{[]string{"train", "--max-pass", "2", "x"}, "did you mean --max-passes?"},
		{[]string{"bench", "partiton"}, "did you mean partition?"},
	} {
		code, _, errOut := colo(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("colo %s: exit %d, %q; want %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	if _, _, errOut := colo(t, "frobnicate"); strings.Contains(errOut, "did you mean") {
		t.Errorf("colo frobnicate suggests: %q", errOut)
	}
}

// TestMachinesSpellings: --machines is listed, -k named beside it, and the
// old spellings work without being listed.
func TestMachinesSpellings(t *testing.T) {
	_, help, _ := colo(t, "train", "-h")
	if !strings.Contains(help, "--machines int") || !strings.Contains(help, "(also --workers, -k)") || strings.Contains(help, "\n  --workers") {
		t.Errorf("train -h:\n%s", help)
	}
	_, help, _ = colo(t, "launch", "-h")
	if !strings.Contains(help, "(also -k, -n)") || strings.Contains(help, "\n  -n ") {
		t.Errorf("launch -h:\n%s", help)
	}
	good := writeFile(t, "g.svm", "1 1:1 2:1\n-1 2:1 3:0.5\n1 3:2\n-1 1:1\n")
	var parts []string
	for _, flag := range []string{"--machines", "-k", "--k"} {
		dir := filepath.Join(t.TempDir(), "p")
		if code, _, errOut := colo(t, "partition", "--algo", "random", flag, "2", good, "-o", dir); code != 0 {
			t.Fatalf("partition %s 2: %s", flag, errOut)
		}
		b, err := os.ReadFile(filepath.Join(dir, "data.part"))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	if parts[0] != parts[1] || parts[1] != parts[2] {
		t.Errorf("the spellings place differently: %q", parts)
	}
}
