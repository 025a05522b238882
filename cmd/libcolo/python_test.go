package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/launch"
	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/transport/tcp"
)

// python returns Debian's python3 with torch and numpy, or skips.
func python(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if p := os.Getenv("COLO_TEST_PYTHON"); p != "" {
		py = p
	}
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import torch and numpy (apt-get install python3-torch python3-numpy): %v: %s", py, err, bytes.TrimSpace(out))
	}
	return py
}

// The library, built once for the tests of this process (TestMain
// removes it).
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildLibrary builds the c-shared library into a temporary directory,
// once.
func buildLibrary(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skipf("cgo is disabled (go env CGO_ENABLED: %q, %v): the C library needs cgo and gcc", bytes.TrimSpace(out), err)
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "libcolo-test-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "libcolo.so")
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", built.path, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build -buildmode=c-shared: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// pyEnv is the environment of a Python test process: this one's without
// COLO_* and DMLC_* variables, plus extra.
func pyEnv(lib string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COLO_") && !strings.HasPrefix(kv, "DMLC_") && !strings.HasPrefix(kv, "PYTHONPATH=") {
			env = append(env, kv)
		}
	}
	root, _ := filepath.Abs("../../python")
	return append(env, append([]string{"COLO_LIBRARY=" + lib, "PYTHONPATH=" + root, "PYTHONDONTWRITEBYTECODE=1"}, extra...)...)
}

// TestPython runs the Python client's unit tests (python/tests) against
// the library built from this package: the layers against torch's own
// on a one-machine cluster, bad input, the fork guard. Then it runs the
// multi-worker scenarios of python/tests/cluster_worker.py against a
// scheduler and servers over TCP in this process.
func TestPython(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C library and runs Python: not in -short")
	}
	py := python(t)
	lib := buildLibrary(t)
	t.Run("unit", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", "tests/test_local.py")
		cmd.Dir = "../../python"
		cmd.Env = pyEnv(lib)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python unit tests: %v\n%s", err, out)
		}
		t.Logf("%s", lastLines(out, 3))
	})
	for _, c := range []struct {
		name    string
		workers int
		servers int
		rule    update.Config
		mode    clock.Mode
	}{
		{"bsp", 3, 2, update.Config{Name: "sgd", LR: 0.5}, clock.BSP},
		{"async", 3, 2, update.Config{Name: "sum"}, clock.Async},
		{"branch", 2, 1, update.Config{Name: "sgd", LR: 0.5}, clock.BSP},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, token := startServers(t, c.servers, c.workers, c.rule, c.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rule := fmt.Sprintf(`{"name":%q,"lr":%v}`, c.rule.Name, c.rule.LR)
			var wg sync.WaitGroup
			outs := make([][]byte, c.workers)
			errs := make([]error, c.workers)
			for r := range c.workers {
				wg.Go(func() {
					cmd := exec.CommandContext(ctx, py, "tests/cluster_worker.py")
					cmd.Dir = "../../python"
					cmd.Env = pyEnv(lib, "COLO_SCHEDULER="+addr, "COLO_TOKEN="+token, fmt.Sprintf("COLO_RANK=%d", r),
						"COLO_RULE="+rule, "COLO_TEST_SCENARIO="+c.name)
					outs[r], errs[r] = cmd.CombinedOutput()
				})
			}
			wg.Wait()
			for r := range c.workers {
				if errs[r] != nil {
					t.Errorf("worker %d: %v\n%s", r, errs[r], outs[r])
				}
			}
		})
	}
}

