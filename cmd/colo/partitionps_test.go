package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/placement"
)

// TestPartitionProcesses runs Parsa on the parameter server as processes:
// one machine gives the sequential placement (τ = 0) file for file, and
// two machines under BSP give the same placement as processes and in
// process.
func TestPartitionProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "g.svm")
	if out, err := exec.Command(coloBin, "gen", "powerlaw", "-n", "4000", "--seed", "5", "-o", data).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	run := func(out string, extra ...string) {
		t.Helper()
		args := append([]string{"partition", "-k", "5", "--seed", "3", "--init", "global", "--blocks", "6", data, "-o", filepath.Join(dir, out)}, extra...)
		if b, err := exec.Command(coloBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, b)
		}
	}
	run("seq", "--tau", "0")
	run("p1", "--processes", "1")
	run("p2", "--processes", "2")
	run("i2", "--ps-workers", "2")
	same := func(a, b string) {
		t.Helper()
		for _, f := range []string{placement.DataPartFile, placement.ParamPartFile} {
			x, err := os.ReadFile(filepath.Join(dir, a, f))
			if err != nil {
				t.Fatal(err)
			}
			y, err := os.ReadFile(filepath.Join(dir, b, f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(x, y) {
				t.Errorf("%s/%s differs from %s/%s", a, f, b, f)
			}
		}
	}
	same("seq", "p1")
	same("p2", "i2")
	if _, err := os.Stat(filepath.Join(dir, "p2", placement.SummaryFile)); err != nil {
		t.Error(err)
	}
}

// TestPartitionProcessesDeadWorker kills machine 1 of a distributed
// partition job: the job fails naming it and leaves no summary.json.
func TestPartitionProcessesDeadWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "g.svm")
	if out, err := exec.Command(coloBin, "gen", "powerlaw", "-n", "100000", "--seed", "5", "-o", data).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, coloBin, "partition", "-k", "4", "--blocks", "40", "--processes", "2", data, "-o", out)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	for !killed && ctx.Err() == nil {
		if pid := nodePID(cmd.Process.Pid, "machine", 1); pid > 0 {
			time.Sleep(50 * time.Millisecond)
			killed = syscall.Kill(pid, syscall.SIGKILL) == nil
		}
		time.Sleep(time.Millisecond)
	}
	err := cmd.Wait()
	if !killed {
		t.Fatal("machine 1 never ran")
	}
	if err == nil {
		t.Fatalf("the job succeeded with machine 1 killed")
	}
	if !strings.Contains(errOut.String(), "machine 1") {
		t.Errorf("the error does not name machine 1:\n%s", errOut.String())
	}
	if _, err := os.Stat(filepath.Join(out, placement.SummaryFile)); err == nil {
		t.Errorf("%s written by a failed job", placement.SummaryFile)
	}
	t.Log(lastLine(errOut.String()))
}

// TestPartitionProcessesUsage checks the refusals of the distributed
// partition job's flags.
func TestPartitionProcessesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "--role", "worker", "--job", "parsa", "--scheduler", "127.0.0.1:1"}, "--job parsa runs on --role machine"},
		{[]string{"node", "--role", "machine", "--job", "parsa", "--scheduler", "127.0.0.1:1"}, "--job parsa needs --job-file"},
		{[]string{"partition", "-k", "2", "--processes", "2", "--algo", "random", "x.svm", "-o", t.TempDir()}, "run parsa, not random"},
		{[]string{"partition", "-k", "2", "--processes", "2", "--ps-workers", "2", "x.svm", "-o", t.TempDir()}, "one or the other"},
	} {
		out, err := exec.Command(coloBin, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: %v, %s: want an error saying %q", c.args, err, out, c.want)
		}
	}
}
