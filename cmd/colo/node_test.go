package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"colo/app/smoke"
	"colo/internal/colotest"
)

// coloBin is the colo binary built once by TestMain for the tests that run
// real processes.
var coloBin string

var launches = flag.Int("launches", 0, "run TestManyLaunches with this many consecutive 2×2 launches")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(colotest.Main(m, &coloBin))
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
		var s smoke.Summary
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
		var s smoke.Summary
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
