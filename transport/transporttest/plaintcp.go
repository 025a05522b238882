package transporttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Plain is the baseline that colo's transport and parameter server are
// compared with: bare loopback TCP connections between servers × workers
// goroutines, every worker connected to every server, carrying
// length-prefixed messages of fixed sizes read into reused buffers, with
// nothing decoded or applied. A round of a worker sends one request to
// every server at once and waits for every answer, as a parameter-server
// worker with one request in flight does.
type Plain struct {
	req, resp int
	quit      chan struct{}
	lns       []net.Listener
	workers   []*plainWorker
	// wg counts the servers' goroutines.
	wg sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// plainWorker is one worker's connections, one per server. The first is
// driven by Round's caller, the others by helper goroutines.
type plainWorker struct {
	out   []byte
	conns []net.Conn
	in    [][]byte
	kick  []chan struct{}
	done  chan error
	wg    sync.WaitGroup
}

// StartPlain connects workers × servers loopback TCP connections whose
// requests are req bytes and answers resp bytes (each at least the 4-byte
// length prefix). Close releases them.
func StartPlain(servers, workers, req, resp int) (*Plain, error) {
	if servers < 1 || workers < 1 {
		return nil, fmt.Errorf("plain tcp: %d servers × %d workers: want at least one of each", servers, workers)
	}
	if req < 4 || resp < 4 {
		return nil, fmt.Errorf("plain tcp: request of %d bytes, answer of %d: want at least the 4-byte prefix", req, resp)
	}
	p := &Plain{req: req, resp: resp, quit: make(chan struct{})}
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
		w := &plainWorker{out: out, done: make(chan error)}
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
func (p *Plain) serve(ln net.Listener) {
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
func (p *Plain) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// exchange sends the request on connection s and reads its answer.
func (w *plainWorker) exchange(s int) error {
	if _, err := w.conns[s].Write(w.out); err != nil {
		return fmt.Errorf("plain tcp: server %d: %w", s, err)
	}
	if _, err := io.ReadFull(w.conns[s], w.in[s]); err != nil {
		return fmt.Errorf("plain tcp: server %d: %w", s, err)
	}
	return nil
}

// errPlainClosed is the error of a round after Close.
var errPlainClosed = errors.New("plain tcp: closed")

// Round makes one round of worker w: its request to every server at once
// and every answer. Rounds of different workers may run concurrently; one
// worker's may not. Rounds in flight when Close is called fail, and so do
// later ones.
func (p *Plain) Round(w int) error {
	pw := p.workers[w]
	var err error
	kicked := 0
kick:
	for _, k := range pw.kick {
		select {
		case k <- struct{}{}:
			kicked++
		case <-p.quit:
			err = errPlainClosed
			break kick
		}
	}
	if err == nil {
		select {
		case <-p.quit:
			err = errPlainClosed
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
func (p *Plain) Close() {
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
func (p *Plain) Measure(d time.Duration) (rounds int, sec float64, err error) {
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

// PlainTCPRoundTrips runs b.N rounds on every worker of a servers ×
// workers Plain cluster at once and returns the seconds per round of one
// worker; the caller reports its own metrics from it. With 1 × 1 it is
// round trips of a req-byte request and a resp-byte answer over one
// connection.
func PlainTCPRoundTrips(b *testing.B, servers, workers, req, resp int) float64 {
	b.Helper()
	p, err := StartPlain(servers, workers, req, resp)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for i := range workers {
		if err := p.Round(i); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for range b.N {
				if err := p.Round(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	return b.Elapsed().Seconds() / float64(b.N)
}
