// Package cluster runs a whole parameter server in one process: a
// scheduler and k machines (a server and a worker each), or separate
// servers and workers, over the in-memory network or TCP on loopback. The
// nodes are the real ones (package ps/node), talking through the real
// transport; only the processes are shared. Tests, the demo and the
// examples use it.
//
// # Emulated networks
//
// Config.LinkBandwidth and Config.Bandwidth shape the traffic between
// machines. A host is machine i's server and worker (server i and worker
// i); with separate servers and workers every node is its own host,
// server rank r host r and worker rank r host S+r, S the number of
// servers. On the in-memory network the endpoints are placed on those
// hosts (mem.Network.SetHost): LinkBandwidth is each host's network
// interface, shared by its endpoints, egress and ingress, and Bandwidth
// the rate of each directed path between two hosts. The scheduler is on
// no host and exempt, so heartbeats and barriers never wait behind data.
// Over TCP the same model is built of the same wires (node.Rates):
// every endpoint of a host crosses its host's interface, each way, and
// the path to the other host (tcp.Config.Shared). Data messages take as
// long as the emulated link needs; only control messages are bounded by
// Timeout.
//
//	c, err := cluster.Start(ctx, cluster.DefaultConfig())
//	defer c.Close()
//	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
//		return w.Push(keys, vals).Wait()
//	})
package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"colo/ps/clock"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/sched"
	"colo/ps/server"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/transport"
	"colo/transport/mem"
	"colo/transport/tcp"
)

// Config configures a cluster.
type Config struct {
	// Machines, when positive, is the number of machines, each a server
	// and a worker; otherwise Servers and Workers run separately.
	Machines         int
	Servers, Workers int
	// Evaluators is the number of evaluators (proto.RoleEvaluator):
	// nodes that read the model while the workers train. They are on no
	// emulated machine: their own links are not limited, but on the
	// in-memory network what they pull leaves through the servers'
	// interfaces.
	Evaluators int
	// Network is what the nodes talk over: nil for a new in-memory
	// network (transport/mem) that the cluster shapes and closes;
	// node.Mem{Net} for an in-memory network of the caller's (shaped, not
	// closed), node.TCP{} for TCP on loopback (the cluster adds its token
	// and the emulated rates to each endpoint's Tune). Any other
	// node.Network is used as it is.
	Network node.Network
	// Mem configures the in-memory network Start makes when Network is
	// nil.
	Mem   mem.Config
	Token string
	// Table, NumKeys, Width and Clock are the job's (see sched.Config).
	Table   *route.Table
	NumKeys uint64
	Width   int
	Clock   clock.Config
	// Rule is the servers' update rule; nil for update.Sum.
	Rule update.Rule
	// Heartbeat and Timeout drive failure detection.
	Heartbeat, Timeout time.Duration
	// Replicas is the number of backups of each server's key ranges
	// (sched.Config.Replicas): a server node that fails (Close) is taken
	// over by its backup, and the job goes on.
	Replicas int
	// LinkBandwidth is the rate in bytes per second of each machine's
	// network interface, egress and ingress; 0 is unlimited. It is one
	// interface per machine, shared by the machine's endpoints and all
	// their links, on the in-memory network and over TCP alike
	// (node.Rates).
	LinkBandwidth float64
	// Bandwidth, when not nil, is the K×K matrix of the rates from
	// machine to machine (the diagonal unused), K the number of machines
	// (of nodes, with separate servers and workers: servers first). On
	// the in-memory network and over TCP each entry is a path shared by
	// the first machine's endpoints' links to the second's.
	Bandwidth *transport.Bandwidth
	// RandomBandwidth, when positive, gives every machine's network
	// interface a rate of sending drawn from [max/10, max] (as tc shapes
	// a host's egress; arrivals are not limited)
	// (transport.RandomRates with Seed), on the in-memory network;
	// BandwidthChange, when positive, draws them again every period
	// while the cluster runs (seed 002's changing network).
	RandomBandwidth float64
	BandwidthChange time.Duration
	Seed            uint64
	// Logf, when not nil, receives the nodes' log lines.
	Logf func(format string, args ...any)
	// OnTick, when not nil, is called from the scheduler's goroutine
	// after each of its ticks (sched.Config.OnTick): the clock its
	// failure timeout is counted on, which a loaded machine slows down
	// (a tick the scheduler is too late to take is skipped, not queued).
	OnTick func()
}

