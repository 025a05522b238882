package main

import "testing"

// TestFlagNames: the errors of configurations a user filled through flags
// name the flags, not the Go fields or JSON paths, and fields that name
// no flag stay as they were.
func TestFlagNames(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"launch", "--machines", "0"}, "colo launch: launch: --machines 0, at least 1\n"},
		{[]string{"launch", "--batch", "0"}, "colo launch: launch: smoke: --batch 0 out of range [1, --keys = 100000]\n"},
		{[]string{"launch", "--heartbeat", "0"}, "colo launch: launch: --heartbeat 0s, at least 1ms\n"},
		{[]string{"train", "DATA", "--checkpoint", "ck"}, "colo train: train: job: --checkpoint ck without --checkpoint-every: want the rounds between two checkpoints\n"},
		{[]string{"train", "DATA", "--checkpoint-every", "5"}, "colo train: train: job: --checkpoint-every 5 without --checkpoint: want a directory to write to\n"},
		{[]string{"train", "DATA", "--max-steps", "-1"}, "colo train: train: job: --max-steps -1: want 0 (no budget) or a number of steps up to 2^40\n"},
		{[]string{"train", "DATA", "--updater", "x"}, `colo train: train: job: --updater "x" is not sum, sgd, momentum, adagrad, adam or ftrl` + "\n"},
		{[]string{"train", "DATA", "--l1", "-1"}, "colo train: train: job: --l1 -1 must be a finite number ≥ 0\n"},
		{[]string{"train", "DATA", "--lr", "NaN"}, "colo train: train: job: --lr NaN must be a finite number ≥ 0\n"},
		{[]string{"train", "DATA", "--lr", "-1"}, "colo train: train: job: --lr -1 must be a finite number ≥ 0\n"},
		{[]string{"train", "DATA", "--l2", "-2"}, "colo train: train: job: --l2 -2 must be a finite number ≥ 0\n"},
		{[]string{"train", "DATA", "--l2", "+Inf"}, "colo train: train: job: --l2 +Inf must be a finite number ≥ 0\n"},
		{[]string{"train", "DATA", "--consistency", "async", "--async-step", "x"}, `colo train: train: job: --async-step "x" is not none, workers or staleness` + "\n"},
		{[]string{"train", "DATA", "--consistency", "async", "--updater", "ftrl", "--async-step", "workers"}, `colo train: train: job: --async-step "workers" for ftrl: only sgd, momentum, adagrad and adam scale their step (want none)` + "\n"},
		{[]string{"train", "DATA", "--async-step", "workers"}, "colo train: --async-step workers: bsp applies each round's summed pushes in one step (want --consistency async or ssp:τ)\n"},
	} {
		code, _, errOut := colo(t, c.args...)
		if first, _, _ := cutLine(errOut); code != 2 || first != c.want {
			t.Errorf("%q: exit %d, %q\nwant 2, %q", c.args, code, first, c.want)
		}
	}
	f := newFlags(&env{}, "x", "", "")
	f.Int("max-steps", 0, "")
	f.Int("machines", 0, "")
	f.Duration("join-timeout", 0, "")
	for _, c := range []struct{ in, want string }{
		{"MaxSteps -1", "--max-steps -1"},
		{"sched: StartTimeout 0s must be", "sched: --join-timeout 0s must be"},
		{"Machines 0 of a Machines config", "--machines 0 of a Machines config"}, // only a field with its value
		{"config.max_steps 3", "--max-steps 3"},
		{"config.width 3", "config.width 3"}, // no such flag
		{"data.svm: Seed 3", "data.svm: Seed 3"},
	} {
		if got := f.flagNames(c.in); got != c.want {
			t.Errorf("flagNames(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// cutLine splits off the first line, with its newline.
func cutLine(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i+1], s[i+1:], true
		}
	}
	return s, "", false
}
