package main

import (
	"fmt"
	"math/rand/v2"
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
