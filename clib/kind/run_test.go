package kind

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"colo/clib"
	"colo/ps/update"
)

// TestRunValidate checks that colo run's flags fill the job and that bad
// ones are refused, naming the flag.
func TestRunValidate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "param.part"), []byte("0 1\n1 0\n2 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (Run, error) {
		r := DefaultRun()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		r.Register(fs)
		if err := fs.Parse(args); err != nil {
			return r, err
		}
		r.Program = fs.Args()
		return r, r.Validate()
	}
	r, err := parse("--machines", "2", "--rule", "adagrad", "--lr", "0.5", "--placement", dir, "--", "python3", "train.py")
	if err != nil {
		t.Fatal(err)
	}
	j, err := r.job()
	if err != nil {
		t.Fatal(err)
	}
	if j.Machines != 2 || j.Servers != 0 || j.Rule.Name != "adagrad" || j.Rule.Eps != 1e-10 || len(j.Route) == 0 || j.Consistency != "bsp" {
		t.Errorf("job %+v", j)
	}
	if got := r.schedulerFlags("scheduler"); len(got) != 0 {
		t.Errorf("scheduler flags without --dashboard: %q", got)
	}
	if r, err = parse("--machines", "2", "--dashboard", ":8080", "--metrics-file", "m.prom", "--linger", "2s", "--", "p"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(r.schedulerFlags("scheduler"), " "), "--dashboard :8080 --metrics-file m.prom --linger 2s"; got != want || len(r.schedulerFlags("machine 0")) != 0 {
		t.Errorf("scheduler flags %q, want %q, and none for a machine", got, want)
	}
	if r, err = parse("--machines", "3", "--servers", "2", "--", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := parse("--machines", "2048", "--servers", "2048", "--", "p"); err != nil {
		t.Errorf("as many processes as one host runs (launch.MaxProcesses): %v", err)
	}
	if j, _ = r.job(); j.Servers != 2 || j.Workers != 3 || j.Machines != 0 {
		t.Errorf("apart: %+v", j)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "p"}, "--machines 0"},
		{[]string{"--machines", "2"}, "no PROGRAM"},
		{[]string{"--machines", "2", "--servers", "-1", "--", "p"}, "--servers -1"},
		{[]string{"--machines", "2", "--timeout", "100ms", "--", "p"}, "--timeout 100ms"},
		{[]string{"--machines", "2", "--join-timeout", "1ms", "--", "p"}, "--join-timeout 1ms"},
		{[]string{"--machines", "2", "--netns", "--", "p"}, "--netns needs --link-bandwidth"},
		// tc would be given 0bit: refused, as colo train --netns refuses it.
		{[]string{"--machines", "2", "--netns", "--link-bandwidth", "0", "--", "p"}, "--link-bandwidth 0: --netns needs a rate above 0"},
		{[]string{"--machines", "2", "--netns", "--link-bandwidth", "unlimited", "--", "p"}, "--link-bandwidth unlimited: --netns needs a rate above 0"},
		{[]string{"--machines", "2", "--netns", "--link-bandwidth", "inf", "--servers", "1", "--", "p"}, "--link-bandwidth inf: --netns needs a rate above 0"},
		{[]string{"--machines", "2", "--netns", "--link-bandwidth", "0mbit", "--", "p"}, `--link-bandwidth, --bandwidth-matrix: link bandwidth: rate "0mbit" is zero`},
		{[]string{"--machines", "2", "--netns", "--link-bandwidth", "1gbit", "--dashboard", ":8080", "--", "p"}, "use --metrics-file"},
		{[]string{"--machines", "2", "--netns", "--bandwidth-matrix", "m.txt", "--", "p"}, "not --bandwidth-matrix"},
		{[]string{"--machines", "2", "--link-bandwidth", "fast", "--", "p"}, "--link-bandwidth"},
		{[]string{"--machines", "2", "--consistency", "eventual", "--", "p"}, "--consistency"},
		{[]string{"--machines", "2", "--rule", "ftrl", "--", "p"}, "ftrl"},
		{[]string{"--machines", "2", "--placement", filepath.Join(dir, "none"), "--", "p"}, "--placement"},
		{[]string{"--machines", "1", "--placement", dir, "--", "p"}, "--placement"}, // machine 1 of 1
		{[]string{"--machines", "100000", "--", "p"}, "--machines 100000: 100000 processes on this host, at most 4096 (launch.MaxProcesses)"},
		{[]string{"--machines", "4097", "--placement", filepath.Join(dir, "none"), "--", "p"}, "--machines 4097: 4097 processes"}, // before the placement is read
		{[]string{"--machines", "3000", "--servers", "3000", "--", "p"}, "--machines 3000 and --servers 3000: 6000 processes on this host, at most 4096"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
}

// TestPrefixed checks that lines written in pieces come out whole, each
// after its writer's prefix, and that flush writes a last partial line.
func TestPrefixed(t *testing.T) {
	var out strings.Builder
	var mu sync.Mutex
	a := &prefixed{mu: &mu, w: &out, prefix: "[worker 0] "}
	b := &prefixed{mu: &mu, w: &out, prefix: "[worker 1] "}
	a.Write([]byte("epoch 1 "))
	b.Write([]byte("x\ny\nz"))
	a.Write([]byte("done\nTraceback"))
	a.flush()
	b.flush()
	b.flush()
	want := "[worker 1] x\n[worker 1] y\n[worker 0] epoch 1 done\n[worker 0] Traceback\n[worker 1] z\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// TestPrefixedProgressAndLongLines: a progress bar's carriage returns
// end its updates, kept; a run without a line end is written out at
// maxLine bytes, not held whole.
func TestPrefixedProgressAndLongLines(t *testing.T) {
	var out bytes.Buffer
	p := &prefixed{mu: new(sync.Mutex), w: &out, prefix: "[worker 1] "}
	for _, s := range []string{"loss 0.5", "\nloss 0.4\n", " 10%\r 20%\r", "100%\n", "tail"} {
		p.Write([]byte(s))
	}
	p.flush()
	want := "[worker 1] loss 0.5\n[worker 1] loss 0.4\n[worker 1]  10%\r[worker 1]  20%\r[worker 1] 100%\n[worker 1] tail\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
	out.Reset()
	p.Write(bytes.Repeat([]byte("x"), 2*maxLine+3))
	if got := strings.Count(out.String(), "[worker 1] "); got != 2 || len(p.rest) != 3 {
		t.Errorf("a run of 2·maxLine+3 bytes: %d lines written, %d bytes held", got, len(p.rest))
	}
}

// TestRunFlagsParse checks that the flags clib.RunFlags tells a program's
// user to start colo run with (a program that expects another rule than
// its servers') are colo run's: parsed, they make the servers run the
// rule the program expects.
func TestRunFlagsParse(t *testing.T) {
	for _, set := range []func(*update.Config){
		func(c *update.Config) { c.Name, c.LR = "sgd", 0.25 },
		func(c *update.Config) { c.Name, c.LR, c.Eps = "adagrad", 0.5, 1e-6 },
		func(c *update.Config) { c.Name, c.LR, c.Momentum = "momentum", 0.05, 0.5 },
		func(c *update.Config) { c.Name, c.LR, c.Beta1, c.Beta2, c.Eps = "adam", 0.001, 0.8, 0.99, 1e-7 },
	} {
		want := DefaultRun().Job.Rule
		set(&want)
		r := DefaultRun()
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		r.Register(fs)
		flags, ok := clib.RunFlags(want)
		if !ok {
			t.Fatalf("RunFlags(%+v) not ok", want)
		}
		args := strings.Fields(flags)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if r.Job.Rule != want {
			t.Errorf("%s: the servers run %+v, want %+v", args, r.Job.Rule, want)
		}
	}
}
