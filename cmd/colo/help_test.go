package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestTrainHelpSections: colo train -h lists its flags by section, each
// in one (none under "Other"), in both modes; each mode lists only the
// flags it takes and refuses the other mode's, naming whose they are.
func TestTrainHelpSections(t *testing.T) {
	flagLine := regexp.MustCompile(`^  (--?[a-z0-9-]+)`)
	for _, c := range []struct {
		args      []string
		has, not  []string
		refuse    string
		refusedAs string
	}{
		{[]string{"train"}, []string{"--mode", "--servers", "--checkpoint", "--dashboard", "--consistency"},
			[]string{"--topology", "--local-steps", "--matcha"}, "--topology", "a flag of --mode decentralised"},
		{[]string{"train", "--mode", "decentralised"}, []string{"--mode", "--topology", "--local-steps", "--link-bandwidth", "--labels"},
			[]string{"--servers", "--checkpoint", "--dashboard", "--consistency", "--compare", "--updater", "--rank"}, "--dashboard", "a flag of the parameter server"},
	} {
		var help bytes.Buffer
		run(&env{out: &help, errOut: io.Discard}, append(c.args, "-h"))
		out := help.String()
		if strings.Contains(out, "\nOther:\n") {
			t.Errorf("%q -h: flags in no section:\n%s", c.args, out[strings.Index(out, "\nOther:\n"):])
		}
		for _, s := range []string{"Data:", "Model and training:", "Placement:", "Links:", "Observability:"} {
			if !strings.Contains(out, "\n"+s+"\n") {
				t.Errorf("%q -h: no section %s", c.args, s)
			}
		}
		listed := map[string]bool{}
		for line := range strings.Lines(out) {
			if m := flagLine.FindStringSubmatch(line); m != nil {
				listed[m[1]] = true
			}
		}
		for _, h := range c.has {
			if !listed[h] {
				t.Errorf("%q -h does not list %s", c.args, h)
			}
		}
		for _, n := range c.not {
			if listed[n] {
				t.Errorf("%q -h lists %s, which the mode does not take", c.args, n)
			}
		}
		code, _, errOut := colo(t, append(append(c.args, "data"), c.refuse, "x")...)
		if code != 2 || !strings.Contains(errOut, c.refuse+": "+c.refusedAs) {
			t.Errorf("%q %s: exit %d, %q; want 2 and %q", c.args, c.refuse, code, errOut, c.refusedAs)
		}
		// The hint points to the mode's own -h.
		if hint := "run 'colo " + strings.Join(c.args, " ") + " -h' for usage"; !strings.Contains(errOut, hint) {
			t.Errorf("%q %s: %q, want the hint %q", c.args, c.refuse, errOut, hint)
		}
	}
}