// DefaultConfig returns two machines on the in-memory network with BSP,
// a 50 ms heartbeat and a 1 s timeout.
func DefaultConfig() Config {
	return Config{
		Machines: 2, Mem: mem.DefaultConfig(), Token: "colo",
		Width: 1, Clock: clock.DefaultConfig(), Heartbeat: 50 * time.Millisecond, Timeout: time.Second,
	}
}

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	if c.Machines < 0 {
		return fmt.Errorf("cluster: Machines %d is negative", c.Machines)
	}
	if c.Evaluators < 0 || c.Evaluators > proto.MaxEvaluators {
		return fmt.Errorf("cluster: Evaluators %d out of range [0, %d]", c.Evaluators, proto.MaxEvaluators)
	}
	if c.Machines == 0 && (c.Servers < 1 || c.Workers < 1) {
		return fmt.Errorf("cluster: Servers %d and Workers %d must be at least 1 without Machines", c.Servers, c.Workers)
	}
	if !(c.LinkBandwidth >= 0) || c.LinkBandwidth > maxRate {
		return fmt.Errorf("cluster: LinkBandwidth %v out of range [0, %g]", c.LinkBandwidth, maxRate)
	}
	if c.RandomBandwidth != 0 || c.BandwidthChange != 0 {
		switch {
		case !(c.RandomBandwidth > 0) || c.RandomBandwidth > maxRate:
			return fmt.Errorf("cluster: RandomBandwidth %v out of range (0, %g]", c.RandomBandwidth, maxRate)
		case c.BandwidthChange < 0:
			return fmt.Errorf("cluster: BandwidthChange %v is negative", c.BandwidthChange)
		case c.LinkBandwidth > 0 || c.Bandwidth != nil:
			return fmt.Errorf("cluster: RandomBandwidth excludes LinkBandwidth and Bandwidth")
		case c.Network != nil:
			if _, ok := c.Network.(node.Mem); !ok {
				return fmt.Errorf("cluster: RandomBandwidth needs the in-memory network")
			}
		}
	}
	if b := c.Bandwidth; b != nil {
		if k := c.hosts(); b.K != k {
			return fmt.Errorf("cluster: Bandwidth is %d×%d, want K = %d, the number of machines", b.K, b.K, k)
		}
		if len(b.Rates) != b.K*b.K {
			return fmt.Errorf("cluster: Bandwidth has %d rates, want K×K = %d", len(b.Rates), b.K*b.K)
		}
		for i, r := range b.Rates {
			if !(r >= 0) || r > maxRate {
				return fmt.Errorf("cluster: Bandwidth rate %d→%d = %v out of range [0, %g]", i/b.K, i%b.K, r, maxRate)
			}
		}
	}
	return nil
}

// maxRate bounds rates in bytes per second.
const maxRate = 1e18

// hosts returns the number of machines: hosts of the emulated network.
func (c Config) hosts() int {
	if c.Machines > 0 {
		return c.Machines
	}
	return c.Servers + c.Workers
}

// hostOf returns the machine of a server or worker id: rank r for both
// roles of a machine; with separate roles server r is machine r and
// worker r machine Servers+r. The scheduler and provisional ids have
// none.
func (c Config) hostOf(id transport.NodeID) (int, bool) {
	role, rank := proto.Identify(id)
	switch {
	case role == proto.RoleServer:
		return rank, true
	case role == proto.RoleWorker && c.Machines > 0:
		return rank, true
	case role == proto.RoleWorker:
		return c.Servers + rank, true
	}
	return 0, false
}

// rates returns the emulated rate policy of TCP links: LinkBandwidth and
// Bandwidth between the machines hostOf says.
func (c Config) rates() node.Rates {
	return node.Rates{Link: c.LinkBandwidth, Matrix: c.Bandwidth, Host: c.hostOf}
}

