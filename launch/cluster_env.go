package launch

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"colo/ps/proto"
)

// DefaultSchedulerPort is the port of the scheduler that an MPI or Slurm
// job derives when no --scheduler names one.
const DefaultSchedulerPort = 7070

// ClusterFlags are the flags of colo node that place it on a cluster's
// network: the interface whose address it binds and advertises, and the
// ports of its data endpoints (a firewall opens those). Register adds
// them to a flag set; after the command line and FromEnv, Resolve fills
// what is still missing from a launcher's environment and Listen binds the
// data ports.
//
// Where a setting comes from, the first that has it wins:
//
//  1. the command line (--role, --scheduler, --host, …);
//  2. COLO_* variables (FromEnv);
//  3. ps-lite's DMLC_* variables, as dmlc-submit, dmlc-tracker and
//     Kubernetes operators written for ps-lite set them: DMLC_ROLE,
//     DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER and
//     DMLC_NUM_WORKER (all five or none), DMLC_TASK_ID (the rank: worker
//     i is task i, server i task W+i, as dmlc-core's trackers number
//     them), DMLC_NODE_HOST and DMLC_INTERFACE;
//  4. an MPI or Slurm launcher's rank and size (see Launcher), when no
//     role is given: rank 0 is the scheduler, the others servers and
//     workers or machines;
//  5. for the address a node advertises (--host), the address of this
//     host's interface on the route to the scheduler: on one host that is
//     127.0.0.1, on a cluster the interface that reaches the scheduler's
//     host.
//
// Nothing falls back to loopback silently: a partial DMLC environment, an
// interface that does not exist or has no address, a port range too small
// for the node's endpoints, a multi-host MPI job without the scheduler's
// address, all are errors that name the variable or flag.
type ClusterFlags struct {
	// Interface names the network interface whose address the node binds
	// and advertises (--interface), instead of --host.
	Interface string
	// Port is the first port of the node's data endpoints (--port): a
	// server or a worker takes Port, a machine Port and Port+1. 0: any.
	Port int
	// PortRange is LO-HI (--port-range): each data endpoint takes the
	// first free port of the range, inclusive.
	PortRange string
	// Standby is a scheduler's standby: --standby, --takeover and
	// --scheduler-identity.
	Standby StandbyFlags
}

// Register adds --interface, --port and --port-range to fs, and a
// scheduler's StandbyFlags.
func (c *ClusterFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Interface, "interface", "", "bind and advertise the address of this network interface, such as eth0 (DMLC_INTERFACE)")
	fs.IntVar(&c.Port, "port", 0, "data port of a server or worker; a machine takes it and the next (0: any free port)")
	fs.StringVar(&c.PortRange, "port-range", "", "LO-HI: data ports from this range, each endpoint the first free one (for firewalled clusters)")
	c.Standby.Register(fs)
}

// The DMLC variables that must come together.
var dmlcCore = []string{"DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER"}

// flags wraps a flag set with what was set before Resolve.
type flags struct {
	fs  *flag.FlagSet
	set map[string]bool
}

