package launch

import (
	"bytes"
	"colo/internal/colotest"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// checkSummaries parses the JSON summaries in out (text between them,
// such as the scheduler's lines, is skipped) and checks that the job had
// servers and workers and that a worker found every value to be the exact
// sum of the pushes. A summary is read from a '{' to the end of its
// object, not to the end of its line: mpirun forwards each rank's output
// in the pieces it read, and a summary's newline can come after another
// rank's summary.
func checkSummaries(t *testing.T, out []byte, servers, workers int) {
	t.Helper()
	var ns, nw int
	checked := false
	for rest := out; ; {
		i := bytes.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		dec := json.NewDecoder(bytes.NewReader(rest[i:]))
		var s NodeSummary
		if err := dec.Decode(&s); err != nil {
			end := bytes.IndexByte(rest[i:], '\n')
			if end < 0 {
				end = len(rest) - i
			}
			t.Errorf("bad summary %q: %v", rest[i:i+end], err)
			rest = rest[i+end:]
			continue
		}
		rest = rest[i+int(dec.InputOffset()):]
		switch s.Role {
		case "server":
			ns++
		case "worker":
			nw++
			var r struct {
				KeysPushed uint64 `json:"keys_pushed"`
				Checked    bool   `json:"checked"`
			}
			if json.Unmarshal(s.Smoke, &r) != nil || r.KeysPushed == 0 {
				t.Errorf("worker %v pushed nothing: %s", s.Nodes, s.Smoke)
			}
			checked = checked || r.Checked
		}
		if s.Error != "" {
			t.Errorf("%v: %s", s.Nodes, s.Error)
		}
	}
	if ns != servers || nw != workers || !checked {
		t.Errorf("%d server and %d worker summaries (want %d and %d), sums checked %v:\n%s", ns, nw, servers, workers, checked, out)
	}
}

// TestDMLCEnvironment runs the default smoke job on a scheduler, a server
// and a worker that are each a plain `colo node` with no flags: what
// they are and where the scheduler is come only from ps-lite's DMLC_*
// variables, the token from COLO_TOKEN.
func TestDMLCEnvironment(t *testing.T) {
	colotest.Need(t, coloBin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var port int
	env := func(role string) []string {
		return []string{"DMLC_ROLE=" + role, "DMLC_PS_ROOT_URI=127.0.0.1", "DMLC_PS_ROOT_PORT=" + strconv.Itoa(port),
			"DMLC_NUM_SERVER=1", "DMLC_NUM_WORKER=1", "COLO_TOKEN=dmlc-test", "COLO_JSON=true"}
	}
	sup := NewSupervisor(coloBin, Loopback{})
	port, addr := startScheduler(ctx, t, sup, func(p int) Spec {
		port = p
		return Spec{Name: "scheduler", Args: []string{"node"}, Env: env("scheduler")}
	})
	if want := "127.0.0.1:" + strconv.Itoa(port); addr != want {
		t.Errorf("the scheduler listens on %s, want %s", addr, want)
	}
	server := sup.Start(ctx, Spec{Name: "server", Host: 1, Args: []string{"node"}, Env: env("server"), Stdout: true})
	worker := sup.Start(ctx, Spec{Name: "worker", Host: 2, Args: []string{"node"}, Env: env("worker"), Stdout: true})
	if err := sup.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, append(server.Stdout(), worker.Stdout()...), 1, 1)
}

// TestMPIRun runs a scheduler, two servers and two workers under Open
// MPI's mpirun on loopback: one command line for every rank, each rank's
// role and rank from OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE, the
// rest from COLO_* variables that mpirun passes on (-x). Each rank's
// output is read from the file mpirun keeps of it (--output-filename):
// mpirun's own standard output joins the ranks' in the pieces it read, a
// summary line of one rank cut by another's.
func TestMPIRun(t *testing.T) {
	colotest.Need(t, coloBin)
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH: apt-get install openmpi-bin (.ci/run installs it) to run colo under Open MPI")
	}
	if out, err := exec.Command(mpirun, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "Open MPI") {
		t.Skipf("mpirun is not Open MPI's (%v): %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every rank is told the scheduler's port, which rank 0 binds: a port
	// found free, which another process can take before rank 0 binds it.
	// Then rank 0 fails saying so (portTaken) and mpirun ends the job;
	// that is logged and run again on another port, up to 5 times.
	var dir string
	for try := 1; ; try++ {
		port := freePorts(t, 1)
		dir = t.TempDir()
		cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "5",
			"--output-filename", dir,
			"-x", "COLO_TOKEN=mpi-test", "-x", "COLO_SCHEDULER=127.0.0.1:"+strconv.Itoa(port),
			"-x", "COLO_NUM_SERVERS=2", "-x", "COLO_NUM_WORKERS=2", "-x", "COLO_JSON=true",
			"-x", "COLO_ROUNDS=5", "-x", "COLO_KEYS=20000", "-x", "COLO_BATCH=2000",
			coloBin, "node")
		cmd.Env = childEnv(cmd.Environ(), nil)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		mixed, err := cmd.Output()
		if err == nil {
			break
		}
		rank0, _ := filepath.Glob(filepath.Join(dir, "*", "rank.0", "stderr"))
		var text []byte
		if len(rank0) == 1 {
			text, _ = os.ReadFile(rank0[0])
		}
		if !portTaken(string(text), port) || try == 5 {
			t.Fatalf("mpirun: %v\nstdout:\n%s\nstderr:\n%s", err, mixed, stderr.Bytes())
		}
		t.Logf("port %d was taken before rank 0's scheduler bound it; another port: %s", port, text)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "rank.*", "stdout"))
	if err != nil || len(files) != 5 {
		t.Fatalf("mpirun kept %d ranks' output in %s (%v), want 5", len(files), dir, err)
	}
	var out []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, b...), '\n')
	}
	if !bytes.Contains(out, []byte("job finished: 2 servers, 2 workers")) {
		t.Errorf("the scheduler did not finish the job:\n%s", out)
	}
	checkSummaries(t, out, 2, 2)
}

