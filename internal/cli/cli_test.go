package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStamp(t *testing.T) {
	rec := Record{Build: Build{Version: "v1.2.3", Go: "go1"}, Command: "colo x", Args: []string{"f"}, Options: map[string]string{"seed": "1"}}
	for _, c := range []struct {
		v    any
		want string
	}{
		{map[string]int{"a": 1}, `{"version":"v1.2.3","go":"go1","command":"colo x","args":["f"],"options":{"seed":"1"},"a":1}`},
		{struct{}{}, `{"version":"v1.2.3","go":"go1","command":"colo x","args":["f"],"options":{"seed":"1"}}`},
		{[]int{1, 2}, `{"version":"v1.2.3","go":"go1","command":"colo x","args":["f"],"options":{"seed":"1"},"results":[1,2]}`},
	} {
		b, err := Stamp(rec, c.v)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		json.Unmarshal(b, &got)
		json.Unmarshal([]byte(c.want), &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("stamp(%v) = %s, want %s", c.v, b, c.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"train", "stats", "partition", "eval", "gen"}
	for _, c := range []struct{ in, want string }{
		{"trian", "train"}, {"stat", "stats"}, {"partitoin", "partition"}, {"evl", "eval"}, {"xyz", ""}, {"node", ""},
	} {
		if got := Suggest(c.in, names); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if d := Levenshtein("kitten", "sitting"); d != 3 {
		t.Errorf("Levenshtein(kitten, sitting) = %d, want 3", d)
	}
}

func TestSuggestWords(t *testing.T) {
	names := []string{"max-passes", "max-steps", "link-bandwidth", "bandwidth-matrix", "bandwidth-random", "bandwidth-change", "lr", "lr-decay", "lr-scaling", "checkpoint", "checkpoint-every", "checkpoint-wait", "checkpoint-durable", "checkpoint-incremental", "checkpoint-keep"}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"passes", []string{"max-passes"}},
		{"PASSES", []string{"max-passes"}},
		{"steps", []string{"max-steps"}},
		{"bandwidth", []string{"bandwidth-change", "bandwidth-matrix", "bandwidth-random", "link-bandwidth"}},
		{"decay", []string{"lr-decay"}},
		{"every", []string{"checkpoint-every"}},
		{"checkpoint", nil}, // five flags: a list, not a suggestion
		{"lr", nil},         // too short to be a word of a name
		{"pass", nil},       // a part of a word is not one
		{"max", []string{"max-passes", "max-steps"}},
		{"scaling-lr", nil},
	} {
		if got := SuggestWords(c.in, names); !slices.Equal(got, c.want) {
			t.Errorf("SuggestWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDidYouMeanWords checks the error of a flag typed by a word of its
// name: the flag named as -h lists it, or the few that have the word.
func TestDidYouMeanWords(t *testing.T) {
	f := New("train", "colo train DATA", "")
	f.Int("max-passes", -1, "")
	f.Int("machines", 4, "")
	f.Alias("workers", "machines")
	f.String("link-bandwidth", "", "")
	f.String("bandwidth-matrix", "", "")
	for _, c := range []struct{ arg, want string }{
		{"--passes", "flag provided but not defined: -passes (did you mean --max-passes?)"},
		{"--bandwidth", "flag provided but not defined: -bandwidth (did you mean one of --bandwidth-matrix, --link-bandwidth?)"},
		{"--worker", "flag provided but not defined: -worker (did you mean --machines?)"},
		{"--frobnicate", "flag provided but not defined: -frobnicate"},
	} {
		_, err := f.Split([]string{c.arg, "1"})
		if err == nil {
			t.Fatalf("%s: no error", c.arg)
		}
		if got := f.DidYouMean(err).Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.arg, got, c.want)
		}
	}
}

// TestPrintDefaults checks that -h writes a default as the flag package
// does: strings quoted, numbers and durations as typed, zeros left out.
func TestPrintDefaults(t *testing.T) {
	f := New("x", "colo x", "")
	f.Int("machines", 4, "machines")
	f.Int("index-base", -1, "base")
	f.Float64("eps", 1e-10, "epsilon")
	f.Duration("timeout", 30*time.Second, "timeout")
	f.String("consistency", "bsp", "model")
	f.String("features", "4", "a string that looks like a number")
	f.Int("threads", 0, "threads")
	var b strings.Builder
	f.PrintFlags(&b)
	for _, want := range []string{"machines (default 4)\n", "base (default -1)\n", "epsilon (default 1e-10)\n", "timeout (default 30s)\n",
		"model (default \"bsp\")\n", "number (default \"4\")\n", "threads\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCheckArgs checks the count of positional arguments, and that an
// argument too many after --json is named as --json's file.
func TestCheckArgs(t *testing.T) {
	f := New("train", "colo train DATA", "")
	f.JSONOption("the summary")
	f.Int("machines", 4, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"data.svm"}, ""},
		{nil, "expected one file argument, got 0 argument(s)"},
		{[]string{"data.svm", "other"}, "expected one file argument, got 2: data.svm other"},
		{[]string{"data.svm", "--json", "out"}, "expected one file argument, got 2: data.svm out (for --json's file write --json=out)"},
		{[]string{"--json", "/dev/null", "data.svm"}, "expected one file argument, got 2: /dev/null data.svm (for --json's file write --json=/dev/null)"},
		{[]string{"data.svm", "--json", "out.json"}, ""}, // a .json file may follow after a space
		{[]string{"data.svm", "--json", "--machines", "2", "x"}, "expected one file argument, got 2: data.svm x"},
		{[]string{"data.svm", "--", "--json", "x"}, "expected one file argument, got 3: data.svm --json x"},
	} {
		pos, err := f.Split(c.args)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		err = f.CheckArgs(c.args, pos, 1, 1)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestSplitProgram: with Program, the first positional argument starts
// another program's command line, whose flags are its own (those it
// shares with the command's too); without, flags may follow the files.
func TestSplitProgram(t *testing.T) {
	for _, program := range []bool{true, false} {
		f := New("run", "colo run [flags] -- PROGRAM [ARGS]", "")
		lr := f.Float64("lr", 0.1, "")
		f.Int("machines", 0, "")
		f.Program = program
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"--machines", "2", "python3", "train.py", "--lr", "0.5", "--epochs", "3"}, []string{"python3", "train.py", "--lr", "0.5", "--epochs", "3"}},
			{[]string{"--machines", "2", "--", "python3", "train.py", "--lr", "0.5"}, []string{"python3", "train.py", "--lr", "0.5"}},
		} {
			*lr = 0.1
			pos, err := f.Split(c.args)
			if !program {
				if c.args[2] != "--" && (err == nil || err.Error() != "flag provided but not defined: -epochs") {
					t.Errorf("without Program %q: %q, %v; want --epochs refused", c.args, pos, err)
				}
				continue
			}
			if err != nil || !slices.Equal(pos, c.want) || *lr != 0.1 {
				t.Errorf("%q: %q, %v, --lr %v; want %q, the command's --lr untouched", c.args, pos, err, *lr, c.want)
			}
		}
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{"MaxSteps": "max-steps", "L1": "l1", "Machines": "machines", "TLSCert": "tls-cert", "LinkBandwidth": "link-bandwidth"} {
		if got := Kebab(in); got != want {
			t.Errorf("Kebab(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestEnum(t *testing.T) {
	type mode string
	var m mode = "a"
	e := NewEnum(&m, []mode{"a", "b"})
	if err := e.Set("b"); err != nil || m != "b" || e.String() != "b" {
		t.Errorf("Set(b): %v, %q", err, m)
	}
	if err := e.Set("c"); err == nil || err.Error() != "want one of a, b" || m != "b" {
		t.Errorf("Set(c): %v, %q; want refused naming a, b", err, m)
	}
}

func TestScript(t *testing.T) {
	bash, ok := Script("bash")
	if !ok || !strings.Contains(bash, "colo __complete") || !strings.Contains(bash, "complete -o filenames -F _colo colo") {
		t.Errorf("bash script %q", bash)
	}
	if zsh, ok := Script("zsh"); !ok || zsh != "autoload -U +X bashcompinit && bashcompinit\n"+bash {
		t.Errorf("zsh script %q: want bash's behind bashcompinit", zsh)
	}
	if fish, ok := Script("fish"); !ok || !strings.Contains(fish, "colo __complete") {
		t.Errorf("fish script %q", fish)
	}
	if _, ok := Script("ksh"); ok {
		t.Error("ksh: a script")
	}
}