func (f flags) get(name string) string {
	if fl := f.fs.Lookup(name); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// fill sets flag name to v unless the command line or the environment
// did; from names the source in an error.
func (f flags) fill(name, v, from string) error {
	if f.set[name] {
		return nil
	}
	if f.fs.Lookup(name) == nil {
		return fmt.Errorf("launch: the flag set has no --%s", name)
	}
	if err := f.fs.Set(name, v); err != nil {
		return fmt.Errorf("%s=%q: %v", from, v, err)
	}
	f.set[name] = true
	return nil
}

// Resolve fills the flags role, scheduler, num-servers, num-workers, rank
// and host of fs (colo node's) that the command line and FromEnv left
// unset, from the DMLC variables or an MPI or Slurm launcher, as the
// ClusterFlags doc says, and resolves --interface to --host. Call it
// after FromEnv. An error names the variable or flag and what it wanted.
func (c *ClusterFlags) Resolve(fs *flag.FlagSet, getenv func(string) string) error {
	f := flags{fs: fs, set: map[string]bool{}}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	// The host this node binds, when something names it.
	iface, ifaceFrom := c.Interface, "--interface"
	if !f.set["interface"] && iface == "" && getenv("DMLC_INTERFACE") != "" {
		iface, ifaceFrom = getenv("DMLC_INTERFACE"), "DMLC_INTERFACE"
	}
	if !f.set["host"] {
		var host, from string
		switch {
		case getenv("DMLC_NODE_HOST") != "":
			host, from = getenv("DMLC_NODE_HOST"), "DMLC_NODE_HOST"
		case iface != "":
			a, err := InterfaceAddr(iface)
			if err != nil {
				return fmt.Errorf("%s: %w", ifaceFrom, err)
			}
			host, from = a, ifaceFrom
		}
		if host != "" {
			if err := f.fill("host", host, from); err != nil {
				return err
			}
		}
	}
	dmlc, err := dmlcEnv(getenv)
	if err != nil {
		return err
	}
	switch {
	case dmlc != nil:
		if err := dmlc.fill(f); err != nil {
			return err
		}
	case !f.set["role"]:
		l, err := DetectLauncher(getenv)
		if err != nil {
			return err
		}
		if l != nil {
			if err := l.fill(f); err != nil {
				return err
			}
		}
	}
	if !f.set["role"] {
		return errors.New("--role (or COLO_ROLE, or DMLC_ROLE) is required, unless mpirun or srun starts the node")
	}
	if f.get("scheduler") == "" {
		return errors.New("--scheduler (or COLO_SCHEDULER, or DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT) is required")
	}
	if err := CheckSchedulerAddr(f.get("scheduler")); err != nil {
		return err
	}
	if f.get("role") != proto.RoleScheduler.String() && f.get("host") == "" {
		host, err := RouteAddr(f.get("scheduler"))
		if err != nil {
			return fmt.Errorf("--host: %w; set --host or --interface", err)
		}
		if err := f.fill("host", host, "the route to --scheduler"); err != nil {
			return err
		}
	}
	return nil
}

// dmlc is a complete DMLC environment.
type dmlc struct {
	role, uri, port string
	servers         int
	workers         int
	// task is DMLC_TASK_ID, −1 when unset.
	task int
}

// dmlcEnv reads the DMLC variables: nil when none of the core five is set,
// an error naming the missing ones when only some are, or one that is not
// a number.
func dmlcEnv(getenv func(string) string) (*dmlc, error) {
	var have, missing []string
	for _, k := range dmlcCore {
		if getenv(k) != "" {
			have = append(have, k)
		} else {
			missing = append(missing, k)
		}
	}
	if len(have) == 0 {
		return nil, nil
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the DMLC environment is incomplete: %s set but not %s (ps-lite's launchers set all of %s)",
			strings.Join(have, ", "), strings.Join(missing, ", "), strings.Join(dmlcCore, ", "))
	}
	d := &dmlc{role: strings.ToLower(getenv("DMLC_ROLE")), uri: getenv("DMLC_PS_ROOT_URI"), port: getenv("DMLC_PS_ROOT_PORT"), task: -1}
	if t := getenv("DMLC_TASK_ID"); t != "" {
		v, err := strconv.Atoi(t)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("DMLC_TASK_ID=%q: want a task number of at least 0", t)
		}
		d.task = v
	}
	if _, err := proto.ParseRole(d.role); err != nil {
		return nil, fmt.Errorf("DMLC_ROLE=%q: %v", getenv("DMLC_ROLE"), err)
	}
	if p, err := strconv.Atoi(d.port); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("DMLC_PS_ROOT_PORT=%q: want a port in [1, 65535]", d.port)
	}
	for _, n := range []struct {
		k string
		v *int
	}{{"DMLC_NUM_SERVER", &d.servers}, {"DMLC_NUM_WORKER", &d.workers}} {
		v, err := strconv.Atoi(getenv(n.k))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%s=%q: want a count of at least 1", n.k, getenv(n.k))
		}
		*n.v = v
	}
	return d, nil
}