// scrape fetches and parses a metrics endpoint; nil while it does not
// answer.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the text parser refuses %s: %v\n%s", url, err, body)
	}
	return mfs
}

// sample returns the value of the first sample of a counter or gauge
// family, or -1.
func sample(mfs map[string]*dto.MetricFamily, name string) float64 {
	if mf := mfs[name]; mf != nil && len(mf.GetMetric()) > 0 {
		m := mf.GetMetric()[0]
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	return -1
}

// TestNodeMetrics scrapes a worker's --metrics endpoint while its node
// waits for the cluster to form, during the job (its link slowed to make
// the job last), and after the job while it lingers; then reads the same
// final values from its --metrics-file.
func TestNodeMetrics(t *testing.T) {
	colotest.Need(t, coloBin)
	// 100 pushes of about 5 kB (1,000 values and their keys' deltas) at
	// 2 Mbit/s: about 2 s, many scrapes' time under load.
	const rounds = 100
	last := strconv.Itoa(rounds)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var port int
	env := func(role string) []string {
		return []string{"DMLC_ROLE=" + role, "DMLC_PS_ROOT_URI=127.0.0.1", "DMLC_PS_ROOT_PORT=" + strconv.Itoa(port),
			"DMLC_NUM_SERVER=1", "DMLC_NUM_WORKER=2", "COLO_TOKEN=metrics-test", "COLO_ROUNDS=" + last, "COLO_KEYS=10000", "COLO_BATCH=1000"}
	}
	file := filepath.Join(t.TempDir(), "worker.prom")
	sup := NewSupervisor(coloBin, Loopback{})
	startScheduler(ctx, t, sup, func(p int) Spec {
		port = p
		return Spec{Name: "scheduler", Args: []string{"node"}, Env: env("scheduler")}
	})
	sup.Start(ctx, Spec{Name: "server", Host: 1, Args: []string{"node"}, Env: env("server")})
	// The worker serves its metrics on a port it binds itself and says
	// which.
	w0 := sup.Start(ctx, Spec{Name: "worker 0", Host: 2, Env: env("worker"),
		Args: []string{"node", "--metrics", "127.0.0.1:0", "--linger", "3s", "--metrics-file", file,
			"--link-bandwidth", "2mbit"}})
	serving := regexp.MustCompile(`metrics: serving (http://127\.0\.0\.1:[0-9]+/metrics) `)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := serving.FindStringSubmatch(w0.Stderr()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("worker 0 did not say where it serves its metrics (%v): %s", w0.Err(), w0.Stderr())
		}
	}
	runtime := func(mfs map[string]*dto.MetricFamily) bool {
		return mfs["go_goroutines"] != nil && mfs["process_resident_memory_bytes"] != nil
	}
	families := []string{"colo_link_messages_total", "colo_link_bytes_total", "colo_traffic_bytes_total",
		"colo_worker_pushes_total", "colo_worker_round", "go_goroutines", "process_resident_memory_bytes"}
	has := func(mfs map[string]*dto.MetricFamily) bool {
		for _, f := range families {
			if mfs[f] == nil {
				return false
			}
		}
		return true
	}
	wait := func(what string, ok func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if mfs := scrape(t, url); mfs != nil && ok(mfs) {
				return mfs
			}
		}
		t.Fatalf("%s: %s never showed it", what, url)
		return nil
	}
	// The cluster lacks a worker: the node waits to join, and serves the
	// runtime's metrics, not yet its own.
	mfs := wait("before the job", runtime)
	if mfs["colo_worker_pushes_total"] != nil {
		t.Errorf("worker counters before the node joined")
	}
	sup.Start(ctx, Spec{Name: "worker 1", Host: 3, Args: []string{"node"}, Env: env("worker")})
	// During the job.
	wait("during the job", func(m map[string]*dto.MetricFamily) bool {
		r := sample(m, "colo_worker_round")
		return has(m) && r > 0 && r < rounds
	})
	// After the job, while it lingers: every round.
	mfs = wait("after the job", func(m map[string]*dto.MetricFamily) bool { return has(m) && sample(m, "colo_worker_round") == rounds })
	if sample(mfs, "colo_worker_pushes_total") < rounds {
		t.Errorf("%v pushes after %d rounds", sample(mfs, "colo_worker_pushes_total"), rounds)
	}
	if err := sup.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	final, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil || !has(final) || sample(final, "colo_worker_round") != rounds {
		t.Errorf("--metrics-file: %v\n%s", err, text)
	}
}
