package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"colo/shard"
)

// shardIDXFile writes an idx file of unsigned bytes.
func shardIDXFile(t *testing.T, name string, dims []int, data []byte) string {
	t.Helper()
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, k := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(k))
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, append(b, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readShardLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, shard.ShardsFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func TestShardIDXStratified(t *testing.T) {
	// Eight 2×2 images; labels 1 0 1 1 0 2 0 1. Stratified on two
	// workers: class 0 = {1, 4, 6} → 0 1 0, class 1 = {0, 2, 3, 7} →
	// 1 0 1 0, class 2 = {5} → 1.
	images := shardIDXFile(t, "img", []int{8, 2, 2}, make([]byte, 32))
	labels := shardIDXFile(t, "lab", []int{8}, []byte{1, 0, 1, 1, 0, 2, 0, 1})
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := colo(t, "shard", images, "--labels", labels, "--workers", "2", "--scheme", "stratified", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, want := strings.Join(readShardLines(t, dir), " "), "1 0 0 1 1 1 0 0"; got != want {
		t.Errorf("shards.txt = %s, want %s", got, want)
	}
	if !strings.Contains(out, "class-count spread 1") {
		t.Errorf("table lacks the class-count spread:\n%s", out)
	}
	var rep struct {
		Scheme  string `json:"scheme"`
		Samples int    `json:"samples"`
		Shards  []struct {
			Size        int   `json:"size"`
			ClassCounts []int `json:"class_counts"`
		} `json:"shards"`
	}
	b, err := os.ReadFile(filepath.Join(dir, shard.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Scheme != "stratified" || rep.Samples != 8 || len(rep.Shards) != 2 || rep.Shards[0].Size != 4 ||
		!slices.Equal(rep.Shards[1].ClassCounts, []int{1, 2, 1}) {
		t.Errorf("summary = %+v", rep)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("output directory holds %d entries, want shards.txt and summary.json", len(entries))
	}
}

func TestShardCSVSubmodular(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("x,y,class\n")
	for i := range 30 {
		cls := []string{"cat", "dog"}[i%2]
		sb.WriteString(strings.Join([]string{shardDigit(i % 7), shardDigit(i % 5), cls}, ",") + "\n")
	}
	data := writeFile(t, "d.csv", sb.String())
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := colo(t, "shard", data, "--label-col", "class", "--workers", "3", "--scheme", "submodular",
		"--ratios", "1,2,3", "-o", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		MaxSizeDeviation       float64 `json:"max_size_deviation"`
		MaxClassCountDeviation float64 `json:"max_class_count_deviation"`
		Function               string  `json:"function"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.MaxSizeDeviation >= 1 || rep.MaxClassCountDeviation >= 1 || rep.Function != "facility" {
		t.Errorf("summary %+v", rep)
	}
	if n := len(readShardLines(t, dir)); n != 30 {
		t.Errorf("%d lines in shards.txt, want 30", n)
	}
}

func shardDigit(i int) string { return string(rune('0' + i)) }

func TestShardDistAwareBroadcast(t *testing.T) {
	// Eight samples near 0 and two near 100: with two clusters and three
	// workers the far pair is a cluster smaller than the workers.
	var sb strings.Builder
	for i := range 8 {
		sb.WriteString("0 1:" + shardDigit(i%3) + " 2:" + shardDigit(i%2) + "\n")
	}
	sb.WriteString("1 1:100 2:100\n1 1:101 2:100\n")
	data := writeFile(t, "d.svm", sb.String())
	dir := filepath.Join(t.TempDir(), "out")
	code, _, errOut := colo(t, "shard", data, "--workers", "3", "--scheme", "distaware", "--clusters", "2", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := readShardLines(t, dir)
	if lines[8] != "*" || lines[9] != "*" {
		t.Errorf("far samples: %q %q, want * *", lines[8], lines[9])
	}
	for _, l := range lines[:8] {
		if l == "*" {
			t.Errorf("near sample broadcast: %v", lines)
		}
	}
	// A trainer reads the directory back with shard.ReadDir.
	assign, workers, err := shard.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if workers != 3 || len(assign) != 10 || assign[8] != shard.Broadcast || assign[9] != shard.Broadcast {
		t.Errorf("shard.ReadDir: %v on %d workers, want 10 samples, the last two broadcast, on 3", assign, workers)
	}
}

func TestShardBadInput(t *testing.T) {
	images := shardIDXFile(t, "img", []int{2, 1}, []byte{1, 2})
	labels := shardIDXFile(t, "lab", []int{2}, []byte{0, 1})
	three := shardIDXFile(t, "lab3", []int{3}, []byte{0, 1, 1})
	out := filepath.Join(t.TempDir(), "out")
	tiny := writeFile(t, "tiny.svm", "1 1:1\n2 268435455:1\n") // 20 bytes
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{images, "--labels", labels, "--scheme", "random", "-o", out}, 2, "--machines 0"},
		{[]string{images, "--labels", labels, "--workers", "2", "-o", out}, 2, "--scheme is required"},
		{[]string{images, "--labels", labels, "--workers", "2", "--scheme", "hash", "-o", out}, 2, `scheme "hash"`},
		{[]string{images, "--labels", labels, "--workers", "2", "--scheme", "submodular", "--ratios", "1,2,3", "-o", out}, 2, "ratios: 3 values for 2 workers"},
		{[]string{images, "--labels", labels, "--workers", "2", "--scheme", "submodular", "--ratios", "1,x", "-o", out}, 2, "--ratios"},
		{[]string{images, "--labels", labels, "--workers", "2", "--scheme", "random"}, 2, "-o DIR is required"},
		{[]string{images, "--labels", labels, "--workers", "3", "--scheme", "random", "-o", out}, 1, images + ": workers 3: more workers than the 2 samples"},
		{[]string{tiny, "--workers", "1", "--scheme", "random", "-o", out}, 1, tiny + ":2: feature index 268435455: 2 samples × 268435456 features = 536870912 dense values for 2 index:value pairs, more than 16777216, the larger of 16777216 and 64× the pairs: is this sparse data?"},
		{[]string{images, "--labels", labels, "--workers", "2", "--scheme", "random", "-o", images + "/out"}, 1, "-o: cannot write into " + images + "/out: " + images + " is not a directory"},
		{[]string{images, "--workers", "2", "--scheme", "random", "-o", out}, 1, "needs a label file"},
		{[]string{images, "--labels", three, "--workers", "2", "--scheme", "random", "-o", out}, 1, "has 2 samples (dimensions 2×1) but"},
		{[]string{images, "--labels", labels, "--workers", "2", "--scheme", "random", "--header", "maybe", "-o", out}, 2, "--header"},
	} {
		code, _, errOut := colo(t, append([]string{"shard"}, tt.args...)...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("colo shard %v: exit %d, stderr %q; want exit %d and …%s…", tt.args, code, errOut, tt.code, tt.want)
		}
	}
}

func TestFailedShardLeavesNoSummary(t *testing.T) {
	bad := writeFile(t, "bad.csv", "1,2,0\n3,x,1\n")
	dir := filepath.Join(t.TempDir(), "out")
	code, _, errOut := colo(t, "shard", bad, "--workers", "2", "--scheme", "stratified", "-o", dir)
	if code != 1 || !strings.Contains(errOut, "bad.csv:2: field 2") {
		t.Fatalf("exit %d, stderr %q; want 1 and the file, line and field", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, shard.SummaryFile)); err == nil {
		t.Fatal("summary.json written for a failed run")
	}
}