// fill sets the flags a DMLC environment gives: the role, the counts, and
// the scheduler's address; the scheduler listens on the root port of its
// own --host, or of every interface.
func (d *dmlc) fill(f flags) error {
	if err := f.fill("role", d.role, "DMLC_ROLE"); err != nil {
		return err
	}
	if err := f.fill("num-servers", strconv.Itoa(d.servers), "DMLC_NUM_SERVER"); err != nil {
		return err
	}
	if err := f.fill("num-workers", strconv.Itoa(d.workers), "DMLC_NUM_WORKER"); err != nil {
		return err
	}
	if d.task >= 0 && d.role != proto.RoleScheduler.String() && !f.set["rank"] {
		// dmlc-core's trackers number the workers 0…W−1 and the servers
		// W…W+S−1.
		rank := d.task
		if d.role == proto.RoleServer.String() && rank >= d.workers {
			rank -= d.workers
		}
		if err := f.fill("rank", strconv.Itoa(rank), "DMLC_TASK_ID"); err != nil {
			return err
		}
	}
	addr := net.JoinHostPort(d.uri, d.port)
	if f.get("role") == proto.RoleScheduler.String() {
		addr = net.JoinHostPort(schedulerBind(f.get("host"), d.uri), d.port)
	}
	return f.fill("scheduler", addr, "DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT")
}

// schedulerBind is the host a scheduler started by a launcher listens on:
// its own --host when it has one; the scheduler's address when that is a
// loopback address (a job on one host); otherwise every interface, since a
// name such as a Kubernetes Service's may not be an address of this host.
func schedulerBind(host, uri string) string {
	if host != "" {
		return host
	}
	if ip := net.ParseIP(uri); ip != nil && ip.IsLoopback() || uri == "localhost" {
		return uri
	}
	return ""
}

// Launcher is the rank and size that an MPI or Slurm launcher gives a
// process in its environment, and what it says about the job's hosts.
type Launcher struct {
	// Name names the launcher: "Open MPI", "PMI" (MPICH, Intel MPI and
	// others through Hydra) or "Slurm".
	Name string
	// RankVar and SizeVar name the variables Rank and Size came from.
	RankVar, SizeVar string
	Rank, Size       int
	// OneHost is set when the launcher says every rank runs on this host.
	OneHost bool
	// FirstHost is the host of rank 0 when the launcher names it (Slurm:
	// the first node of SLURM_STEP_NODELIST or SLURM_JOB_NODELIST); empty
	// otherwise.
	FirstHost string
}

