package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resumeFile writes a seeded sparse binary classification file of 80
// samples; seeds give files of the same shape and other values.
func resumeFile(t *testing.T, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var b strings.Builder
	for range 80 {
		fmt.Fprintf(&b, "%d", rng.IntN(2))
		f := 0
		for range 4 {
			f += 1 + rng.IntN(5)
			fmt.Fprintf(&b, " %d:%.2f", f, 0.5+rng.Float64())
		}
		b.WriteString("\n")
	}
	return writeFile(t, "data.svm", b.String())
}

// TestResumeRefusesChangedSettings: a resume whose settings differ from
// the checkpoint's job in what changes the result (each hyper-parameter,
// the features transform, the seed, the data) or the checkpoint's layout
// (the machines) is refused before the data is loaded, naming the flag
// and both values; --resume-override resumes with a changed rate, never
// with other machines.
func TestResumeRefusesChangedSettings(t *testing.T) {
	data := resumeFile(t, 1)
	dir := t.TempDir()
	base := []string{"train", data, "--machines", "2", "--placement", "random", "--batch", "20", "--max-passes", "4", "--epsilon", "0"}
	if code, _, errOut := colo(t, append(base, "--checkpoint", dir, "--checkpoint-every", "4")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	other := resumeFile(t, 2)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lr", "0.1"}, "--lr: checkpoint 0.5, now 0.1 (--resume-override resumes from it with the new values)"},
		{[]string{"--l2", "0.01"}, "--l2: checkpoint 0, now 0.01 ("},
		{[]string{"--l1", "0.01"}, "--l1: checkpoint 0, now 0.01 ("},
		{[]string{"--features", "l2"}, "--features: checkpoint auto, now l2 ("},
		{[]string{"--seed", "7"}, "--seed: checkpoint 1, now 7 ("},
		{[]string{"--consistency", "async"}, "--consistency: checkpoint bsp, now async ("},
		{[]string{"--updater", "sgd"}, "--updater: checkpoint adagrad, now sgd"},
		{[]string{"--machines", "3"}, "--machines: checkpoint 2, now 3"},
		{[]string{"--machines", "3", "--resume-override"}, "--machines: checkpoint 2, now 3"},
		{[]string{"--batch", "10"}, "--batch: checkpoint 20, now 10"},
		{[]string{"DATA"}, "data: checkpoint crc32c:"},
	} {
		args := append(append([]string(nil), base...), "--resume", dir)
		for _, a := range tc.args {
			if a == "DATA" {
				args[1] = other
				continue
			}
			args = append(args, a)
		}
		code, out, errOut := colo(t, args...)
		if code == 0 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "is a checkpoint of another job") {
			t.Errorf("%v: exit %d, %q; want a refusal naming %q", tc.args, code, errOut, tc.want)
		}
		if out != "" {
			t.Errorf("%v: the data was loaded before the refusal: %q", tc.args, out)
		}
	}
	code, _, errOut := colo(t, append(base, "--resume", dir, "--max-passes", "6", "--lr", "0.1", "--resume-override")...)
	if code != 0 || !strings.Contains(errOut, "resuming with changed settings: --lr: checkpoint 0.5, now 0.1") {
		t.Errorf("--resume-override: exit %d, %q", code, errOut)
	}
	if code, _, errOut := colo(t, append(base, "--resume", dir, "--max-passes", "6")...); code != 0 {
		t.Errorf("the same job: exit %d, %s", code, errOut)
	}
	if code, _, errOut := colo(t, append(base, "--resume-override")...); code != 2 || !strings.Contains(errOut, "--resume-override without --resume") {
		t.Errorf("--resume-override without --resume: exit %d, %s", code, errOut)
	}
}

// TestPlacementOfOtherData: a placement directory made by colo partition
// from one file is refused for another of the same number of samples,
// before the data is loaded, naming both checksums; a directory written
// before the checksum was recorded is used with a warning; and the same
// for a colo shard directory and a dense model.
func TestPlacementOfOtherData(t *testing.T) {
	a, b := resumeFile(t, 1), resumeFile(t, 2)
	dir := filepath.Join(t.TempDir(), "place")
	if code, _, errOut := colo(t, "partition", a, "--k", "2", "--algo", "random", "-o", dir); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, errOut)
	}
	train := []string{"train", b, "--machines", "2", "--placement", dir, "--max-passes", "2"}
	code, out, errOut := colo(t, train...)
	if code == 0 || !strings.Contains(errOut, "summary.json: made from other data: data_checksum crc32c:") || !strings.Contains(errOut, b+" is crc32c:") || out != "" {
		t.Errorf("another dataset's placement: exit %d, %q, %q", code, out, errOut)
	}
	train[1] = a
	if code, _, errOut := colo(t, train...); code != 0 || strings.Contains(errOut, "data_checksum") {
		t.Errorf("the dataset's own placement: exit %d, %s", code, errOut)
	}
	stripChecksum(t, filepath.Join(dir, "summary.json"))
	train[1] = b
	if code, _, errOut := colo(t, train...); code != 0 || !strings.Contains(errOut, "records no data_checksum (written by an earlier colo): not checked against "+b) {
		t.Errorf("a placement without a checksum: exit %d, %s", code, errOut)
	}

	csv := blobsCSV(t, 90)
	text, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	other := writeFile(t, "other.csv", strings.Replace(string(text), "0.", "1.", 7))
	shards := filepath.Join(t.TempDir(), "shards")
	if code, _, errOut := colo(t, "shard", csv, "--workers", "2", "--scheme", "stratified", "-o", shards); code != 0 {
		t.Fatalf("shard: exit %d: %s", code, errOut)
	}
	dense := []string{"train", other, "--app", "mlp", "--hidden", "4", "--machines", "2", "--placement", shards, "--epochs", "1"}
	if code, out, errOut := colo(t, dense...); code == 0 || !strings.Contains(errOut, "made from other data") || out != "" {
		t.Errorf("another dataset's shards: exit %d, %q, %q", code, out, errOut)
	}
	dense[1] = csv
	if code, _, errOut := colo(t, dense...); code != 0 {
		t.Errorf("the dataset's own shards: exit %d, %s", code, errOut)
	}
}

// stripChecksum removes data_checksum from a summary, as an earlier
// version wrote it.
func stripChecksum(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "data_checksum")
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
