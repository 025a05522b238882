package train_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"colo/train"
)

func TestParseEvery(t *testing.T) {
	for _, c := range []struct {
		in   string
		want train.Every
		err  string
	}{
		{"0", train.Every{}, ""},
		{"2", train.Every{Epochs: 2}, ""},
		{"500steps", train.Every{Steps: 500}, ""},
		{"1step", train.Every{Steps: 1}, ""},
		{"30s", train.Every{Interval: 30 * time.Second}, ""},
		{"1m30s", train.Every{Interval: 90 * time.Second}, ""},
		{"-1", train.Every{}, "want 0 (never) or a number of epochs"},
		{"0steps", train.Every{}, "positive number of steps"},
		{"xsteps", train.Every{}, "positive number of steps"},
		{"-3s", train.Every{}, "positive duration"},
		{"often", train.Every{}, `eval every "often": want a number of epochs (2), of steps (500steps) or a positive duration (30s)`},
	} {
		got, err := train.ParseEvery(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := train.ParseEvery(got.String()); err != nil || back != got {
			t.Errorf("%q: %q reads back as %+v, %v", c.in, got.String(), back, err)
		}
	}
}

// TestEveryJSON: a job file gives eval_every as text or, as older job
// files do, a number of epochs; it is written as text and left out when
// zero.
func TestEveryJSON(t *testing.T) {
	for in, want := range map[string]train.Every{
		`{"eval_every": 3}`:          {Epochs: 3},
		`{"eval_every": "3"}`:        {Epochs: 3},
		`{"eval_every": "200steps"}`: {Steps: 200},
		`{"eval_every": "2s"}`:       {Interval: 2 * time.Second},
	} {
		var c train.Config
		if err := json.Unmarshal([]byte(in), &c); err != nil || c.EvalEvery != want {
			t.Errorf("%s: %+v, %v", in, c.EvalEvery, err)
		}
		b, _ := json.Marshal(c)
		if !strings.Contains(string(b), `"eval_every":"`+want.String()+`"`) {
			t.Errorf("%s written as %s", in, b)
		}
	}
	var c train.Config
	if err := json.Unmarshal([]byte(`{"eval_every": "sometimes"}`), &c); err == nil {
		t.Error("eval_every sometimes accepted")
	}
	if b, _ := json.Marshal(train.Config{}); strings.Contains(string(b), "eval_every") {
		t.Errorf("zero eval_every written: %s", b)
	}
}

// FuzzParseEvery: any text is read or refused without a panic, and what
// is read is written back to the same value.
func FuzzParseEvery(f *testing.F) {
	for _, s := range []string{"0", "2", "500steps", "30s", "1h2m", "x", "-1steps", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := train.ParseEvery(s)
		if err != nil {
			return
		}
		back, err := train.ParseEvery(e.String())
		if err != nil || back != e {
			t.Fatalf("%q: %+v written %q reads back %+v, %v", s, e, e.String(), back, err)
		}
	})
}