// DetectLauncher reads the rank and size that mpirun or srun give a
// process, the first of Open MPI's OMPI_COMM_WORLD_RANK and
// OMPI_COMM_WORLD_SIZE (one host when OMPI_COMM_WORLD_LOCAL_SIZE equals
// the size), PMI_RANK and PMI_SIZE (one host when MPI_LOCALNRANKS does),
// and Slurm's SLURM_PROCID and SLURM_NTASKS (one host when SLURM_NNODES
// is 1; rank 0 on the first node of SLURM_STEP_NODELIST, or
// SLURM_JOB_NODELIST). It returns nil when none is set, and an error
// naming the variable when a rank or size is not a number or the rank is
// out of range.
func DetectLauncher(getenv func(string) string) (*Launcher, error) {
	for _, l := range []struct{ name, rank, size, local string }{
		{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"},
		{"Slurm", "SLURM_PROCID", "SLURM_NTASKS", ""},
	} {
		r, s := getenv(l.rank), getenv(l.size)
		if r == "" && s == "" {
			continue
		}
		out := &Launcher{Name: l.name, RankVar: l.rank, SizeVar: l.size}
		var err error
		if out.Rank, err = strconv.Atoi(r); err != nil {
			return nil, fmt.Errorf("%s=%q: want a rank (%s sets it beside %s)", l.rank, r, l.name, l.size)
		}
		if out.Size, err = strconv.Atoi(s); err != nil || out.Size < 1 {
			return nil, fmt.Errorf("%s=%q: want the number of ranks (%s sets it beside %s)", l.size, s, l.name, l.rank)
		}
		if out.Rank < 0 || out.Rank >= out.Size {
			return nil, fmt.Errorf("%s=%d out of range [0, %s=%d)", l.rank, out.Rank, l.size, out.Size)
		}
		if l.local != "" {
			out.OneHost = getenv(l.local) == s
		} else {
			out.OneHost = getenv("SLURM_NNODES") == "1" || getenv("SLURM_STEP_NUM_NODES") == "1"
			out.FirstHost = FirstHost(cmpOr(getenv("SLURM_STEP_NODELIST"), getenv("SLURM_JOB_NODELIST")))
		}
		return out, nil
	}
	return nil, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Roles returns the role and the server or worker rank of launcher rank
// r in a job of size ranks: rank 0 is the scheduler; with servers and
// workers (both positive) ranks 1…servers are servers and the next workers
// workers, which must add up to size−1; with neither (both 0) ranks 1…
// size−1 are machines. The error names the launcher's variables.
func (l *Launcher) Roles(servers, workers int) (role proto.Role, rank int, err error) {
	switch {
	case l.Size < 2:
		return 0, 0, fmt.Errorf("%s=%d: a job needs a scheduler and at least one more rank", l.SizeVar, l.Size)
	case servers == 0 && workers == 0:
		if l.Rank == 0 {
			return proto.RoleScheduler, -1, nil
		}
		return proto.RoleMachine, l.Rank - 1, nil
	case servers < 1 || workers < 1:
		return 0, 0, fmt.Errorf("--num-servers %d and --num-workers %d: under %s give both (then ranks 1… are the servers, then the workers) or neither (then ranks 1… are machines)", servers, workers, l.Name)
	case 1+servers+workers != l.Size:
		return 0, 0, fmt.Errorf("%s=%d, but a scheduler, %d servers and %d workers are %d ranks", l.SizeVar, l.Size, servers, workers, 1+servers+workers)
	case l.Rank == 0:
		return proto.RoleScheduler, -1, nil
	case l.Rank <= servers:
		return proto.RoleServer, l.Rank - 1, nil
	}
	return proto.RoleWorker, l.Rank - 1 - servers, nil
}

// fill sets the role, counts, rank and scheduler of the launcher's rank.
func (l *Launcher) fill(f flags) error {
	ns, _ := strconv.Atoi(f.get("num-servers"))
	nw, _ := strconv.Atoi(f.get("num-workers"))
	if !f.set["num-servers"] {
		ns = 0
	}
	if !f.set["num-workers"] {
		nw = 0
	}
	role, rank, err := l.Roles(ns, nw)
	if err != nil {
		return err
	}
	from := l.RankVar
	if ns == 0 && nw == 0 {
		for _, name := range []string{"num-servers", "num-workers"} {
			if err := f.fill(name, strconv.Itoa(l.Size-1), l.SizeVar); err != nil {
				return err
			}
		}
	}
	if err := f.fill("role", role.String(), from); err != nil {
		return err
	}
	if role != proto.RoleScheduler {
		if err := f.fill("rank", strconv.Itoa(rank), from); err != nil {
			return err
		}
	}
	if f.set["scheduler"] {
		if role == proto.RoleScheduler {
			// Listen on the named scheduler's port.
			host, port, err := net.SplitHostPort(f.get("scheduler"))
			if err != nil {
				return fmt.Errorf("--scheduler %q: %v", f.get("scheduler"), err)
			}
			f.set["scheduler"] = false
			return f.fill("scheduler", net.JoinHostPort(schedulerBind(f.get("host"), host), port), "--scheduler")
		}
		return nil
	}
	var host string
	switch {
	case l.OneHost:
		host = "127.0.0.1"
	case l.FirstHost != "":
		host = l.FirstHost
	default:
		return fmt.Errorf("--scheduler (or COLO_SCHEDULER) is required: %s says its %d ranks are not all on this host, and rank 0, the scheduler, is on one it does not name", l.Name, l.Size)
	}
	if role == proto.RoleScheduler {
		host = schedulerBind(f.get("host"), host)
	}
	return f.fill("scheduler", net.JoinHostPort(host, strconv.Itoa(DefaultSchedulerPort)), l.Name)
}

// FirstHost returns the first host of a Slurm host list such as
// "node[07-09,12],gpu1" ("node07"), with the zero padding of the range;
// "" for an empty or malformed list.
func FirstHost(list string) string {
	var b strings.Builder
	for i := 0; i < len(list); i++ {
		switch c := list[i]; c {
		case ',':
			return b.String()
		case '[':
			end := strings.IndexByte(list[i:], ']')
			if end < 0 {
				return ""
			}
			first := list[i+1 : i+end]
			if j := strings.IndexAny(first, ",-"); j >= 0 {
				first = first[:j]
			}
			if first == "" || strings.ContainsRune(first, '[') {
				return "" // an empty or nested bracket: not a node list
			}
			b.WriteString(first)
			i += end
		case ']':
			return ""
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// InterfaceAddr returns the first IPv4 address of the network interface
// name, or its first address of any kind; an error lists the interfaces
// there are when name is not one of them, or says it has no address.
func InterfaceAddr(name string) (string, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		var names []string
		if all, e := net.Interfaces(); e == nil {
			for _, i := range all {
				names = append(names, i.Name)
			}
		}
		return "", fmt.Errorf("no network interface %q (this host has %s)", name, strings.Join(names, ", "))
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return "", fmt.Errorf("interface %s: %v", name, err)
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
			ips = append(ips, n.IP)
		}
	}
	slices.SortStableFunc(ips, func(a, b net.IP) int {
		return boolInt(a.To4() == nil) - boolInt(b.To4() == nil)
	})
	if len(ips) == 0 {
		return "", fmt.Errorf("interface %s has no address", name)
	}
	return ips[0].String(), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CheckSchedulerAddr checks the form of the scheduler's address, HOST:PORT
// with a port of 0 to 65535 (0 only for a scheduler that picks its own),
// so that a mistake there is named as the scheduler's, not as the --host
// derived from it. The error names --scheduler and what it wanted.
func CheckSchedulerAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	var ae *net.AddrError
	switch {
	case errors.As(err, &ae):
		err = errors.New(ae.Err) // without the address, named below
	case err == nil:
		if _, perr := strconv.ParseUint(port, 10, 16); perr != nil {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		return fmt.Errorf("--scheduler %q: %v: want HOST:PORT, such as 10.0.0.1:7070", addr, err)
	}
	return nil
}

// RouteAddr returns the address of this host's interface on the route to
// the host of addr (host:port): the source address the kernel picks to
// reach it, found by connecting a UDP socket, which sends nothing.
func RouteAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("scheduler address %q: %v", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	c, err := net.Dial("udp", net.JoinHostPort(host, port))
	if err != nil {
		return "", fmt.Errorf("no route to the scheduler %s: %v", addr, err)
	}
	defer c.Close()
	ip := c.LocalAddr().(*net.UDPAddr).IP
	if ip.IsUnspecified() {
		return "", fmt.Errorf("no address on the route to the scheduler %s", addr)
	}
	return ip.String(), nil
}
