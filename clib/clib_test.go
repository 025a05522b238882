package clib

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
	"colo/transport/tcp"
)

// startServers starts a scheduler and servers over TCP on loopback for
// workers that join later; it returns the scheduler's address.
func startServers(t *testing.T, servers, workers, width int, rule update.Config, mode clock.Mode) string {
	t.Helper()
	const token = "clib-test"
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Width, sc.Token = servers, workers, width, token
	sc.Clock = clock.Config{Mode: mode}
	if mode == clock.Bounded {
		sc.Clock.Tau = 1
	}
	sc.StartTimeout = 30 * time.Second
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
	r, err := update.New(rule)
	if err != nil {
		t.Fatal(err)
	}
	for i := range servers {
		go func() {
			nc := node.DefaultConfig()
			nc.Role, nc.Rank, nc.Scheduler, nc.Token, nc.Network, nc.Rule = proto.RoleServer, i, ep.Addr(), token, net, r
			nc.JoinTimeout = 30 * time.Second
			n, err := node.Start(context.Background(), nc)
			if err != nil {
				return // the test's workers report the failure
			}
			t.Cleanup(func() { n.Close() })
		}()
	}
	return ep.Addr()
}

func join(addr string, rank int) (*Session, error) {
	cfg := DefaultConfig()
	cfg.Scheduler, cfg.Token, cfg.Rank, cfg.Timeout = addr, "clib-test", rank, 30
	return Open(context.Background(), cfg)
}

func local(t *testing.T, rule update.Config) *Session {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Local = &Local{Consistency: "bsp", Rule: rule}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.CloseWait(10 * time.Second) })
	return s
}

func sgd(lr float64) update.Config {
	c := update.DefaultConfig()
	c.Name, c.LR = "sgd", lr
	return c
}

func wait(t *testing.T, k *Ticket, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestLocalPushPull checks a one-machine session against the rule by
// hand: rows never pushed read as their initial values, pushed ones move
// by −lr·g, and a dense table of several chunks (the last one short)
// round-trips.
func TestLocalPushPull(t *testing.T) {
	s := local(t, sgd(0.5))
	ctx := context.Background()
	tb, err := s.Declare(ctx, TableSpec{Name: "emb", Rows: 100, Dim: 3, Init: Init{Name: "normal", Std: 1, Seed: 7}})
	if err != nil {
		t.Fatal(err)
	}
	rows := []int64{2, 50, 99}
	init := make([]float32, 9)
	if err := tb.InitRows(rows, init); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 9)
	k, err := tb.Pull(rows, got)
	wait(t, k, err)
	if !slices.Equal(got, init) {
		t.Fatalf("pull before any push = %v, want the initial values %v", got, init)
	}
	k, err = tb.Push([]int64{50}, []float32{1, 2, 4})
	wait(t, k, err)
	k, err = tb.Pull(rows, got)
	wait(t, k, err)
	want := slices.Clone(init)
	for j, g := range []float32{1, 2, 4} {
		want[3+j] = init[3+j] + (0 - 0.5*g)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pull after a push = %v, want %v", got, want)
	}
	// A batch without rows, after pulls of some (its answers' arrays
	// reused), answers none.
	k, err = tb.Pull(nil, nil)
	wait(t, k, err)
	n := int64(2*DenseChunk + 5)
	d, err := s.Declare(ctx, TableSpec{Name: "w", Dense: true, Size: n})
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float32, n)
	for i := range g {
		g[i] = float32(i % 7)
	}
	k, err = d.PushAll(g)
	wait(t, k, err)
	out := make([]float32, n)
	k, err = d.PullAll(out)
	wait(t, k, err)
	for i := range out {
		if out[i] != -0.5*g[i] {
			t.Fatalf("dense value %d = %v, want %v", i, out[i], -0.5*g[i])
		}
	}
}

