package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	data := genPowerLaw(t, dir, 4000, 5)
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
	if out, err := exec.Command(coloBin, "partition", "-k", "5", "--seed", "3", "--init", "global", "--blocks", "6", data,
		"-o", filepath.Join(dir, "m2"), "--processes", "2", "--memory", "4GiB").CombinedOutput(); err != nil || !strings.Contains(string(out), "of a 4.0 GiB cap (estimated need") {
		t.Fatalf("--processes 2 --memory 4GiB: %v, want each machine's peak against its cap:\n%s", err, out)
	}
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
	same("p2", "m2")
	// A cap below what a machine needs: every machine says so, and the
	// error says it once.
	args := []string{"partition", "-k", "5", "--processes", "2", "--memory", "2MiB", data, "-o", filepath.Join(dir, "small")}
	out, err := exec.Command(coloBin, args...).CombinedOutput()
	if err == nil || strings.Count(string(out), "a machine of this run needs") != 1 || !strings.Contains(string(out), "memory cap 2.0 MiB is below the") {
		t.Errorf("%v: %v: want one error saying what a machine needs:\n%s", args, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "small")); err == nil {
		t.Errorf("a failed job wrote its output directory")
	}
	// The summary is the command's, with machine 0's statistics and the
	// report of every machine's reading of the file.
	b, err := os.ReadFile(filepath.Join(dir, "p2", placement.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Algorithm string `json:"algorithm"`
		Details   struct {
			Parsa struct {
				Blocks int `json:"blocks"`
			} `json:"parsa"`
			Distributed struct {
				PerWorker []struct {
					Blocks int `json:"blocks"`
					File   *struct {
						Samples int `json:"samples"`
					} `json:"file"`
				} `json:"per_worker"`
			} `json:"distributed"`
		} `json:"details"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	pw := sum.Details.Distributed.PerWorker
	if sum.Algorithm != "parsa" || sum.Details.Parsa.Blocks != 6 || len(pw) != 2 || pw[0].Blocks+pw[1].Blocks != 6 ||
		pw[1].File == nil || pw[1].File.Samples != 4000 {
		t.Errorf("summary of --processes 2: %s", b)
	}
}

// TestPartitionProcessesDeadWorker kills machine 1 of a distributed
// partition job: the job fails naming it and leaves no summary.json.
func TestPartitionProcessesDeadWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	dir := t.TempDir()
	data := genPowerLaw(t, dir, 100000, 5)
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
		{[]string{"partition", "-k", "2", "--processes", "2", "--memory", "lots", "x.svm", "-o", t.TempDir()}, `--memory: size "lots"`},
		{[]string{"partition", "-k", "2", "--processes", "2", "--parsa-refine", "1", "x.svm", "-o", t.TempDir()}, "need the graph in memory"},
		{[]string{"partition", "-k", "2", "--processes", "2", "--param-algo", "minmax", "x.svm", "-o", t.TempDir()}, "need the graph in memory"},
		{[]string{"partition", "-k", "2", "--processes", "2", "--directions", "x.svm", "-o", t.TempDir()}, "--directions with --processes"},
		{[]string{"partition", "-k", "2", "--memory", "64MiB", "--directions", "x.svm", "-o", t.TempDir()}, "--directions: out of core"},
	} {
		out, err := exec.Command(coloBin, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: %v, %s: want an error saying %q", c.args, err, out, c.want)
		}
	}
}

// TestPartitionJobByHand writes the job with --write-job (with a memory
// cap) and runs it as on real machines, a scheduler and two colo node
// --job parsa machines started by hand: machine 0 writes the placement
// that --processes 2 writes.
func TestPartitionJobByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	dir := t.TempDir()
	data := genPowerLaw(t, dir, 3000, 2)
	job := filepath.Join(dir, "job.json")
	byHand := filepath.Join(dir, "hand")
	common := []string{"partition", "-k", "4", "--seed", "7", "--processes", "2", data}
	// The machines run under a cap that fits: the same placement.
	if out, err := exec.Command(coloBin, append(common, "--memory", "2GiB", "--write-job", job, "-o", byHand)...).CombinedOutput(); err != nil {
		t.Fatalf("--write-job: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(job); err != nil || !strings.Contains(string(b), `"memory": 2147483648`) {
		t.Fatalf("the job file has no cap of 2 GiB (%v):\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(byHand, placement.SummaryFile)); err == nil {
		t.Fatal("--write-job ran the job")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := append(os.Environ(), "COLO_TOKEN=by-hand")
	sched := exec.CommandContext(ctx, coloBin, "node", "--role", "scheduler", "--scheduler", "127.0.0.1:0", "--job", "parsa", "--job-file", job)
	sched.Env = env
	stdout, err := sched.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "scheduler listening on ")
	if err != nil || !ok {
		t.Fatalf("scheduler printed %q, %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	var machines []*exec.Cmd
	for r := range 2 {
		m := exec.CommandContext(ctx, coloBin, "node", "--role", "machine", "--scheduler", addr, "--host", "127.0.0.1",
			"--job", "parsa", "--job-file", job, "--rank", strconv.Itoa(r))
		m.Env = env
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		machines = append(machines, m)
	}
	for r, m := range machines {
		if err := m.Wait(); err != nil {
			t.Fatalf("machine %d: %v", r, err)
		}
	}
	if err := sched.Wait(); err != nil {
		t.Fatalf("scheduler: %v", err)
	}
	viaProcesses := filepath.Join(dir, "processes")
	if out, err := exec.Command(coloBin, append(common, "-o", viaProcesses)...).CombinedOutput(); err != nil {
		t.Fatalf("--processes 2: %v\n%s", err, out)
	}
	for _, f := range []string{placement.DataPartFile, placement.ParamPartFile} {
		a, err := os.ReadFile(filepath.Join(byHand, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(viaProcesses, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s by hand differs from --processes 2", f)
		}
	}
}

// TestPartitionProcessesCompressed: a compressed file is decompressed
// once, into a copy the machines read by ranges; the placement is the
// one of the file uncompressed, the summary names the compressed file,
// and so does the error of a malformed line, with its line number.
func TestPartitionProcessesCompressed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	dir := t.TempDir()
	data := genPowerLaw(t, dir, 3000, 4)
	plain, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	gz := func(name string, b []byte) string {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(b)
		w.Close()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	zipped := gz("g.svm.gz", plain)
	spill := t.TempDir()
	run := func(file, out string) string {
		t.Helper()
		b, err := exec.Command(coloBin, "partition", "-k", "4", "--seed", "2", "--processes", "2", "--spill-dir", spill,
			file, "-o", filepath.Join(dir, out)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", file, err, b)
		}
		return string(b)
	}
	run(data, "plain")
	if out := run(zipped, "zipped"); !strings.Contains(out, "each machine parsed its own range") {
		t.Errorf("the compressed file was not read by ranges:\n%s", out)
	}
	for _, f := range []string{placement.DataPartFile, placement.ParamPartFile} {
		a, errA := os.ReadFile(filepath.Join(dir, "plain", f))
		b, errB := os.ReadFile(filepath.Join(dir, "zipped", f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the file and its gzip (%v, %v)", f, errA, errB)
		}
	}
	var sum struct {
		Dataset string `json:"dataset"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "zipped", placement.SummaryFile)); err != nil || json.Unmarshal(b, &sum) != nil || sum.Dataset != zipped {
		t.Errorf("summary names %q, want %s (%v)", sum.Dataset, zipped, err)
	}
	if left, _ := os.ReadDir(spill); len(left) != 0 {
		t.Errorf("the spill directory keeps %d entries after the job", len(left))
	}
	lines := strings.Split(string(plain), "\n")
	lines[1700] = "1 3:1 7:x"
	bad := gz("bad.svm.gz", []byte(strings.Join(lines, "\n")))
	b, err := exec.Command(coloBin, "partition", "-k", "4", "--processes", "2", bad, "-o", filepath.Join(dir, "bad")).CombinedOutput()
	if err == nil || !strings.Contains(string(b), bad+":1701:") {
		t.Errorf("a malformed line of a compressed file: %v, want its name and line 1701:\n%s", err, b)
	}
}

// genPowerLaw writes colo gen powerlaw's graph of n samples for seed to
// DIR/g.svm and returns its path.
func genPowerLaw(t *testing.T, dir string, n, seed int) string {
	t.Helper()
	data := filepath.Join(dir, "g.svm")
	if out, err := exec.Command(coloBin, "gen", "powerlaw", "-n", strconv.Itoa(n), "--seed", strconv.Itoa(seed), "-o", data).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	return data
}
