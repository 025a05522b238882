package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestColoRunReplicas runs colo run --replicas 1 with two Python workers
// and three servers apart, under async, pushing into summing tables
// (python/tests/replica_worker.py): server 1 is killed (SIGKILL) while
// the second half of the pushes is in flight; its backup serves its keys,
// the workers send again what it had not answered, and the job ends well
// with every sum exact.
func TestColoRunReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C library and colo, and runs Python: not in -short")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find the server's process")
	}
	py := python(t)
	lib := buildLibrary(t)
	colo := filepath.Join(t.TempDir(), "colo")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", colo, "../colo").CombinedOutput(); err != nil {
		t.Fatalf("go build colo: %v\n%s", err, out)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"run", "--machines", "2", "--servers", "3", "--replicas", "1", "--consistency", "async", "--", py, "tests/replica_worker.py"}
	cmd := exec.CommandContext(ctx, colo, args...)
	cmd.Dir = "../../python"
	cmd.Env = pyEnv(lib, "REPLICA_TEST_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	half := filepath.Join(dir, "half")
	for {
		if _, err := os.Stat(half); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("colo run ended before the workers' first half: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	victim := serverProcess(cmd.Process.Pid, 1)
	if victim == 0 {
		t.Fatal("no process of server 1")
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("colo %v: %v\n%s", args, err, out.String())
	}
	if n := strings.Count(out.String(), "] ok"); n != 2 {
		t.Errorf("%d workers said ok:\n%s", n, out.String())
	}
}

// serverProcess returns the pid of the colo node process of server rank
// under process parent, 0 if none.
func serverProcess(parent, rank int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		line, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		s := strings.ReplaceAll(string(line), "\x00", " ")
		if strings.Contains(s, "--role server") && strings.Contains(s, "--rank "+strconv.Itoa(rank)+" ") {
			return pid
		}
	}
	return 0
}