// TestBadInput checks that each bad call is an error naming the table and
// what was expected, and changes nothing.
func TestBadInput(t *testing.T) {
	s := local(t, sgd(0.1))
	ctx := context.Background()
	tb, err := s.Declare(ctx, TableSpec{Name: "emb", Rows: 10, Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 4)
	for name, c := range map[string]struct {
		rows []int64
		dst  []float32
		want string
	}{
		"out of range": {[]int64{3, 10}, dst, "row 10 (index 1 of 2) out of range [0, 10)"},
		"negative":     {[]int64{-1, 3}, dst, "row -1"},
		"unsorted":     {[]int64{5, 3}, dst, "ascend without repeats"},
		"repeated":     {[]int64{3, 3}, dst, "ascend without repeats"},
		"short dst":    {[]int64{3, 4}, dst[:3], "into 3 values, want 4"},
	} {
		_, err := tb.Pull(c.rows, c.dst)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"emb"`) {
			t.Errorf("%s: %v, want an error with %q naming the table", name, err, c.want)
		}
	}
	var ie *IndexError
	if _, err := tb.Push([]int64{11}, []float32{1, 1}); !errors.As(err, &ie) {
		t.Errorf("push out of range: %v, want an *IndexError", err)
	}
	if _, err := s.Declare(ctx, TableSpec{Name: "emb", Rows: 10, Dim: 3}); err == nil || !strings.Contains(err.Error(), "declared again as 10 rows × 3, was 10 rows × 2") {
		t.Errorf("second declaration with another shape: %v", err)
	}
	if again, err := s.Declare(ctx, TableSpec{Name: "emb", Rows: 10, Dim: 2}); err != nil || again != tb {
		t.Errorf("second declaration with the same shape: %v, %v", again, err)
	}
	ad := update.DefaultConfig()
	ad.Name, ad.LR = "adagrad", 0.1
	if _, err := s.Declare(ctx, TableSpec{Name: "other", Rows: 10, Dim: 2, Rule: &ad}); err == nil || !strings.Contains(err.Error(), "but the servers run sgd(lr=0.1) (one rule serves every key; start them with it: colo run --rule adagrad --lr 0.1 --eps 1e-08)") {
		t.Errorf("a table that expects another rule: %v", err)
	}
	l2 := sgd(0.1)
	l2.L2 = 0.01
	if _, err := s.Declare(ctx, TableSpec{Name: "other", Rows: 10, Dim: 2, Rule: &l2}); err == nil || !strings.Contains(err.Error(), "weight decay") {
		t.Errorf("a rule with weight decay: %v", err)
	}
}

// TestExpectedRule checks that a program expecting another rule than
// its servers' is refused and told the flags of colo run that start
// servers with its rule (clib/kind's TestRunFlagsParse parses them with
// colo run's flag set).
func TestExpectedRule(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Local = &Local{Consistency: "bsp", Rule: update.DefaultConfig()}
	ad := update.DefaultConfig()
	ad.Name, ad.LR, ad.Eps = "adagrad", 0.5, 1e-10
	cfg.Expect = &ad
	_, err := Open(context.Background(), cfg)
	if want := "the program expects optimizer adagrad(lr=0.5, eps=1e-10), but the servers run sum (start them with it: colo run --rule adagrad --lr 0.5 --eps 1e-10)"; err == nil || err.Error() != want {
		t.Errorf("Open: %v\nwant %s", err, want)
	}
	for _, c := range []struct {
		rule update.Config
		want string
	}{
		{update.DefaultConfig(), "--rule sum"},
		{sgd(0.1), "--rule sgd --lr 0.1"},
		{ad, "--rule adagrad --lr 0.5 --eps 1e-10"},
		{update.Config{Name: "momentum", LR: 0.05, Momentum: 0.9}, "--rule momentum --lr 0.05 --momentum 0.9"},
		{update.Config{Name: "adam", LR: 0.001, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, "--rule adam --lr 0.001 --beta1 0.9 --beta2 0.999 --eps 1e-08"},
	} {
		if got, ok := RunFlags(c.rule); got != c.want || !ok {
			t.Errorf("RunFlags(%s) = %q, %v, want %q", c.rule.Name, got, ok, c.want)
		}
	}
	for _, r := range []update.Config{{Name: "ftrl", LR: 0.1, Beta: 1}, {Name: "adagrad", LR: 0.5, Eps: 1e-10, L2: 1e-4}, {Name: "sgd", LR: 0.1, L1: 1e-3}} {
		if got, ok := RunFlags(r); ok || got != "" {
			t.Errorf("RunFlags(%+v) = %q, %v: colo run has no flags for it", r, got, ok)
		}
	}
}

// TestKeysApart checks the key layout: every table's keys ascend with
// its rows and no two tables share a key, over and above a placement's.
func TestKeysApart(t *testing.T) {
	for _, lo := range []uint64{0, 1000} {
		seen := map[uint64]string{}
		for id, rows := range []int64{1, 7, 1000, 5000, 1 << 30, 1 << 48} {
			for _, placed := range []bool{false, true} {
				if placed && (lo == 0 || rows != 5000) {
					continue // one placed table, with rows past the placement's
				}
				tb := &Table{id: id, rows: rows}
				if placed {
					tb.id += 100
				}
				var err error
				if tb.split, tb.base, tb.stride, err = layout(lo, tb.id, rows, placed); err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("table %d (placed %v)", tb.id, placed)
				prev := uint64(0)
				rs := slices.Compact(slices.Sorted(slices.Values([]int64{0, 1, rows / 2, int64(lo) - 1, int64(lo), int64(lo) + 1, rows - 1})))
				for _, r := range rs {
					if r < 0 || r >= rows {
						continue
					}
					k := tb.key(r)
					if !placed && k < lo {
						t.Fatalf("lo %d: %s row %d key %d below the placement's keys", lo, name, r, k)
					}
					if placed && r < int64(lo) && k != uint64(r) {
						t.Fatalf("lo %d: %s row %d has key %d, want the placement's %d", lo, name, r, k, r)
					}
					if r > 0 && k <= prev {
						t.Fatalf("lo %d: %s row %d key %d not above %d", lo, name, r, k, prev)
					}
					prev = k
					if o, ok := seen[k]; ok && o != name {
						t.Fatalf("lo %d: key %d of %s row %d also %s", lo, k, name, r, o)
					}
					seen[k] = name
				}
			}
		}
	}
}

// TestWorkersBSP runs two sessions against two servers over TCP: under
// BSP a pull after the round's pushes sees both workers' gradients
// summed, and workers that declare different tables are told so.
func TestWorkersBSP(t *testing.T) {
	addr := startServers(t, 2, 2, 0, sgd(1), clock.BSP)
	got := make([][]float32, 2)
	errs := onWorkers(addr, 2, func(s *Session) error {
		r := s.Rank()
		ctx := context.Background()
		tb, err := s.Declare(ctx, TableSpec{Name: "emb", Rows: 1 << 20, Dim: 2})
		if err != nil {
			return err
		}
		rows := []int64{0, 1 << 19, 1<<20 - 1} // on both servers
		vals := []float32{1, 2, 3, 4, 5, 6}
		for i := range vals {
			vals[i] *= float32(r + 1)
		}
		k, err := tb.Push(rows, vals)
		if err == nil {
			err = k.Wait()
		}
		if err != nil {
			return err
		}
		got[r] = make([]float32, 6)
		if k, err = tb.Pull(rows, got[r]); err == nil {
			err = k.Wait()
		}
		if err != nil {
			return err
		}
		// Of other shapes, whose rows the servers would place apart.
		_, err = s.Declare(ctx, TableSpec{Name: "x", Rows: 5000 * int64(r+1), Dim: 2})
		return err
	})
	want := []float32{-3, -6, -9, -12, -15, -18}
	for r := range 2 {
		if !slices.Equal(got[r], want) {
			t.Errorf("worker %d pulled %v, want %v", r, got[r], want)
		}
		if errs[r] == nil || !strings.Contains(errs[r].Error(), "the workers declared different tables") {
			t.Errorf("worker %d: declaring different tables: %v", r, errs[r])
		}
	}
}

// onWorkers joins workers ranks 0 to n−1 to the cluster at addr, runs f
// on each at once, closes them and returns each one's error.
func onWorkers(addr string, n int, f func(s *Session) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		wg.Go(func() {
			s, err := join(addr, r)
			if err != nil {
				errs[r] = err
				return
			}
			defer s.CloseWait(20 * time.Second)
			errs[r] = f(s)
		})
	}
	wg.Wait()
	return errs
}

// TestWidthRefused checks that a job with a uniform width is refused,
// naming the scheduler's setting.
func TestWidthRefused(t *testing.T) {
	addr := startServers(t, 1, 1, 4, sgd(1), clock.BSP)
	cfg := DefaultConfig()
	cfg.Scheduler, cfg.Token, cfg.Timeout = addr, "clib-test", 30
	s, err := Open(context.Background(), cfg)
	if err == nil {
		s.Close()
		t.Fatal("a job of width 4 was joined")
	}
	if !strings.Contains(err.Error(), "width 4") {
		t.Fatalf("error %v does not name the width", err)
	}
}

// TestNoScheduler checks that a scheduler that is not there fails the
// open within its timeout.
func TestNoScheduler(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Scheduler, cfg.Timeout = "127.0.0.1:1", 0.5
	// The open dials again while nothing listens, until its timeout of
	// 0.5 s or ctx's end. ctx ends after 50 s: 100 times the timeout,
	// which no load stretches a refused dial and a timer to, and below
	// DefaultTimeout's 60 s, so that an open that ignored its timeout
	// (or took the default) is ended by ctx, not by its own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if _, err := Open(ctx, cfg); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("open without a scheduler: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the open without a scheduler ran until the test's limit of 50 s, past its timeout of 0.5 s")
	}
	if err := (Config{Rank: -1, Timeout: 1}).Validate(); err == nil || !strings.Contains(err.Error(), "COLO_SCHEDULER") {
		t.Fatalf("no scheduler at all: %v", err)
	}
}

// TestFromEnv reads the COLO and DMLC variables.
func TestFromEnv(t *testing.T) {
	env := map[string]string{"DMLC_PS_ROOT_URI": "10.0.0.1", "DMLC_PS_ROOT_PORT": "9000", "DMLC_TASK_ID": "3", "DMLC_NUM_WORKER": "4",
		"COLO_RULE": `{"name":"adagrad","lr":0.05}`, "COLO_TOKEN": "tok"}
	c := DefaultConfig()
	if err := c.FromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.Scheduler != "10.0.0.1:9000" || c.Rank != 3 || c.NumWorkers != 4 || c.Token != "tok" || c.Rule == nil || c.Rule.Name != "adagrad" || c.Rule.Eps != 1e-8 {
		t.Fatalf("config from the environment: %+v (rule %+v)", c, c.Rule)
	}
	// The join timeout: the caller's, else COLO_JOIN_TIMEOUT's, else
	// DefaultTimeout.
	for _, tc := range []struct {
		timeout float64
		env     string
		want    time.Duration
	}{{0, "", DefaultTimeout * time.Second}, {0, "90s", 90 * time.Second}, {5, "90s", 5 * time.Second}, {5, "", 5 * time.Second}} {
		c := DefaultConfig()
		c.Timeout = tc.timeout
		if err := c.FromEnv(func(k string) string { return map[string]string{"COLO_JOIN_TIMEOUT": tc.env}[k] }); err != nil {
			t.Fatal(err)
		}
		if got := c.joinTimeout(); got != tc.want {
			t.Errorf("timeout %v, COLO_JOIN_TIMEOUT %q: joins within %v, want %v", tc.timeout, tc.env, got, tc.want)
		}
	}
	env["DMLC_PS_ROOT_PORT"] = "x"
	c = DefaultConfig()
	if err := c.FromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "DMLC_PS_ROOT_PORT") {
		t.Fatalf("bad port: %v", err)
	}
	c = DefaultConfig()
	if err := c.FromEnv(func(k string) string { return map[string]string{"DMLC_ROLE": "server"}[k] }); err == nil || !strings.Contains(err.Error(), "DMLC_ROLE") {
		t.Fatalf("a server role: %v", err)
	}
}

// TestMachines runs two sessions as machines (each a server beside its
// worker, the rule from the job file, as colo run starts them): a pull
// after the round sees both workers' pushes through the job's rule, and
// each writes its report.
func TestMachines(t *testing.T) {
	const token = "clib-test"
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token = 2, 2, token
	job := DefaultJob()
	job.Rule, job.Machines = sgd(0.5), 2
	if err := job.Scheduler(&sc); err != nil {
		t.Fatal(err)
	}
	net := node.TCP{Token: token}
	ep, err := net.Listen(proto.SchedulerID, tcp.NewIdentity())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.Start(sc, ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.json")
	b, _ := json.Marshal(map[string]any{"kind": JobKind, "job": job})
	if err := os.WriteFile(jobFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	got := make([][]float32, 2)
	for r := range 2 {
		wg.Go(func() {
			cfg := DefaultConfig()
			env := map[string]string{"COLO_SCHEDULER": ep.Addr(), "COLO_TOKEN": token, "COLO_RANK": fmt.Sprint(r), "COLO_ROLE": "machine",
				"COLO_JOB_FILE": jobFile, "COLO_RESULT": filepath.Join(dir, fmt.Sprintf("r%d.json", r)), "COLO_NUM_SERVERS": "2", "COLO_NUM_WORKERS": "2"}
			if errs[r] = cfg.FromEnv(func(k string) string { return env[k] }); errs[r] != nil {
				return
			}
			ss, err := Open(context.Background(), cfg)
			if err != nil {
				errs[r] = err
				return
			}
			defer func() {
				if err := ss.CloseWait(20 * time.Second); errs[r] == nil {
					errs[r] = err
				}
			}()
			tb, err := ss.Declare(context.Background(), TableSpec{Name: "t", Rows: 1 << 20, Dim: 1})
			if err != nil {
				errs[r] = err
				return
			}
			rows := []int64{1, 1<<20 - 1}
			k, err := tb.Push(rows, []float32{1, 2})
			if err == nil {
				err = k.Wait()
			}
			got[r] = make([]float32, 2)
			if err == nil {
				k, err = tb.Pull(rows, got[r])
			}
			if err == nil {
				err = k.Wait()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("machine %d: %v", r, errs[r])
		}
		if want := []float32{-1, -2}; !slices.Equal(got[r], want) {
			t.Errorf("machine %d pulled %v, want %v", r, got[r], want)
		}
		var rep struct {
			Kind string
			Rank int
			Node struct {
				Role  string
				Stats node.Stats
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("r%d.json", r)))
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil || rep.Kind != JobKind || rep.Rank != r || rep.Node.Role != "machine" || rep.Node.Stats.Inter.BytesSent == 0 {
			t.Errorf("machine %d's report: %+v, %v", r, rep, err)
		}
	}
}

// TestFromLauncher places a rank of mpirun or srun: a machine, rank 0
// hosting the scheduler, on one host at 127.0.0.1:7070, on several only
// with COLO_SCHEDULER; its server needs the program's rule.
func TestFromLauncher(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Config
		err  string
	}{
		{env: map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "3"},
			want: Config{Scheduler: "127.0.0.1:7070", Rank: 0, NumServers: 3, NumWorkers: 3, Role: "machine", HostScheduler: true, Launcher: "Open MPI"}},
		{env: map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "COLO_SCHEDULER": "10.0.0.1:9000"},
			want: Config{Scheduler: "10.0.0.1:9000", Rank: 2, NumServers: 4, NumWorkers: 4, Role: "machine", Launcher: "Slurm"}},
		{env: map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALNRANKS": "1"}, err: "several hosts: set COLO_SCHEDULER"},
		{env: map[string]string{"PMI_RANK": "2", "PMI_SIZE": "2"}, err: "PMI_RANK"},
		{env: map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1", "COLO_ROLE": "worker", "COLO_SCHEDULER": "h:1"},
			want: Config{Scheduler: "h:1", Rank: -1, Role: "worker"}},
	} {
		cfg := DefaultConfig()
		err := cfg.FromEnv(func(k string) string { return c.env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want an error with %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		c.want.Timeout = cfg.Timeout
		if cfg != c.want {
			t.Errorf("%v:\n got %+v\nwant %+v", c.env, cfg, c.want)
		}
		if cfg.Launcher != "" {
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "colo.init(optimizer=") {
				t.Errorf("%v: a machine without the program's rule: %v", c.env, err)
			}
		}
	}
}

// TestUnique checks Unique against sorting and deduplicating by hand, on
// random batches of a small table (marked) and a large one (sorted), and
// its refusal of a row out of range.
func TestUnique(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, rows := range []int64{1, 64, 1000, maxMarked + 1} {
		tb := &Table{rows: rows, spec: TableSpec{Name: "u"}}
		for trial := range 20 {
			n := r.IntN(300)
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = r.Int64N(min(rows, int64(50+trial*40)))
			}
			uniq, inv := make([]int64, n), make([]int64, n)
			k, err := tb.Unique(idx, uniq, inv)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Compact(slices.Sorted(slices.Values(idx)))
			if !slices.Equal(uniq[:k], want) {
				t.Fatalf("rows %d: unique %v, want %v", rows, uniq[:k], want)
			}
			for i, x := range idx {
				if uniq[inv[i]] != x {
					t.Fatalf("rows %d: inv[%d] = %d gives %d, want %d", rows, i, inv[i], uniq[inv[i]], x)
				}
			}
		}
		var ie *IndexError
		if _, err := tb.Unique([]int64{0, rows}, make([]int64, 2), make([]int64, 2)); !errors.As(err, &ie) || !strings.Contains(err.Error(), "index 1 of 2") {
			t.Fatalf("rows %d: a row out of range: %v", rows, err)
		}
	}
}
