package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/cluster"
	"colo/launch"
	"colo/ps/clock"
)

// coloBin is the colo binary built once by TestMain for the tests that run
// real processes.
var coloBin string

var launches = flag.Int("launches", 0, "run TestManyLaunches with this many consecutive 2×2 launches")

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "colo-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	coloBin = filepath.Join(dir, "colo")
	if out, err := exec.Command("go", "build", "-o", coloBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build colo: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestLaunchProcesses runs colo launch: a scheduler and machines as
// processes on loopback, the smoke job checked for exact sums.
func TestLaunchProcesses(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "2"},
		{"--servers", "2", "--workers", "3", "--consistency", "bounded", "--tau", "1"},
	} {
		out, err := exec.Command(coloBin, append([]string{"launch", "--json", "--rounds", "5", "--batch", "2000", "--keys", "20000"}, args...)...).Output()
		if err != nil {
			t.Fatalf("launch %v: %v\n%s", args, err, out)
		}
		var s launch.SmokeSummary
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("launch %v: %v: %s", args, err, out)
		}
		if !s.Checked || s.KeysPushed == 0 || s.Inter.MsgsSent == 0 {
			t.Fatalf("launch %v: %+v", args, s)
		}
		if s.Machines > 0 && s.Inner.MsgsSent == 0 {
			t.Fatalf("launch %v: no inner-machine traffic", args)
		}
		t.Logf("launch %v: start %.3f s, %.2fM keys/s", args, s.StartSeconds, s.KeysPerSec/1e6)
	}
}

// TestManyLaunches starts a 2×2 cluster of processes many times in a row:
// every one must start and finish (go test -run ManyLaunches -launches 200).
func TestManyLaunches(t *testing.T) {
	if *launches == 0 {
		t.Skip("run with -launches=N")
	}
	var worst float64
	for i := range *launches {
		out, err := exec.Command(coloBin, "launch", "--json", "-n", "2", "--rounds", "2", "--batch", "100", "--keys", "1000").Output()
		if err != nil {
			t.Fatalf("launch %d: %v\n%s", i, err, out)
		}
		var s launch.SmokeSummary
		if err := json.Unmarshal(out, &s); err != nil || !s.Checked {
			t.Fatalf("launch %d: %v %s", i, err, out)
		}
		worst = max(worst, s.StartSeconds)
	}
	t.Logf("%d launches, slowest start %.3f s", *launches, worst)
}

// child is a colo process of a test.
type child struct {
	cmd          *exec.Cmd
	out, errOut  bytes.Buffer
	done         chan struct{}
	err          error
	name         string
	stdoutReader *bufio.Reader
}

func startChild(t *testing.T, name string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(coloBin, args...), done: make(chan struct{}), name: name}
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// startScheduler starts a scheduler process and returns it with its
// address.
func startScheduler(t *testing.T, args ...string) (*child, string) {
	t.Helper()
	c := &child{cmd: exec.Command(coloBin, append([]string{"node", "--role", "scheduler", "--scheduler", "127.0.0.1:0"}, args...)...), done: make(chan struct{}), name: "scheduler"}
	c.cmd.Stderr = &c.errOut
	pipe, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(pipe)
	line, err := rd.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "scheduler listening on ")
	if err != nil || !ok {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		t.Fatalf("the scheduler printed %q: %v\nstderr: %s", line, err, c.errOut.String())
	}
	go func() {
		io.Copy(&c.out, rd)
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c, addr
}

// lastLine returns the last line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func wait(t *testing.T, c *child, d time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		t.Fatalf("%s still running after %v\nstderr: %s", c.name, d, c.errOut.String())
	}
}

