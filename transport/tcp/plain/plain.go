// Package plain is the plain-TCP reference that colo's transport and
// parameter server are measured against: bare loopback TCP connections
// carrying length-prefixed messages of fixed sizes, read into reused
// buffers, with nothing framed, decoded or applied. What it moves is what
// the machine's loopback gives at that moment; a colo figure divided by
// the plain one of the same shape and sizes is colo's efficiency.
//
// A Mesh is servers and workers, every worker connected to every server
// by its own connection. A round of a worker sends one request to every server at once
// and waits for every answer, as a parameter-server worker with one
// request in flight does:
//
//	m, err := plain.Start(2, 2, reqBytes, respBytes)
//	if err != nil { ... }
//	defer m.Close()
//	rounds, sec, err := m.Measure(time.Second) // sec: seconds per round of one worker
//
// `colo bench kv` runs one after each of its lines (plain_mb_per_s), and
// BenchmarkPlainTCP in transport/tcp and bench/kv runs one beside
// BenchmarkTCP and BenchmarkKV. A Mesh runs a goroutine per listener and
// per accepted connection on the servers' side, and one per connection
// after the first on each worker's; a round of a worker moves
// servers × (req + resp) bytes.
package plain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Mesh is a running plain-TCP cluster: servers × workers loopback
// connections, every worker connected to every server, carrying requests
// of one size and answers of another. Start makes one; Round and Measure
// drive it; Close releases it.
type Mesh struct {
	req, resp int
	quit      chan struct{}
	lns       []net.Listener
	workers   []*worker
	// wg counts the servers' goroutines.
	wg sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// worker is one worker's connections, one per server. The first is
// driven by Round's caller, the others by helper goroutines.
type worker struct {
	out   []byte
	conns []net.Conn
	in    [][]byte
	kick  []chan struct{}
	done  chan error
	wg    sync.WaitGroup
}

// Start connects workers × servers loopback TCP connections whose
// requests are req bytes and answers resp bytes, each counting its 4-byte
// little-endian length prefix, so each at least 4. Close releases them.
func Start(servers, workers, req, resp int) (*Mesh, error) {
	if servers < 1 || workers < 1 {
		return nil, fmt.Errorf("plain tcp: %d servers × %d workers: want at least one of each", servers, workers)
	}
	if req < 4 || resp < 4 {
		return nil, fmt.Errorf("plain tcp: request of %d bytes, answer of %d: want at least the 4-byte prefix", req, resp)
	}
	p := &Mesh{req: req, resp: resp, quit: make(chan struct{})}
	for range servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("plain tcp: %w", err)
		}
		p.lns = append(p.lns, ln)
		p.wg.Go(func() { p.serve(ln) })
	}
	out := make([]byte, req)
	binary.LittleEndian.PutUint32(out, uint32(req-4))
	for range workers {
		w := &worker{out: out, done: make(chan error)}
		p.workers = append(p.workers, w)
		for s, ln := range p.lns {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				p.Close()
				return nil, fmt.Errorf("plain tcp: server %d: %w", s, err)
			}
			p.track(c)
			w.conns = append(w.conns, c)
			w.in = append(w.in, make([]byte, resp))
			if s > 0 {
				kick := make(chan struct{})
				w.kick = append(w.kick, kick)
				w.wg.Go(func() {
					for {
						select {
						case <-kick:
							w.done <- w.exchange(s)
						case <-p.quit:
							return
						}
					}
				})
			}
		}
	}
	return p, nil
}

// serve accepts connections on ln and answers each request on them.
func (p *Mesh) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Go(func() {
			in, out := make([]byte, p.req), make([]byte, p.resp)
			binary.LittleEndian.PutUint32(out, uint32(p.resp-4))
			for {
				if _, err := io.ReadFull(c, in); err != nil {
					return
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		})
	}
}

// track remembers c for Close.
func (p *Mesh) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// exchange sends the request on connection s and reads its answer.
func (w *worker) exchange(s int) error {
	if _, err := w.conns[s].Write(w.out); err != nil {
		return fmt.Errorf("plain tcp: server %d: %w", s, err)
	}
	if _, err := io.ReadFull(w.conns[s], w.in[s]); err != nil {
		return fmt.Errorf("plain tcp: server %d: %w", s, err)
	}
	return nil
}

// errClosed is the error of a round after Close.
var errClosed = errors.New("plain tcp: closed")

// Round makes one round of worker w: its request to every server at once
// and every answer. Rounds of different workers may run concurrently; one
// worker's may not. Rounds in flight when Close is called fail, and so do
// later ones.
func (p *Mesh) Round(w int) error {
	pw := p.workers[w]
	var err error
	kicked := 0
kick:
	for _, k := range pw.kick {
		select {
		case k <- struct{}{}:
			kicked++
		case <-p.quit:
			err = errClosed
			break kick
		}
	}
	if err == nil {
		select {
		case <-p.quit:
			err = errClosed
		default:
			err = pw.exchange(0)
		}
	}
	for range kicked {
		err = errors.Join(err, <-pw.done)
	}
	return err
}

// Close closes every connection and listener and waits for the
// goroutines. Rounds in flight fail.
func (p *Mesh) Close() {
	select {
	case <-p.quit:
		return
	default:
	}
	close(p.quit)
	for _, ln := range p.lns {
		ln.Close()
	}
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	for _, w := range p.workers {
		w.wg.Wait()
	}
	p.wg.Wait()
}

// Measure runs rounds on every worker at once for about d, after one
// round each that warms the connections, and returns the rounds made and
// the seconds per round of one worker.
func (p *Mesh) Measure(d time.Duration) (rounds int, sec float64, err error) {
	counts := make([]int, len(p.workers))
	errs := make([]error, len(p.workers))
	var wg sync.WaitGroup
	for i := range p.workers {
		if err := p.Round(i); err != nil {
			return 0, 0, err
		}
	}
	begin := time.Now()
	for i := range p.workers {
		wg.Go(func() {
			for time.Since(begin) < d {
				if errs[i] = p.Round(i); errs[i] != nil {
					return
				}
				counts[i]++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin).Seconds()
	for i, c := range counts {
		if errs[i] != nil {
			return 0, 0, errs[i]
		}
		rounds += c
	}
	if rounds == 0 {
		return 0, 0, fmt.Errorf("plain tcp: no round completed in %v", d)
	}
	return rounds, elapsed * float64(len(p.workers)) / float64(rounds), nil
}