// TestColoRun runs colo run with the BSP scenario as its program: two
// machines (each Python worker hosting a server), then two servers apart
// from three workers; and a program that fails, which colo run names.
func TestColoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C library and colo, and runs Python: not in -short")
	}
	py := python(t)
	lib := buildLibrary(t)
	colo := filepath.Join(t.TempDir(), "colo")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", colo, "../colo").CombinedOutput(); err != nil {
		t.Fatalf("go build colo: %v\n%s", err, out)
	}
	for _, shape := range []struct {
		args    []string
		workers int
	}{{[]string{"--machines", "2"}, 2}, {[]string{"--machines", "3", "--servers", "2"}, 3}} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		args := append(append([]string{"run"}, shape.args...), "--rule", "sgd", "--lr", "0.5", "--", py, "tests/cluster_worker.py", "bsp")
		cmd := exec.CommandContext(ctx, colo, args...)
		cmd.Dir = "../../python"
		cmd.Env = pyEnv(lib)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("colo %v: %v\n%s", args, err, out)
		}
		if n := strings.Count(string(out), "] ok"); n != shape.workers {
			t.Errorf("colo %v: %d workers said ok:\n%s", args, n, out)
		}
	}
	// torchrun's variables, and the namespaces of --netns where this
	// host has them.
	prom := filepath.Join(t.TempDir(), "scheduler.prom")
	runs := [][]string{{"run", "--machines", "2", "--rule", "sgd", "--lr", "0.5", "--metrics-file", prom}}
	if err := launch.CheckNetns(); err == nil {
		runs = append(runs, []string{"run", "--machines", "2", "--netns", "--link-bandwidth", "1gbit", "--rule", "sgd", "--lr", "0.5"})
	} else {
		t.Logf("colo run --netns not tried: %v", err)
	}
	for _, args := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		args = append(args, "--", "/bin/sh", "-c", `echo "torchrun $RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR:$MASTER_PORT"; exec "$0" tests/cluster_worker.py bsp`, py)
		cmd := exec.CommandContext(ctx, colo, args...)
		cmd.Dir = "../../python"
		cmd.Env = pyEnv(lib)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("colo %v: %v\n%s", args, err, out)
		}
		master, local := "127.0.0.1:", "1 1 2"
		if slices.Contains(args, "--netns") {
			master, local = ".2:29500", "1 0 2" // worker 0 is host 1 of the namespaces; one worker a host
			if !strings.Contains(string(out), "on the namespaces' links") {
				t.Errorf("colo %v: no bytes of the links:\n%s", args, out)
			}
		}
		if !strings.Contains(string(out), "[worker 1] torchrun "+local) || !strings.Contains(string(out), master) || strings.Count(string(out), "] ok") != 2 {
			t.Errorf("colo %v: want worker 1's RANK, LOCAL_RANK, WORLD_SIZE %q and MASTER_ADDR:MASTER_PORT %q, and two oks:\n%s", args, local, master, out)
		}
	}
	if b, err := os.ReadFile(prom); err != nil || !strings.Contains(string(b), "colo_") {
		t.Errorf("colo run --metrics-file: the scheduler's metrics %q: %v", b, err)
	}
	cmd := exec.Command(colo, "run", "--machines", "2", "--", py, "-c", "import sys; sys.exit(3)")
	cmd.Env = pyEnv(lib)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "exit status 3") || !strings.Contains(string(out), "machine") {
		t.Errorf("colo run of a failing program: %v\n%s", err, out)
	}
	// A program that ends well without joining: the scheduler waits its
	// join timeout for it, and colo run says the workers never joined.
	cmd = exec.Command(colo, "run", "--machines", "2", "--join-timeout", "2s", "--", "/bin/sh", "-c", "exit 0")
	cmd.Env = pyEnv(lib)
	out, err = cmd.CombinedOutput()
	if want := "machine 0 and machine 1 had exited without an error before the job started, never joining it: PROGRAM joins the job with colo.init()"; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("colo run of a program that never joins: %v\n%s\nwant %q", err, out, want)
	}
}

// TestMPI runs the BSP scenario under Open MPI's mpirun, with no colo
// launcher at all: every rank is a machine, rank 0 hosts the scheduler.
func TestMPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C library and runs Python under mpirun: not in -short")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH: apt-get install openmpi-bin (.ci/run installs it)")
	}
	if out, err := exec.Command(mpirun, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "Open MPI") {
		t.Skipf("mpirun is not Open MPI's (%v): %s", err, out)
	}
	py := python(t)
	lib := buildLibrary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Every rank is told the scheduler's address, which rank 0 binds: a
	// port found free, which another process can take before rank 0
	// binds it. Then rank 0 fails saying so and mpirun ends the job; that
	// is logged and run again on another port, up to 5 times.
	var out []byte
	for try := 1; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3",
			"-x", "COLO_SCHEDULER", "-x", "COLO_TOKEN", "-x", "COLO_LIBRARY", "-x", "PYTHONPATH",
			py, "tests/cluster_worker.py", "bsp")
		cmd.Dir = "../../python"
		cmd.Env = pyEnv(lib, "COLO_SCHEDULER="+addr, "COLO_TOKEN=mpi-test")
		out, err = cmd.CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(out), "listen tcp "+addr+": bind: address already in use") || try == 5 {
			t.Fatalf("mpirun: %v\n%s", err, out)
		}
		t.Logf("port of %s was taken before rank 0's scheduler bound it; another port:\n%s", addr, out)
	}
	// Each rank's line on its own: mpirun may join the ranks' outputs
	// without a line between them.
	for r := range 3 {
		if !strings.Contains(string(out), fmt.Sprintf("ok: worker %d", r)) {
			t.Errorf("worker %d did not say ok:\n%s", r, out)
		}
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startServers starts a scheduler (width 0) and servers over TCP on
// loopback, for workers that join later.
func startServers(t *testing.T, servers, workers int, rc update.Config, mode clock.Mode) (addr, token string) {
	t.Helper()
	token = "python-test"
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Width, sc.Token = servers, workers, 0, token
	sc.Clock = clock.Config{Mode: mode}
	sc.StartTimeout, sc.Timeout = 2*time.Minute, 20*time.Second
	net := node.TCP{Token: token}
	ep, err := net.Listen(proto.SchedulerID, tcp.NewIdentity())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.Start(sc, ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	full := update.DefaultConfig()
	full.Name, full.LR = rc.Name, rc.LR
	rule, err := update.New(full)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var nodes []*node.Node
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range nodes {
			n.Close()
		}
	})
	for i := range servers {
		go func() {
			nc := node.DefaultConfig()
			nc.Role, nc.Rank, nc.Scheduler, nc.Token, nc.Network, nc.Rule = proto.RoleServer, i, ep.Addr(), token, net, rule
			nc.JoinTimeout = 2 * time.Minute
			if n, err := node.Start(context.Background(), nc); err == nil {
				mu.Lock()
				nodes = append(nodes, n)
				mu.Unlock()
			}
		}()
	}
	return ep.Addr(), token
}