// TestKillProcessMidJob kills a worker process, then a server process, in
// the middle of a long job: the scheduler and every surviving node must
// end with an error naming it within the heartbeat timeout.
func TestKillProcessMidJob(t *testing.T) {
	const timeout = 1 * time.Second
	for _, victim := range []string{"worker", "server"} {
		t.Run(victim, func(t *testing.T) {
			common := []string{"--token", "t0k", "--num-servers", "2", "--num-workers", "2", "--keys", "10000"}
			sc, addr := startScheduler(t, append(common, "--heartbeat", "50ms", "--timeout", timeout.String())...)
			nodes := map[string]*child{}
			for _, role := range []string{"server", "worker"} {
				for r := range 2 {
					name := fmt.Sprintf("%s %d", role, r)
					nodes[name] = startChild(t, name, append([]string{"node", "--role", role, "--rank", fmt.Sprint(r),
						"--scheduler", addr, "--rounds", "1000000", "--batch", "100"}, common...)...)
				}
			}
			// Let the job run, then kill the victim without warning.
			time.Sleep(500 * time.Millisecond)
			name := victim + " 1"
			dead := nodes[name]
			select {
			case <-dead.done:
				t.Fatalf("%s ended early: %v\n%s", name, dead.err, dead.errOut.String())
			default:
			}
			killed := time.Now()
			dead.cmd.Process.Signal(syscall.SIGKILL)
			wait(t, sc, timeout+2*time.Second)
			took := time.Since(killed)
			if sc.err == nil || !strings.Contains(sc.errOut.String(), name) {
				t.Fatalf("scheduler: %v\nstderr: %s", sc.err, sc.errOut.String())
			}
			for n, c := range nodes {
				if c == dead {
					continue
				}
				wait(t, c, timeout+2*time.Second)
				if c.err == nil || !strings.Contains(c.errOut.String(), name) {
					t.Fatalf("%s: %v\nstderr: %s", n, c.err, c.errOut.String())
				}
			}
			if took > timeout+time.Second {
				t.Fatalf("the job ended %v after the kill, timeout %v", took, timeout)
			}
			t.Logf("ended %v after the kill: %s", took.Round(time.Millisecond), lastLine(sc.errOut.String()))
		})
	}
}

func TestWrongTokenProcess(t *testing.T) {
	sc, addr := startScheduler(t, "--token", "right", "--num-servers", "1", "--num-workers", "1", "--join-timeout", "5s")
	intruder := startChild(t, "intruder", "node", "--role", "machine", "--scheduler", addr, "--token", "wrong")
	wait(t, intruder, 10*time.Second)
	if intruder.err == nil || !strings.Contains(intruder.errOut.String(), "wrong cluster token") {
		t.Fatalf("intruder: %v\n%s", intruder.err, intruder.errOut.String())
	}
	// The scheduler says so on its side; then the right node gets in.
	ok := startChild(t, "machine", "node", "--role", "machine", "--scheduler", addr, "--token", "right", "--rounds", "2", "--batch", "10", "--keys", "100")
	wait(t, ok, 10*time.Second)
	wait(t, sc, 10*time.Second)
	if ok.err != nil || sc.err != nil {
		t.Fatalf("machine: %v %s\nscheduler: %v %s", ok.err, ok.errOut.String(), sc.err, sc.errOut.String())
	}
	if !strings.Contains(sc.errOut.String(), "wrong cluster token") {
		t.Fatalf("scheduler stderr: %s", sc.errOut.String())
	}
}

// TestMetrics scrapes the Prometheus endpoint of an in-process node.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := cluster.DefaultConfig()
	cfg.NumKeys, cfg.Clock = 100, clock.Config{Mode: clock.Async}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Worker(0).Push([]uint64{1, 99}, []float32{1, 2}).Wait(); err != nil {
		t.Fatal(err)
	}
	n := c.WorkerNode(0)
	addr, stop, err := serveMetrics("127.0.0.1:0", func(w *strings.Builder) { writeNodeMetrics(w, n.Stats()) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var b strings.Builder
	writeNodeMetrics(&b, n.Stats())
	text := b.String()
	for _, want := range []string{
		"# TYPE colo_link_bytes_total counter",
		`colo_link_messages_total{from="worker 0",to="server 0",scope="inner",dir="sent"} 1`,
		`colo_link_messages_total{from="worker 0",to="server 1",scope="inter",dir="sent"} 1`,
		`colo_traffic_bytes_total{scope="inner",dir="sent"}`,
		"colo_worker_keys_pushed_total 2",
		"colo_server_pushes_total 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	// Every sample line is NAME{LABELS} VALUE or NAME VALUE.
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		want := 1
		if !strings.Contains(l, "}") {
			want = 2
		}
		if f := strings.Fields(l[strings.LastIndexByte(l, '}')+1:]); len(f) != want {
			t.Errorf("bad sample line %q", l)
		}
	}
	// And the endpoint serves it.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "colo_worker_keys_pushed_total 2") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
}
