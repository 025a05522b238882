package launch

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"colo/ps/proto"
	"colo/transport"
	"colo/transport/tcp"
)

// nodeFlagSet is the part of colo node's flags that Resolve fills.
type nodeFlagSet struct {
	fs                     *flag.FlagSet
	cl                     ClusterFlags
	role, scheduler, host  string
	servers, workers, rank int
	token                  string
}

func newNodeFlagSet(t *testing.T, args ...string) *nodeFlagSet {
	t.Helper()
	n := &nodeFlagSet{fs: flag.NewFlagSet("node", flag.ContinueOnError)}
	n.fs.SetOutput(io.Discard)
	n.fs.StringVar(&n.role, "role", "", "")
	n.fs.StringVar(&n.scheduler, "scheduler", "", "")
	n.fs.StringVar(&n.host, "host", "", "")
	n.fs.IntVar(&n.servers, "num-servers", 0, "")
	n.fs.IntVar(&n.workers, "num-workers", 0, "")
	n.fs.IntVar(&n.rank, "rank", -1, "")
	n.fs.StringVar(&n.token, "token", "", "")
	n.cl.Register(n.fs)
	if err := n.fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return n
}

// resolve runs FromEnv and Resolve over env, as colo node does.
func (n *nodeFlagSet) resolve(env map[string]string) error {
	getenv := func(k string) string { return env[k] }
	if err := FromEnv(n.fs, getenv); err != nil {
		return err
	}
	return n.cl.Resolve(n.fs, getenv)
}

func (n *nodeFlagSet) String() string {
	return n.role + " rank " + strconv.Itoa(n.rank) + " of " + strconv.Itoa(n.servers) + "s/" + strconv.Itoa(n.workers) +
		"w, scheduler " + n.scheduler + ", host " + n.host
}

var dmlcWorker = map[string]string{
	"DMLC_ROLE": "worker", "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": "9091",
	"DMLC_NUM_SERVER": "2", "DMLC_NUM_WORKER": "3", "COLO_TOKEN": "t",
}

