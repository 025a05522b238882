package cli

import (
	"encoding/json"
	"strings"
	"testing"
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