// shapeMem places the endpoints on hosts and sets the interfaces and the
// paths between hosts.
func (c Config) shapeMem(net *mem.Network) error {
	ns, nw := c.sizes()
	for r := range ns {
		h, _ := c.hostOf(proto.ServerID(r))
		if err := net.SetHost(proto.ServerID(r), h); err != nil {
			return err
		}
	}
	for r := range nw {
		h, _ := c.hostOf(proto.WorkerID(r))
		if err := net.SetHost(proto.WorkerID(r), h); err != nil {
			return err
		}
	}
	net.SetHostExempt(proto.SchedulerID, true)
	k := c.hosts()
	if c.LinkBandwidth > 0 {
		for h := range k {
			if err := net.SetNIC(h, c.LinkBandwidth, c.LinkBandwidth); err != nil {
				return err
			}
		}
	}
	if c.RandomBandwidth > 0 {
		for h, r := range transport.RandomRates(k, c.RandomBandwidth, c.Seed, 0) {
			if err := net.SetNIC(h, r, 0); err != nil {
				return err
			}
		}
	}
	if b := c.Bandwidth; b != nil {
		for i := range k {
			for j := range k {
				if r := b.Rate(i, j); i != j && r > 0 {
					if err := net.SetHostLink(i, j, r); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// sizes returns the number of servers and workers.
func (c Config) sizes() (int, int) {
	if c.Machines > 0 {
		return c.Machines, c.Machines
	}
	return c.Servers, c.Workers
}

// Cluster is a running cluster.
type Cluster struct {
	cfg     Config
	sched   *sched.Scheduler
	servers []*node.Node // by server rank (a machine's node twice)
	workers []*node.Node // by worker rank
	evals   []*node.Node // by evaluator rank
	nodes   []*node.Node // every node once
	net     *mem.Network
	ownNet  bool // net was made by Start and is closed by Close
	// schedAddr is the scheduler's TCP address.
	schedAddr string
	once      sync.Once
	// epoch is the period of the changing network's rates; stop ends
	// its changes.
	mu    sync.Mutex
	epoch int
	stop  chan struct{}
}

// Start starts a scheduler and the nodes and returns once the job runs.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ns, nw := cfg.sizes()
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.NumEvaluators, sc.Token = ns, nw, cfg.Evaluators, cfg.Token
	sc.Table, sc.NumKeys, sc.Width, sc.Clock = cfg.Table, cfg.NumKeys, cfg.Width, cfg.Clock
	sc.Heartbeat, sc.Timeout, sc.Replicas = cfg.Heartbeat, cfg.Timeout, cfg.Replicas
	sc.OnTick = cfg.OnTick
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	network, err := c.network()
	if err != nil {
		return nil, err
	}
	sep, err := network.Listen(proto.SchedulerID, tcp.NewIdentity())
	if err != nil {
		c.Close()
		return nil, err
	}
	schedAddr := ""
	if _, ok := network.(node.Mem); !ok {
		schedAddr = sep.Addr()
	}
	s, err := sched.Start(sc, sep, cfg.Logf)
	if err != nil {
		sep.Close()
		c.Close()
		return nil, err
	}
	c.sched, c.schedAddr = s, schedAddr
	type spec struct {
		role proto.Role
		rank int
	}
	var specs []spec
	if cfg.Machines > 0 {
		for i := range cfg.Machines {
			specs = append(specs, spec{proto.RoleMachine, i})
		}
	} else {
		for i := range ns {
			specs = append(specs, spec{proto.RoleServer, i})
		}
		for i := range nw {
			specs = append(specs, spec{proto.RoleWorker, i})
		}
	}
	for i := range cfg.Evaluators {
		specs = append(specs, spec{proto.RoleEvaluator, i})
	}
	nodes := make([]*node.Node, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Go(func() {
			nc := node.DefaultConfig()
			nc.Role, nc.Rank, nc.Scheduler, nc.Token = sp.role, sp.rank, schedAddr, cfg.Token
			nc.NumServers, nc.NumWorkers = ns, nw
			nc.Network, nc.Rule, nc.Logf = network, cfg.Rule, cfg.Logf
			nc.Host = fmt.Sprintf("%s-%d", sp.role, sp.rank)
			nodes[i], errs[i] = node.Start(ctx, nc)
		})
	}
	wg.Wait()
	c.nodes = nodes
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	if cfg.BandwidthChange > 0 && c.net != nil {
		c.stop = make(chan struct{})
		go c.change()
	}
	c.servers, c.workers, c.evals = make([]*node.Node, ns), make([]*node.Node, nw), make([]*node.Node, cfg.Evaluators)
	for _, n := range nodes {
		srv, wrk := n.IDs()
		if srv != 0 {
			_, r := proto.Identify(srv)
			c.servers[r] = n
		}
		switch role, r := proto.Identify(wrk); role {
		case proto.RoleWorker:
			c.workers[r] = n
		case proto.RoleEvaluator:
			c.evals[r] = n
		}
	}
	return c, nil
}

// network returns the nodes' network of c.cfg, shaped: a new in-memory
// one (owned, closed by Close) when the configuration has none.
func (c *Cluster) network() (node.Network, error) {
	cfg := c.cfg
	switch n := cfg.Network.(type) {
	case nil:
		net, err := mem.New(cfg.Mem)
		if err != nil {
			return nil, err
		}
		c.net, c.ownNet = net, true
		if err := cfg.shapeMem(net); err != nil {
			c.Close()
			return nil, err
		}
		return node.Mem{Net: net}, nil
	case node.Mem:
		c.net = n.Net
		if err := cfg.shapeMem(n.Net); err != nil {
			return nil, err
		}
		return n, nil
	case node.TCP:
		if n.Token == "" {
			n.Token = cfg.Token
		}
		n.Tune = cfg.rates().Tune(n.Tune)
		if n.Logf == nil {
			n.Logf = cfg.Logf
		}
		return n, nil
	}
	return cfg.Network, nil
}

// change draws the interfaces' rates again every BandwidthChange until
// Close.
func (c *Cluster) change() {
	t := time.NewTicker(c.cfg.BandwidthChange)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		c.epoch++
		rates := transport.RandomRates(c.cfg.hosts(), c.cfg.RandomBandwidth, c.cfg.Seed, c.epoch)
		c.mu.Unlock()
		for h, r := range rates {
			c.net.SetNIC(h, r, 0)
		}
	}
}

// Rates returns the rates in bytes per second of the emulated links
// between machines now, Rates()[j][i] from machine j to machine i: the
// bandwidth matrix's, or, with interfaces (LinkBandwidth,
// RandomBandwidth), each machine's interface rate shared evenly by its
// links to the others (what the links carry when every machine sends to
// every other at once). 0 is unlimited; nil when nothing is emulated.
func (c *Cluster) Rates() [][]float64 {
	k := c.cfg.hosts()
	var nic []float64
	switch {
	case c.cfg.Bandwidth != nil:
		out := make([][]float64, k)
		for j := range k {
			out[j] = make([]float64, k)
			for i := range k {
				if i != j {
					out[j][i] = c.cfg.Bandwidth.Rate(j, i)
				}
			}
		}
		return out
	case c.cfg.RandomBandwidth > 0:
		c.mu.Lock()
		nic = transport.RandomRates(k, c.cfg.RandomBandwidth, c.cfg.Seed, c.epoch)
		c.mu.Unlock()
	case c.cfg.LinkBandwidth > 0:
		nic = slices.Repeat([]float64{c.cfg.LinkBandwidth}, k)
	default:
		return nil
	}
	out := make([][]float64, k)
	for j := range k {
		out[j] = make([]float64, k)
		for i := range k {
			if i != j && k > 1 {
				out[j][i] = nic[j] / float64(k-1)
			}
		}
	}
	return out
}

// SchedulerAddr returns the scheduler's TCP address, "" in memory.
func (c *Cluster) SchedulerAddr() string { return c.schedAddr }

// Scheduler returns the scheduler.
func (c *Cluster) Scheduler() *sched.Scheduler { return c.sched }

// Network returns the in-memory network, nil over TCP.
func (c *Cluster) Network() *mem.Network { return c.net }

// Nodes returns every node.
func (c *Cluster) Nodes() []*node.Node { return c.nodes }

// Worker returns the worker of rank r.
func (c *Cluster) Worker(r int) *worker.Worker { return c.workers[r].Worker() }

// WorkerNode returns the node of worker rank r.
func (c *Cluster) WorkerNode(r int) *node.Node { return c.workers[r] }

// Server returns the server of rank r.
func (c *Cluster) Server(r int) *server.Server { return c.servers[r].Server() }

// ServerNode returns the node of server rank r.
func (c *Cluster) ServerNode(r int) *node.Node { return c.servers[r] }

// Evaluator returns the node of evaluator rank r.
func (c *Cluster) Evaluator(r int) *node.Node { return c.evals[r] }

// NumWorkers returns the number of workers.
func (c *Cluster) NumWorkers() int { return len(c.workers) }

// Run runs fn on every worker concurrently, reports each worker's end to
// the scheduler (the evaluators' is their drivers') and returns the
// job's outcome: nil when every fn
// returned nil, otherwise the error that ended the job (a failing fn's,
// or a *proto.NodeError naming a failed node).
func (c *Cluster) Run(ctx context.Context, fn func(ctx context.Context, w *worker.Worker) error) error {
	var wg sync.WaitGroup
	for _, n := range c.workers {
		wg.Go(func() {
			err := fn(ctx, n.Worker())
			n.Finish(err)
		})
	}
	wg.Wait()
	return c.Wait()
}

// Wait waits for the job's end and returns the scheduler's verdict.
func (c *Cluster) Wait() error {
	err := c.sched.Wait()
	for _, n := range c.nodes {
		n.Wait()
	}
	return err
}

// Close stops every node and the scheduler and releases the network.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		if c.stop != nil {
			close(c.stop)
		}
		for _, n := range c.nodes {
			if n != nil {
				n.Close()
			}
		}
		if c.sched != nil {
			c.sched.Close()
		}
		if c.net != nil && c.ownNet {
			c.net.Close()
		}
	})
	return nil
}

// Stats returns the counters of every node.
func (c *Cluster) Stats() []node.Stats {
	out := make([]node.Stats, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Stats()
	}
	return out
}