func with(env map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

// TestResolve walks the sources of each setting: the DMLC variables, the
// launchers' ranks, the command line and COLO_* over both, and the
// address a node advertises. Every expected line was worked out by hand
// from the rules in the ClusterFlags doc.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"dmlc worker", nil, dmlcWorker, "worker rank -1 of 2s/3w, scheduler 127.0.0.1:9091, host 127.0.0.1"},
		{"dmlc server, node host", nil, with(dmlcWorker, "DMLC_ROLE", "server", "DMLC_NODE_HOST", "127.0.0.5"),
			"server rank -1 of 2s/3w, scheduler 127.0.0.1:9091, host 127.0.0.5"},
		{"dmlc scheduler on loopback", nil, with(dmlcWorker, "DMLC_ROLE", "scheduler"),
			"scheduler rank -1 of 2s/3w, scheduler 127.0.0.1:9091, host "},
		{"dmlc scheduler behind a service name", nil, with(dmlcWorker, "DMLC_ROLE", "scheduler", "DMLC_PS_ROOT_URI", "colo-scheduler"),
			"scheduler rank -1 of 2s/3w, scheduler :9091, host "},
		{"dmlc worker task", nil, with(dmlcWorker, "DMLC_TASK_ID", "2"), "worker rank 2 of 2s/3w, scheduler 127.0.0.1:9091, host 127.0.0.1"},
		{"dmlc server task after the workers", nil, with(dmlcWorker, "DMLC_ROLE", "server", "DMLC_TASK_ID", "4"),
			"server rank 1 of 2s/3w, scheduler 127.0.0.1:9091, host 127.0.0.1"},
		{"dmlc task under --rank", []string{"--rank", "0"}, with(dmlcWorker, "DMLC_TASK_ID", "2"), "worker rank 0 of 2s/3w, scheduler 127.0.0.1:9091, host 127.0.0.1"},
		{"dmlc scheduler takes no task", nil, with(dmlcWorker, "DMLC_ROLE", "scheduler", "DMLC_TASK_ID", "0"),
			"scheduler rank -1 of 2s/3w, scheduler 127.0.0.1:9091, host "},
		{"dmlc interface", nil, with(dmlcWorker, "DMLC_INTERFACE", "lo"),
			"worker rank -1 of 2s/3w, scheduler 127.0.0.1:9091, host 127.0.0.1"},
		{"flags and COLO_ over dmlc", []string{"--role", "machine", "--host", "127.0.0.9"}, with(dmlcWorker, "COLO_NUM_SERVERS", "4"),
			"machine rank -1 of 4s/3w, scheduler 127.0.0.1:9091, host 127.0.0.9"},
		{"open mpi machines", nil, map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
			"machine rank 1 of 3s/3w, scheduler 127.0.0.1:7070, host 127.0.0.1"},
		{"open mpi rank 0", nil, map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
			"scheduler rank -1 of 3s/3w, scheduler 127.0.0.1:7070, host "},
		{"open mpi server", nil, map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "5", "OMPI_COMM_WORLD_LOCAL_SIZE": "5",
			"COLO_NUM_SERVERS": "2", "COLO_NUM_WORKERS": "2", "COLO_SCHEDULER": "127.0.0.1:7111"},
			"server rank 1 of 2s/2w, scheduler 127.0.0.1:7111, host 127.0.0.1"},
		{"open mpi worker", []string{"--num-servers", "2", "--num-workers", "2"}, map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "5", "OMPI_COMM_WORLD_LOCAL_SIZE": "5"},
			"worker rank 0 of 2s/2w, scheduler 127.0.0.1:7070, host 127.0.0.1"},
		{"pmi on several hosts, rank 0 named", []string{"--scheduler", "127.0.0.1:7200"}, map[string]string{"PMI_RANK": "0", "PMI_SIZE": "3", "MPI_LOCALNRANKS": "1"},
			"scheduler rank -1 of 2s/2w, scheduler 127.0.0.1:7200, host "},
		{"pmi rank 0 of a named host", []string{"--scheduler", "head:7200"}, map[string]string{"PMI_RANK": "0", "PMI_SIZE": "3", "MPI_LOCALNRANKS": "1"},
			"scheduler rank -1 of 2s/2w, scheduler :7200, host "},
		{"slurm on several nodes", []string{"--host", "10.1.2.3"}, map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "3", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "node[07-08]"},
			"machine rank 1 of 2s/2w, scheduler node07:7070, host 10.1.2.3"},
		{"slurm step nodelist first", []string{"--host", "10.1.2.3"}, map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "3", "SLURM_NNODES": "2",
			"SLURM_STEP_NODELIST": "gpu[3,5]", "SLURM_JOB_NODELIST": "node[07-08]"},
			"machine rank 0 of 2s/2w, scheduler gpu3:7070, host 10.1.2.3"},
		{"open mpi wins over slurm", nil, map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
			"SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
			"machine rank 0 of 1s/1w, scheduler 127.0.0.1:7070, host 127.0.0.1"},
		{"a role given: no launcher", []string{"--role", "worker", "--scheduler", "127.0.0.1:7000"}, map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4"},
			"worker rank -1 of 0s/0w, scheduler 127.0.0.1:7000, host 127.0.0.1"},
		{"plain flags", []string{"--role", "server", "--scheduler", "127.0.0.1:7000", "--interface", "lo"}, nil,
			"server rank -1 of 0s/0w, scheduler 127.0.0.1:7000, host 127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNodeFlagSet(t, c.args...)
			if err := n.resolve(c.env); err != nil {
				t.Fatal(err)
			}
			if got := n.String(); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestResolveErrors: every bad environment is an error that names the
// variable or flag, never a node on loopback.
func TestResolveErrors(t *testing.T) {
	ompi := func(rank, size, local string) map[string]string {
		return map[string]string{"OMPI_COMM_WORLD_RANK": rank, "OMPI_COMM_WORLD_SIZE": size, "OMPI_COMM_WORLD_LOCAL_SIZE": local}
	}
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"partial dmlc", nil, with(dmlcWorker, "DMLC_PS_ROOT_PORT", "", "DMLC_NUM_WORKER", ""),
			[]string{"incomplete", "DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_NUM_SERVER set", "not DMLC_PS_ROOT_PORT, DMLC_NUM_WORKER"}},
		{"dmlc role alone", nil, map[string]string{"DMLC_ROLE": "worker"}, []string{"DMLC_ROLE set but not DMLC_PS_ROOT_URI"}},
		{"dmlc bad role", nil, with(dmlcWorker, "DMLC_ROLE", "boss"), []string{`DMLC_ROLE="boss"`, "unknown role"}},
		{"dmlc bad port", nil, with(dmlcWorker, "DMLC_PS_ROOT_PORT", "70000"), []string{`DMLC_PS_ROOT_PORT="70000"`}},
		{"dmlc bad count", nil, with(dmlcWorker, "DMLC_NUM_SERVER", "0"), []string{`DMLC_NUM_SERVER="0"`}},
		{"dmlc bad task", nil, with(dmlcWorker, "DMLC_TASK_ID", "w1"), []string{`DMLC_TASK_ID="w1"`}},
		{"dmlc missing interface", nil, with(dmlcWorker, "DMLC_INTERFACE", "nosuch0"), []string{"DMLC_INTERFACE", `no network interface "nosuch0"`, "lo"}},
		{"missing interface", []string{"--interface", "nosuch0"}, dmlcWorker, []string{"--interface", `"nosuch0"`}},
		{"no role", []string{"--scheduler", "127.0.0.1:7000"}, nil, []string{"--role", "DMLC_ROLE", "mpirun"}},
		{"no scheduler", []string{"--role", "worker"}, nil, []string{"--scheduler", "DMLC_PS_ROOT_URI"}},
		{"several hosts, no scheduler", nil, ompi("1", "4", "2"), []string{"--scheduler", "Open MPI", "4 ranks"}},
		{"bad rank", nil, ompi("x", "4", "4"), []string{`OMPI_COMM_WORLD_RANK="x"`}},
		{"rank out of range", nil, ompi("4", "4", "4"), []string{"OMPI_COMM_WORLD_RANK=4 out of range", "OMPI_COMM_WORLD_SIZE=4"}},
		{"one rank", nil, ompi("0", "1", "1"), []string{"OMPI_COMM_WORLD_SIZE=1"}},
		{"sizes do not add up", []string{"--num-servers", "2", "--num-workers", "3"}, ompi("1", "5", "5"),
			[]string{"OMPI_COMM_WORLD_SIZE=5", "2 servers and 3 workers are 6 ranks"}},
		{"servers without workers", []string{"--num-servers", "2"}, ompi("1", "5", "5"), []string{"--num-servers 2 and --num-workers 0", "both"}},
		{"slurm bad size", nil, map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "many"}, []string{`SLURM_NTASKS="many"`}},
		{"scheduler without a port", []string{"--role", "worker", "--scheduler", "10.0.0.1"}, nil, []string{"--scheduler", "missing port", `"10.0.0.1"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNodeFlagSet(t, c.args...)
			err := n.resolve(c.env)
			if err == nil {
				t.Fatalf("no error; resolved %s", n)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestFirstHost(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{"node07", "node07"},
		{"node[07-09,12],gpu1", "node07"},
		{"gpu1,node[07-09]", "gpu1"},
		{"n[5,7]", "n5"},
		{"rack[2-3]n[01-04]", "rack2n01"},
		{"", ""},
		{"node[", ""},
		{"node[]", ""},
		{"a]b", ""},
	} {
		if got := FirstHost(c.list); got != c.want {
			t.Errorf("FirstHost(%q) = %q, want %q", c.list, got, c.want)
		}
	}
}

// FuzzFirstHost: any list gives a host without list syntax, and never
// panics.
func FuzzFirstHost(f *testing.F) {
	for _, s := range []string{"node[07-09,12],gpu1", "a[1-2]b[3]", "x[", "]", "[[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		if h := FirstHost(list); strings.ContainsAny(h, "[],") {
			t.Errorf("FirstHost(%q) = %q", list, h)
		}
	})
}

func TestInterfaceAddr(t *testing.T) {
	if a, err := InterfaceAddr("lo"); err != nil || a != "127.0.0.1" {
		t.Errorf("lo: %q, %v", a, err)
	}
	if _, err := InterfaceAddr("nosuch0"); err == nil || !strings.Contains(err.Error(), "lo") {
		t.Errorf("nosuch0: %v, want the list of interfaces", err)
	}
}

// freePorts returns n consecutive free loopback ports, or skips.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 20; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := base+n <= 65535
		var lns []net.Listener
		for p := base; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Skip("no run of free ports")
	return 0
}

// portTaken reports whether text (a process's standard error, or an
// error quoting it) says that the loopback port could not be bound
// because another socket had it: the race of a port that freePorts found
// free and a process bound a moment later.
func portTaken(text string, port int) bool {
	return strings.Contains(text, "listen tcp 127.0.0.1:"+strconv.Itoa(port)+": bind: address already in use")
}

// startScheduler starts on sup the scheduler that spec(port) describes,
// on a port that freePorts found free, and returns the port and the
// address the scheduler printed. Another process can take
// the port before the scheduler binds it: the scheduler then fails
// saying so (portTaken), which is logged and tried again on other ports,
// up to 5 times; any other failure fails the test.
func startScheduler(ctx context.Context, t *testing.T, sup *Supervisor, spec func(port int) Spec) (int, string) {
	t.Helper()
	for try := 1; ; try++ {
		port := freePorts(t, 1)
		addr, err := sup.StartScheduler(ctx, spec(port))
		if err == nil {
			return port, addr
		}
		if !portTaken(err.Error(), port) || try == 5 {
			t.Fatal(err)
		}
		t.Logf("port %d was taken before the scheduler bound it; another port: %v", port, err)
	}
}

// TestPorts binds a machine's two data ports from --port and
// --port-range, hands them to the endpoints in order (the registration
// endpoint borrowing the first), and refuses a range too small, a port
// taken and both flags at once.
//
// The ports are ones freePorts found free, which another process can
// take while the test runs: a bind that fails saying so (portTaken),
// and a port of the range skipped because another socket has it, are
// logged and the test runs again on other ports, up to 5 times; any
// other failure fails the test.
func TestPorts(t *testing.T) {
	for try := 1; ; try++ {
		base := freePorts(t, 4)
		err := portsOn(t, base)
		if err == nil {
			return
		}
		if !portTakenIn(err.Error(), base, 4) || try == 5 {
			t.Fatal(err)
		}
		t.Logf("a port of %d-%d was taken by another socket while the test ran; other ports: %v", base, base+3, err)
	}
}

// portTakenIn reports whether text says that one of the n loopback
// ports from base was taken by another socket (portTaken).
func portTakenIn(text string, base, n int) bool {
	for port := base; port < base+n; port++ {
		if portTaken(text, port) {
			return true
		}
	}
	return false
}

// portsOn runs TestPorts's checks on the four ports from base, failing
// t on a wrong result; it returns the error of a bind that failed, and,
// when the machine's range skipped a port it should have had, the error
// of binding that port again: a port another socket took fails saying
// so (portTaken).
func portsOn(t *testing.T, base int) error {
	t.Helper()
	p := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	c := ClusterFlags{PortRange: strconv.Itoa(base) + "-" + strconv.Itoa(base+3)}
	// Take the range's first port: the machine gets the next two.
	busy, err := net.Listen("tcp", p(base))
	if err != nil {
		return err
	}
	defer busy.Close()
	ports, err := c.Listen("127.0.0.1", proto.RoleMachine)
	if err != nil {
		return err
	}
	defer ports.Close()
	if got := strings.Join(ports.Addrs(), " "); got != p(base+1)+" "+p(base+2) {
		for _, want := range []int{base + 1, base + 2} {
			if !slices.Contains(ports.Addrs(), p(want)) {
				ln, err := net.Listen("tcp", p(want))
				if err != nil {
					return fmt.Errorf("the machine's ports are %s, not %s and %s: %w", got, p(base+1), p(base+2), err)
				}
				ln.Close()
			}
		}
		t.Fatalf("ports %s, want %s and %s", got, p(base+1), p(base+2))
	}
	var tuned []string
	tune := ports.Tune(func(c *tcp.Config) { tuned = append(tuned, "next") })
	listen := func(id transport.NodeID) (string, error) {
		cfg := tcp.DefaultConfig()
		cfg.ID = id
		tune(&cfg)
		ep, err := tcp.Listen(cfg)
		if err != nil {
			return "", fmt.Errorf("%s: %w", proto.Name(id), err)
		}
		defer ep.Close()
		return ep.Addr().String(), nil
	}
	for _, e := range []struct {
		id   transport.NodeID
		want int
	}{{proto.Provisional(7), base + 1}, {proto.ServerID(0), base + 1}, {proto.WorkerID(0), base + 2}} {
		// The server binds again the port the registration endpoint
		// closed: another socket may have taken it in between.
		a, err := listen(e.id)
		if err != nil {
			return err
		}
		if a != p(e.want) {
			t.Errorf("%s on %s, want %s", proto.Name(e.id), a, p(e.want))
		}
	}
	if len(tuned) != 3 {
		t.Errorf("next called %d times, want 3", len(tuned))
	}
	if err := ports.Close(); err != nil {
		t.Error(err)
	}

	for _, bad := range []struct {
		c    ClusterFlags
		role proto.Role
		want string
	}{
		{ClusterFlags{PortRange: strconv.Itoa(base+1) + "-" + strconv.Itoa(base+1)}, proto.RoleMachine, "has 1 port(s), a machine needs 2 (its server and its worker)"},
		{ClusterFlags{PortRange: strconv.Itoa(base) + "-" + strconv.Itoa(base)}, proto.RoleWorker, "0 of its ports free, a worker needs 1"},
		{ClusterFlags{Port: base}, proto.RoleServer, "port " + strconv.Itoa(base) + " cannot be bound"},
		{ClusterFlags{Port: base + 1, PortRange: "1-2"}, proto.RoleServer, "give one of them"},
		{ClusterFlags{PortRange: "7200:7300"}, proto.RoleServer, `--port-range "7200:7300"`},
		{ClusterFlags{PortRange: "7300-7200"}, proto.RoleServer, "LO ≤ HI"},
		{ClusterFlags{Port: 65535}, proto.RoleMachine, "--port 65535"},
	} {
		if ports, err := bad.c.Listen("127.0.0.1", bad.role); err == nil || !strings.Contains(err.Error(), bad.want) {
			ports.Close()
			t.Errorf("%+v as %s: %v, want %q", bad.c, bad.role, err, bad.want)
		}
	}
	// --port for a server: exactly that port; nothing for the scheduler.
	ports, err = (&ClusterFlags{Port: base + 3}).Listen("127.0.0.1", proto.RoleServer)
	if err != nil {
		return err
	}
	if got := strings.Join(ports.Addrs(), " "); got != p(base+3) {
		t.Errorf("--port %d: %s", base+3, got)
	}
	ports.Close()
	if ports, err := (&ClusterFlags{Port: base}).Listen("", proto.RoleScheduler); ports != nil || err != nil {
		t.Errorf("scheduler: %v %v, want no ports", ports.Addrs(), err)
	}
	return nil
}
