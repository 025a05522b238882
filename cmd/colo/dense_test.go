package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// blobsCSV writes a CSV of n labelled samples of three classes, the label
// last, and returns its path.
func blobsCSV(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,c,d,e,f,g,h,label\n")
	for i := range n {
		c := i % 3
		for j := range 8 {
			fmt.Fprintf(&b, "%.2f,", float64(c*(j%3))+float64((i*7+j*5)%10)/10)
		}
		fmt.Fprintf(&b, "%d\n", c)
	}
	return writeFile(t, "blobs.csv", b.String())
}

// TestTrainDense trains an mlp on a CSV whose label is the last column,
// on three machines with stratified shards (BSP: deterministic).
func TestTrainDense(t *testing.T) {
	data := blobsCSV(t, 300)
	out := filepath.Join(t.TempDir(), "run.json")
	code, stdout, errOut := colo(t, "train", data, "--app", "mlp", "--label-col", "-1", "--hidden", "16", "--machines", "3",
		"--epochs", "3", "--batch", "30", "--placement", "stratified", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r, fields := readResult(t, out)
	if r.App != "mlp" || r.Passes != 3 || r.Accuracy == nil || *r.Accuracy < 0.8 || len(r.ClassAccuracy) != 3 {
		t.Errorf("result %+v\n%s", r, stdout)
	}
	for _, f := range []string{"test_accuracy", "final_train_loss", "train_seconds", "total_seconds", "test_class_accuracy", "rounds_detail", "samples_per_s", "staleness"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("no %s in the summary", f)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--app", "resnet"}, "resnet"},
		{[]string{"--app", "cnn", "--label-col", "-1"}, "too small"},
		{[]string{"--app", "mlp", "--label-col", "-1", "--machines", "4", "--batch", "3"}, "batch 3 is smaller than the 4 machines"},
		{[]string{"--app", "mlp", "--label-col", "-1", "--l2", "0.1"}, "l2"},
		{[]string{"--app", "mlp", "--label-col", "-1", "--lr", "1e6", "--epochs", "2"}, "NaN"},
	} {
		code, _, errOut := colo(t, append([]string{"train", data}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchSharding runs a small study and checks its files.
func TestBenchSharding(t *testing.T) {
	data := blobsCSV(t, 240)
	dir := filepath.Join(t.TempDir(), "study")
	code, stdout, errOut := colo(t, "bench", "sharding", data, "--label-col", "-1", "--hidden", "8", "--machines", "3", "--epochs", "1",
		"--batch", "30", "--runs", "2", "--schemes", "random,stratified", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "stratified") || !strings.Contains(errOut, "random run 2/2") {
		t.Errorf("stdout %q, stderr %q", stdout, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sharding.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Machines    int
		Consistency string
		Runs        []json.RawMessage
		Table       []json.RawMessage
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Machines != 3 || res.Consistency != "async" || len(res.Runs) != 4 || len(res.Table) != 2 {
		t.Errorf("sharding.json: %+v %v", res, err)
	}
	for _, f := range []string{"sharding.csv", "runs.csv", "validation_accuracy.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestCSVLabelColumn: a CSV with a header and no --label-col takes the
// column named label and says so; a header that names no label column is
// refused, listing its columns, and --label-col chooses one.
func TestCSVLabelColumn(t *testing.T) {
	data := blobsCSV(t, 120)
	args := []string{"train", data, "--app", "mlp", "--hidden", "8", "--machines", "2", "--epochs", "1", "--batch", "30"}
	code, stdout, errOut := colo(t, args...)
	if code != 0 || !strings.Contains(stdout, `120 samples × 8 features, 3 classes, labels from column 8 "label"`) {
		t.Errorf("header with a label column: exit %d, %q, %s", code, stdout, errOut)
	}
	text, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	unnamed := writeFile(t, "unnamed.csv", strings.Replace(string(text), "label\n", "kind\n", 1))
	args[1] = unnamed
	code, _, errOut = colo(t, args...)
	want := `unnamed.csv:1: the header names no label column (label, class, target, y): name it with --label-col, by name or number; the columns are 0 "a", 1 "b",`
	if code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, `8 "kind"`) {
		t.Errorf("header without a label column: exit %d, %s; want %s", code, errOut, want)
	}
	code, stdout, errOut = colo(t, append(args, "--label-col", "kind")...)
	if code != 0 || !strings.Contains(stdout, `labels from column 8 "kind"`) {
		t.Errorf("--label-col kind: exit %d, %q, %s", code, stdout, errOut)
	}
}

// TestDiagnosisShuffledLabels: a table whose labels were shuffled
// trains to chance, which colo train says on the terminal and in the
// JSON; the table with its labels gets no diagnosis.
func TestDiagnosisShuffledLabels(t *testing.T) {
	text, err := os.ReadFile(blobsCSV(t, 400))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	shuffled := []string{lines[0]}
	for i, line := range lines[1:] {
		// Each sample takes the label of sample (7i + 13) mod 400.
		other := lines[1+(i*7+13)%400]
		shuffled = append(shuffled, line[:strings.LastIndexByte(line, ',')]+other[strings.LastIndexByte(other, ','):])
	}
	for _, tc := range []struct {
		name  string
		lines []string
	}{{"labelled", lines}, {"shuffled", shuffled}} {
		tr := writeFile(t, "train.csv", strings.Join(tc.lines[:301], "\n")+"\n")
		te := writeFile(t, "test.csv", tc.lines[0]+"\n"+strings.Join(tc.lines[301:], "\n")+"\n")
		out := filepath.Join(t.TempDir(), "run.json")
		code, _, errOut := colo(t, "train", tr, "--test", te, "--app", "mlp", "--hidden", "16", "--machines", "2", "--epochs", "4", "--batch", "30", "--json", out)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, errOut)
		}
		var r struct {
			Diagnosis string  `json:"diagnosis"`
			Accuracy  float64 `json:"test_accuracy"`
		}
		b, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, b)
		}
		warned := strings.Contains(errOut, "colo train: warning: random: the training went nowhere: ")
		if tc.name == "labelled" && (r.Diagnosis != "" || warned) {
			t.Errorf("labelled: accuracy %.3f, diagnosed %q", r.Accuracy, errOut)
		}
		if tc.name == "shuffled" && (!strings.Contains(r.Diagnosis, "accuracy") || !strings.Contains(r.Diagnosis, "is at chance") || !warned) {
			t.Errorf("shuffled: accuracy %.3f, diagnosis %q, stderr %q", r.Accuracy, r.Diagnosis, errOut)
		}
	}
}
