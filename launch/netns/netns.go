// Package netns builds a small emulated network out of Linux network
// namespaces, for running the nodes of a cluster as processes on separate
// "machines" of one host (launch.Netns starts processes in them): one
// namespace per machine, each joined by a veth pair to a bridge in a
// namespace of its own, with tc shaping the rate and delay of every
// machine's link. It needs root and the ip and tc tools (iproute2);
// Available says whether the host has them.
//
// Nothing is created in the host's own namespace: the bridge, the veth
// pairs and the addresses (10.213.0.0/24 by default) all live inside the
// namespaces, which Close deletes, taking their links with them.
//
//	n, err := netns.New(netns.Config{Machines: 3, Rate: "200mbit", Delay: time.Millisecond})
//	defer n.Close()
//	cmd := n.Command(1, "colo", "node", "--host", n.Addr(1), …)
package netns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Config describes the network.
type Config struct {
	// Machines is the number of machine namespaces.
	Machines int
	// Rate is the rate of every machine's link in tc's notation, such as
	// "1gbit"; empty for unshaped.
	Rate string
	// Delay is added to every packet leaving a machine.
	Delay time.Duration
	// Subnet is the first three octets of the machines' addresses;
	// machine i gets Subnet.(i+1)/24.
	Subnet string
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Machines < 1 || c.Machines > 200 {
		return fmt.Errorf("netns: Machines %d out of range [1, 200]", c.Machines)
	}
	if c.Delay < 0 {
		return fmt.Errorf("netns: Delay %v is negative", c.Delay)
	}
	if c.Subnet != "" && strings.Count(c.Subnet, ".") != 2 {
		return fmt.Errorf("netns: Subnet %q is not three octets such as 10.213.0", c.Subnet)
	}
	return nil
}

// Available reports why namespaces cannot be used here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("netns: not running as root")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("netns: %s not found (install iproute2)", tool)
		}
	}
	name := fmt.Sprintf("colo-probe-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("netns: cannot create a namespace: %v: %s", err, strings.TrimSpace(string(out)))
	}
	exec.Command("ip", "netns", "del", name).Run()
	return nil
}

// Net is a network of namespaces.
type Net struct {
	cfg      Config
	bridge   string
	machines []string
	shaping  string
}

// prefix starts the names of every namespace this package creates.
const prefix = "colo-ns-"

// New creates the network. On failure it removes what it created.
func New(cfg Config) (*Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Subnet == "" {
		cfg.Subnet = "10.213.0"
	}
	id := fmt.Sprintf("%s%d-%x", prefix, os.Getpid(), rand.Uint32())
	n := &Net{cfg: cfg, bridge: id + "-br"}
	fail := func(err error) (*Net, error) {
		n.Close()
		return nil, err
	}
	steps := [][]string{
		{"ip", "netns", "add", n.bridge},
		{"ip", "-n", n.bridge, "link", "set", "lo", "up"},
		{"ip", "-n", n.bridge, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", n.bridge, "link", "set", "br0", "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return fail(err)
		}
	}
	for i := range cfg.Machines {
		ns := fmt.Sprintf("%s-m%d", id, i)
		if err := run("ip", "netns", "add", ns); err != nil {
			return fail(err)
		}
		n.machines = append(n.machines, ns)
		port := "p" + strconv.Itoa(i)
		steps := [][]string{
			{"ip", "-n", ns, "link", "set", "lo", "up"},
			{"ip", "-n", n.bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"ip", "-n", n.bridge, "link", "set", port, "master", "br0"},
			{"ip", "-n", n.bridge, "link", "set", port, "up"},
			{"ip", "-n", ns, "addr", "add", n.Addr(i) + "/24", "dev", "eth0"},
			{"ip", "-n", ns, "link", "set", "eth0", "up"},
		}
		for _, s := range steps {
			if err := run(s...); err != nil {
				return fail(err)
			}
		}
		if err := n.shape(ns); err != nil {
			return fail(err)
		}
	}
	return n, nil
}

