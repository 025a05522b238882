package launch

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"colo/ps/proto"
	"colo/transport/tcp"
)

// Ports are the data ports of a node, bound before it starts so that a
// port that is taken is an error naming the flag, not a failure deep in
// the start-up. Tune hands them to the node's TCP endpoints in order.
type Ports struct {
	mu    sync.Mutex
	addrs []string
	lns   []net.Listener // nil once handed out
	next  int
}

// Endpoints returns the number of data endpoints of a node of role: two
// for a machine (its server and its worker), one for a server or worker,
// none for the scheduler (it listens on --scheduler).
func Endpoints(role proto.Role) int {
	switch role {
	case proto.RoleMachine:
		return 2
	case proto.RoleServer, proto.RoleWorker:
		return 1
	}
	return 0
}

// ParsePortRange parses LO-HI (inclusive, 1 ≤ LO ≤ HI ≤ 65535).
func ParsePortRange(s string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(s, "-")
	if ok {
		lo, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			hi, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || lo < 1 || hi < lo || hi > 65535 {
		return 0, 0, fmt.Errorf("--port-range %q: want LO-HI with 1 ≤ LO ≤ HI ≤ 65535, such as 7100-7199", s)
	}
	return lo, hi, nil
}

// Listen binds the data ports of a node of role on host as c says:
// nothing to bind (nil, nil) without --port and --port-range, so the
// endpoints take any free port; with --port, Port and the ports after it,
// one per endpoint, each of which must be free; with --port-range, the
// first free ports of the range. An error names the flag, the port and
// why it could not be bound, or says how many ports the role needs when
// the range is too small.
func (c *ClusterFlags) Listen(host string, role proto.Role) (*Ports, error) {
	need := Endpoints(role)
	if need == 0 || c.Port == 0 && c.PortRange == "" {
		if c.Port < 0 {
			return nil, fmt.Errorf("--port %d: want a port in [1, 65535], or 0 for any", c.Port)
		}
		return nil, nil
	}
	if c.Port != 0 && c.PortRange != "" {
		return nil, fmt.Errorf("--port %d and --port-range %s: give one of them", c.Port, c.PortRange)
	}
	words := fmt.Sprintf("a %s needs %d", role, need)
	if need == 2 {
		words += " (its server and its worker)"
	}
	p := &Ports{}
	if c.Port != 0 {
		if c.Port < 1 || c.Port+need-1 > 65535 {
			return nil, fmt.Errorf("--port %d: want a port in [1, %d]; %s", c.Port, 65536-need, words)
		}
		for port := c.Port; port < c.Port+need; port++ {
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				p.Close()
				return nil, fmt.Errorf("--port %d: %s, and port %d cannot be bound: %v", c.Port, words, port, err)
			}
			p.add(ln)
		}
		return p, nil
	}
	lo, hi, err := ParsePortRange(c.PortRange)
	if err != nil {
		return nil, err
	}
	if hi-lo+1 < need {
		return nil, fmt.Errorf("--port-range %s has %d port(s), %s", c.PortRange, hi-lo+1, words)
	}
	var last error
	for port := lo; port <= hi && len(p.lns) < need; port++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		p.add(ln)
	}
	if len(p.lns) < need {
		p.Close()
		return nil, fmt.Errorf("--port-range %s on %s: %d of its ports free, %s (last: %v)", c.PortRange, host, len(p.lns), words, last)
	}
	return p, nil
}

// Tune returns a tcp.Config adjuster for node.TCP.Tune that gives each
// of the node's endpoints the next bound port, then calls next (which may
// be nil). The short-lived endpoint through which a node registers (a
// provisional id, which the scheduler dials back) takes the first port;
// once it has closed, the endpoint that comes next binds that port again.
// A nil Ports binds nothing and returns next.
func (p *Ports) Tune(next func(*tcp.Config)) func(*tcp.Config) {
	if p == nil {
		return next
	}
	return func(c *tcp.Config) {
		p.mu.Lock()
		i := 0
		if !proto.IsProvisional(c.ID) {
			i = p.next
			p.next++
		}
		if i < len(p.addrs) {
			if ln := p.lns[i]; ln != nil {
				c.Listener, p.lns[i] = ln, nil
			} else {
				c.Listener, c.Addr = nil, p.addrs[i]
			}
		}
		p.mu.Unlock()
		if next != nil {
			next(c)
		}
	}
}

// Addrs returns the bound addresses, in the order Tune hands them out.
func (p *Ports) Addrs() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.addrs...)
}

// Close closes the ports that Tune has not handed out (an endpoint
// closes its own); call it once the node has started.
func (p *Ports) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for i, ln := range p.lns {
		if ln != nil {
			errs = append(errs, ln.Close())
			p.lns[i] = nil
		}
	}
	return errors.Join(errs...)
}

func (p *Ports) add(ln net.Listener) {
	p.lns = append(p.lns, ln)
	p.addrs = append(p.addrs, ln.Addr().String())
}
