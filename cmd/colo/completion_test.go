package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"colo/internal/cli"
)

// TestCompleteCandidates: command names, each command's own flags (its
// --json where it has one, never the hidden older spellings), the
// benchmarks, the values of a flag with a fixed set, and nothing where a
// file is expected.
func TestCompleteCandidates(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  []string // exactly these lines
		has   []string // at least these lines
		not   []string // none of these lines
	}{
		{words: []string{"tr"}, want: []string{"train"}},
		{words: []string{"c"}, want: []string{"completion", "convert"}},
		{words: []string{"help", "par"}, want: []string{"partition"}},
		{words: []string{"train", "--ap"}, want: []string{"--app"}},
		{words: []string{"train", "--mode", "decentralised", "--top"}, want: []string{"--topology"}},
		{words: []string{"partition", "--param-algo", ""}, want: []string{"minmax", "parsa"}},
		{words: []string{"partition", "--init", "g"}, want: []string{"global"}},
		{words: []string{"partition", "-o", ""}, want: nil},       // a directory: the shell's file names
		{words: []string{"partition", "data.svm", ""}, want: nil}, // a file
		{words: []string{"partition", "--machines", "4", "--"}, has: []string{"--machines", "--json", "--algo"}, not: []string{"--k", "-k", "--workers"}},
		{words: []string{"bench", ""}, want: []string{"balance", "kv", "partition", "rcd", "sharding"}},
		{words: []string{"bench", "kv", "--d"}, want: []string{"--dense-values", "--duration"}},
		{words: []string{"completion", ""}, want: []string{"bash", "fish", "zsh"}},
	} {
		code, out, errOut := colo(t, append([]string{"__complete"}, c.words...)...)
		if code != 0 || errOut != "" {
			t.Errorf("%q: exit %d, %s", c.words, code, errOut)
		}
		lines := strings.Fields(out)
		if c.has == nil && c.not == nil && !slices.Equal(lines, c.want) {
			t.Errorf("%q: %q, want %q", c.words, lines, c.want)
		}
		for _, h := range c.has {
			if !slices.Contains(lines, h) {
				t.Errorf("%q: %q lacks %s", c.words, lines, h)
			}
		}
		for _, n := range c.not {
			if slices.Contains(lines, n) {
				t.Errorf("%q: %q offers the hidden %s", c.words, lines, n)
			}
		}
	}
	// Every command lists its flags, without running (completion has
	// none).
	for _, cmd := range commands() {
		if cmd.name == "completion" {
			continue
		}
		words := []string{cmd.name, "--"}
		if cmd.name == "bench" {
			words = []string{"bench", "partition", "--"}
		}
		code, out, _ := colo(t, append([]string{"__complete"}, words...)...)
		if code != 0 || !strings.HasPrefix(out, "--") {
			t.Errorf("colo __complete %s: exit %d, %q", strings.Join(words, " "), code, out)
		}
	}
}

// TestBashCompletion sources the bash script and completes as bash would,
// with the test binary's colo on the PATH.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	code, script, _ := colo(t, "completion", "bash")
	if code != 0 {
		t.Fatal("colo completion bash failed")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "colo.bash")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.svm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string // COMP_WORDS, the last being completed
		want string
	}{
		{"colo part", "partition"},
		{"colo train --max-p", "--max-passes"},
		{"colo partition da", "data.svm"},
		{"colo bench k", "kv"},
	} {
		words := strings.Fields(c.line)
		sh := "source " + path + "; cd " + dir + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "; _colo; echo \"${COMPREPLY[@]}\""
		cmd := exec.Command(bash, "-c", sh)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(coloBin)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s: completes %q, want %q", c.line, got, c.want)
		}
	}
}

// TestFlagChoices: the flags with a fixed set of values complete to it
// (the issue's --app, --algo, --placement, --consistency, --role,
// --scheme and --mode among them), and every value offered is one that
// the flag's own help names, so the table cannot drift from the flags.
func TestFlagChoices(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"train", "--app", ""}, "cnn ctr embed lr mf mlp"},
		{[]string{"partition", "--algo", "ts"}, "tsh tsh1 tsh2"},
		{[]string{"train", "--placement", "r"}, "random random-rows rmax roundrobin"},
		{[]string{"train", "--consistency", ""}, "async bsp ssp:"},
		{[]string{"launch", "--consistency", ""}, "async bounded bsp"},
		{[]string{"node", "--role", ""}, "evaluator machine scheduler server worker"},
		{[]string{"shard", "--scheme", "s"}, "stratified submodular"},
		{[]string{"train", "--mode", ""}, "decentralised ps"},
		{[]string{"train", "--mode", "decentralised", "--topology", ""}, "complete exponential ring torus"},
		{[]string{"node", "--placement", ""}, ""}, // a directory
		{[]string{"bench", "rcd", "--placement", ""}, "distaware random roundrobin stratified submodular"},
	} {
		_, out, _ := colo(t, append([]string{"__complete"}, c.words...)...)
		if got := strings.Join(strings.Fields(out), " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.words, got, c.want)
		}
	}
	// Every value offered is named in the flag's help.
	for _, args := range [][]string{{"stats"}, {"partition"}, {"eval"}, {"convert"}, {"shard"}, {"train"}, {"train", "--mode", "decentralised"},
		{"node"}, {"launch"}, {"bench", "partition"}, {"bench", "rcd"}, {"bench", "sharding"}, {"bench", "balance"}} {
		checkChoicesInHelp(t, args)
	}
}

// checkChoicesInHelp checks that each value cli.Choices offers for a
// flag of the command args is a word of that flag's help.
func checkChoicesInHelp(t *testing.T, args []string) {
	t.Helper()
	var help bytes.Buffer
	run(&env{out: &help, errOut: io.Discard}, append(slices.Clone(args), "-h"))
	name := strings.Join(args, " ")
	if args[0] == "train" && len(args) > 1 {
		name = "train --mode decentralised"
	}
	flagRe := regexp.MustCompile(`^  --?([a-z0-9-]+)`)
	var flag string
	usage := map[string]string{}
	for line := range strings.Lines(help.String()) {
		if m := flagRe.FindStringSubmatch(line); m != nil {
			flag = m[1]
			continue
		}
		if flag != "" {
			usage[flag] += line
		}
	}
	if len(usage) == 0 {
		t.Fatalf("%s -h: no flags in %q", name, help.String())
	}
	for fl, text := range usage {
		for _, v := range cli.Choices(name, fl) {
			if !regexp.MustCompile(`(^|[^a-z0-9-])` + regexp.QuoteMeta(v)).MatchString(text) {
				t.Errorf("%s --%s offers %q, which its help does not name: %s", name, fl, v, text)
			}
		}
	}
}
