package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"colo/launch/netns"
)

// Spec is one process of a cluster.
type Spec struct {
	// Name names the process in every error and in Failure: "scheduler",
	// "machine 0", "server 1".
	Name string
	// Host is the host the process runs on: 0 for the scheduler, i+1 for
	// machine, server or worker i. The Starter maps it (Loopback ignores
	// it).
	Host int
	// Bin is the program to run; "" for the Supervisor's (the colo
	// binary).
	Bin string
	// Args are the arguments to the program.
	Args []string
	// Env holds extra KEY=VALUE pairs, added to the supervisor's
	// environment, from which every COLO_* and DMLC_* variable is removed.
	Env []string
	// Stdout keeps the process's standard output (its last
	// Supervisor.StdoutLimit bytes) for Proc.Stdout; otherwise it is
	// discarded.
	Stdout bool
	// Output, when set, also receives the process's standard output and
	// standard error as it writes them, from two goroutines at once (it
	// must be safe for that); the last lines of standard error are kept
	// for Failure all the same.
	Output io.Writer
}

// Starter makes the command of a process on its host. The Supervisor sets
// the command's environment, standard output and standard error; the
// Starter sets the rest (path, arguments, SysProcAttr).
type Starter interface {
	// Command returns the command that runs bin with s.Args on host
	// s.Host, killed when ctx is done. A host the starter does not have
	// gives a command whose Err is set, so that it fails to start.
	Command(ctx context.Context, bin string, s Spec) *exec.Cmd
	// Addr is the address processes on host listen on and advertise (colo
	// node --host).
	Addr(host int) string
	// SchedulerAddr is where the scheduler listens (colo node --scheduler
	// of the scheduler): a port of 0 lets it choose, and it prints the
	// one it chose.
	SchedulerAddr() string
	// Close releases what the starter holds (the namespaces of Netns).
	Close() error
}

// Loopback runs every process on this host: every host is 127.0.0.1 and
// the scheduler takes any free port. On Linux each child is killed when
// this process dies.
type Loopback struct{}

// Command returns bin with s.Args.
func (Loopback) Command(ctx context.Context, bin string, s Spec) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, s.Args...)
	dieWithParent(cmd)
	return cmd
}

// Addr returns 127.0.0.1.
func (Loopback) Addr(int) string { return "127.0.0.1" }

// SchedulerAddr returns 127.0.0.1:0.
func (Loopback) SchedulerAddr() string { return "127.0.0.1:0" }

// Close does nothing.
func (Loopback) Close() error { return nil }

// Netns runs host i in network namespace i of a netns.Net: the scheduler
// (host 0) and each machine on a "machine" of its own, joined to the
// others by a veth link that tc shapes. It needs root and iproute2
// (CheckNetns says what is missing). Close deletes the namespaces.
type Netns struct {
	net *netns.Net
}

// NewNetns creates hosts namespaces whose links tc shapes at rate, in
// tc's notation ("200mbit"; empty for unshaped). It first deletes the
// namespaces that launchers which died left behind (netns.Sweep).
func NewNetns(hosts int, rate string) (*Netns, error) {
	return NewNetnsConfig(netns.Config{Machines: hosts, Rate: rate})
}

// NewNetnsConfig is NewNetns with every setting of the network, such as
// the delay of each link.
func NewNetnsConfig(cfg netns.Config) (*Netns, error) {
	netns.Sweep()
	n, err := netns.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Netns{net: n}, nil
}

// SetRate changes the rate of host i's link to bytesPerSec while the
// cluster runs (netns.Net.SetRate).
func (n *Netns) SetRate(i int, bytesPerSec float64) error {
	return n.net.SetRate(i, fmt.Sprintf("%.0fbit", 8*bytesPerSec))
}

// Command returns `ip netns exec NS bin s.Args…` for the namespace of
// s.Host; ip executes bin in place, so the command's process is bin's.
func (n *Netns) Command(ctx context.Context, bin string, s Spec) *exec.Cmd {
	if s.Host < 0 || s.Host >= n.net.Machines() {
		cmd := exec.CommandContext(ctx, bin, s.Args...)
		cmd.Err = fmt.Errorf("host %d out of range [0, %d) of the namespaces", s.Host, n.net.Machines())
		return cmd
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.net.Namespace(s.Host), bin}, s.Args...)...)
	dieWithParent(cmd)
	return cmd
}

// Addr returns the address of host's namespace.
func (n *Netns) Addr(host int) string { return n.net.Addr(host) }

// SchedulerAddr returns port 7070 of host 0.
func (n *Netns) SchedulerAddr() string { return n.net.Addr(0) + ":7070" }

// Net returns the network, for its Shaping.
func (n *Netns) Net() *netns.Net { return n.net }

// Close deletes the namespaces.
func (n *Netns) Close() error { return n.net.Close() }

// CheckNetns says what this host lacks to run Netns: root, the ip and tc
// tools of iproute2 (with the apt-get line that installs them), or the
// right to create a namespace. It returns nil when nothing is missing.
func CheckNetns() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, fmt.Sprintf("root (running as uid %d)", os.Geteuid()))
	}
	var tools []string
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			tools = append(tools, tool)
		}
	}
	if len(tools) > 0 {
		missing = append(missing, fmt.Sprintf("iproute2 (%s not in PATH; apt-get install iproute2)", strings.Join(tools, " and ")))
	}
	if len(missing) > 0 {
		return fmt.Errorf("network namespaces need %s", strings.Join(missing, " and "))
	}
	return netns.Available()
}

// childEnv returns env without its COLO_* and DMLC_* variables (which
// colo node would read for what its flags leave unset), then extra.
func childEnv(env, extra []string) []string {
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "COLO_") && !strings.HasPrefix(kv, "DMLC_") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