// shape installs the qdisc of a machine's link: netem with the delay and
// rate, or, on kernels without netem, tbf with the rate alone.
func (n *Net) shape(ns string) error {
	cfg := n.cfg
	if cfg.Rate == "" && cfg.Delay == 0 {
		return nil
	}
	tc := []string{"ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root"}
	netem := append(append([]string{}, tc...), "netem")
	if cfg.Delay > 0 {
		netem = append(netem, "delay", fmt.Sprintf("%dus", cfg.Delay.Microseconds()))
	}
	if cfg.Rate != "" {
		netem = append(netem, "rate", cfg.Rate)
	}
	err := run(netem...)
	if err == nil {
		n.shaping = strings.Join(netem[len(tc):], " ")
		return nil
	}
	if cfg.Rate == "" || !strings.Contains(err.Error(), "unknown") {
		return err
	}
	tbf := append(append([]string{}, tc...), "tbf", "rate", cfg.Rate, "burst", "64kb", "latency", "50ms")
	if err := run(tbf...); err != nil {
		return err
	}
	n.shaping = strings.Join(tbf[len(tc):], " ") + " (no netem: no delay)"
	return nil
}

// SetRate changes the rate of machine i's link to rate (tc's notation,
// such as "80mbit") while processes run: the qdisc is replaced in place
// (tc qdisc change), keeping the delay. The network must have been
// shaped (Config.Rate set).
func (n *Net) SetRate(i int, rate string) error {
	if i < 0 || i >= len(n.machines) {
		return fmt.Errorf("netns: machine %d out of range [0, %d)", i, len(n.machines))
	}
	if n.cfg.Rate == "" {
		return errors.New("netns: the links are not shaped: set Config.Rate to change rates")
	}
	tc := []string{"ip", "netns", "exec", n.machines[i], "tc", "qdisc", "change", "dev", "eth0", "root"}
	if strings.HasPrefix(n.shaping, "netem") {
		args := append(tc, "netem")
		if n.cfg.Delay > 0 {
			args = append(args, "delay", fmt.Sprintf("%dus", n.cfg.Delay.Microseconds()))
		}
		return run(append(args, "rate", rate)...)
	}
	return run(append(tc, "tbf", "rate", rate, "burst", "64kb", "latency", "50ms")...)
}

// Shaping describes the qdisc on every machine's link.
func (n *Net) Shaping() string { return n.shaping }

// run runs a command and returns its output in the error.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns: %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Addr returns the address of machine i.
func (n *Net) Addr(i int) string { return fmt.Sprintf("%s.%d", n.cfg.Subnet, i+1) }

// Machines returns the number of machine namespaces.
func (n *Net) Machines() int { return len(n.machines) }

// Namespace returns the name of machine i's namespace.
func (n *Net) Namespace(i int) string { return n.machines[i] }

// Command returns a command that runs name with args inside machine i's
// namespace.
func (n *Net) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.machines[i], name}, args...)...)
}

// TxBytes returns the bytes machine i has sent on its link (eth0's
// transmit counter in its namespace: every packet, headers included), the
// traffic between machines whatever program made it.
func (n *Net) TxBytes(i int) (uint64, error) {
	if i < 0 || i >= len(n.machines) {
		return 0, fmt.Errorf("netns: machine %d out of range [0, %d)", i, len(n.machines))
	}
	out, err := n.Command(i, "cat", "/sys/class/net/eth0/statistics/tx_bytes").Output()
	if err != nil {
		return 0, fmt.Errorf("netns: the transmit counter of %s: %w", n.machines[i], err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("netns: the transmit counter of %s: %q: %w", n.machines[i], out, err)
	}
	return v, nil
}

// Close deletes the namespaces, and with them their links. It returns
// the first error but tries them all.
func (n *Net) Close() error {
	var errs []error
	for _, ns := range append(n.machines, n.bridge) {
		if err := exec.Command("ip", "netns", "del", ns).Run(); err != nil {
			if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), ns) {
				errs = append(errs, fmt.Errorf("netns: delete %s: %w", ns, err))
			}
		}
	}
	n.machines = nil
	return errors.Join(errs...)
}

// Sweep deletes the namespaces left by processes of this package that
// died before closing them.
func Sweep() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(f[0], prefix), "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue // still running
		}
		exec.Command("ip", "netns", "del", f[0]).Run()
	}
}
