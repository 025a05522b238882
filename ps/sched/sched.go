package sched

import (
	"context"
	"errors"
	"sync"
	"time"

	"colo/ps/internal/mailbox"
	"colo/ps/proto"
	"colo/transport"
)

// peerSetter is implemented by endpoints that need peers' addresses
// (tcp.Endpoint).
type peerSetter interface {
	SetPeer(id transport.NodeID, addr string)
}

// keyed is implemented by endpoints that authenticate members with link
// keys (tcp.Endpoint; PublicKey is nil without an identity).
type keyed interface {
	PublicKey() []byte
	SetPeerKey(id transport.NodeID, pub []byte) error
}

// Scheduler drives a Core over an endpoint: one goroutine reads the
// endpoint, its link failures and a heartbeat ticker, feeds the Core and
// posts what it returns.
type Scheduler struct {
	core   *Core
	ep     transport.Endpoint
	out    *mailbox.Outbox
	logf   func(format string, args ...any)
	cancel context.CancelFunc
	done   chan struct{}
	// started is closed once the job runs (Running).
	started chan struct{}

	mu      sync.Mutex
	err     error
	running bool
	// startedSet records that started is closed.
	startedSet bool
	peers      int
}

// Start runs a scheduler on ep, whose id must be proto.SchedulerID, until
// the job ends or Close; logf, when not nil, receives refusals and
// failures.
func Start(cfg Config, ep transport.Endpoint, logf func(format string, args ...any)) (*Scheduler, error) {
	core, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if k, ok := ep.(keyed); ok && k.PublicKey() != nil {
		core.SetKey(k.PublicKey())
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{core: core, ep: ep, out: mailbox.NewOutbox(ep, cfg.Timeout), logf: logf, cancel: cancel, done: make(chan struct{}), started: make(chan struct{})}
	go s.run(ctx, cfg.Heartbeat)
	return s, nil
}

// ErrClosed is the result of a scheduler closed before its job ended.
var ErrClosed = errors.New("sched: closed before the job ended")

func (s *Scheduler) run(ctx context.Context, period time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	ps, _ := s.ep.(peerSetter)
	ks, _ := s.ep.(keyed)
	var outs []Out
	for {
		select {
		case m, ok := <-s.ep.Recv():
			if !ok {
				s.finish(ErrClosed)
				return
			}
			outs = s.core.Handle(m)
			m.Release()
		case pe, ok := <-s.ep.Down():
			if !ok {
				s.finish(ErrClosed)
				return
			}
			outs = s.core.Down(pe)
		case e := <-s.out.Errors():
			outs = s.core.SendFailed(e.To, e.Err)
		case <-tick.C:
			outs = s.core.Tick()
			if s.core.cfg.OnTick != nil {
				s.core.cfg.OnTick()
			}
		case <-ctx.Done():
			s.finish(ErrClosed)
			return
		}
		ended, err := s.core.Ended()
		if ended && s.core.cfg.OnEnd != nil {
			s.core.cfg.OnEnd(err)
		}
		for id, key := range s.core.Keys() {
			if ks == nil {
				continue
			}
			if err := ks.SetPeerKey(id, key); err != nil {
				s.logf("scheduler: %s: %v", proto.Name(id), err)
			}
		}
		for _, o := range outs {
			if o.Addr != "" && ps != nil {
				ps.SetPeer(o.To, o.Addr)
			}
			s.out.Post(o.To, o.M)
		}
		for _, l := range s.core.Logs() {
			s.logf("scheduler: %s", l)
		}
		for _, p := range s.core.Pauses() {
			if s.core.cfg.OnPause != nil {
				s.core.cfg.OnPause(p)
			}
		}
		for _, b := range s.core.BackedUp() {
			if s.core.cfg.OnBackedUp != nil {
				s.core.cfg.OnBackedUp(b)
			}
		}
		s.mu.Lock()
		s.running = s.core.Running()
		if s.running && !s.startedSet {
			s.startedSet = true
			close(s.started)
		}
		s.mu.Unlock()
		if ended {
			// Deliver the last words (Shutdown or Abort) before leaving.
			s.out.Flush(s.core.cfg.Timeout)
			s.finish(err)
			return
		}
	}
}

// finish records the job's result.
func (s *Scheduler) finish(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// Running reports whether every node is ready and the job started.
func (s *Scheduler) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Started returns a channel closed once every node is ready and the job
// runs; it stays open when the job ends before that.
func (s *Scheduler) Started() <-chan struct{} { return s.started }

// Done returns a channel closed when the job ended.
func (s *Scheduler) Done() <-chan struct{} { return s.done }

// Wait blocks until the job ends and returns nil when every worker
// finished, or the error that ended it, usually a *proto.NodeError
// naming the failed node.
func (s *Scheduler) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the scheduler (if the job is still running its result is
// ErrClosed) and closes its endpoint.
func (s *Scheduler) Close() error {
	s.cancel()
	<-s.done
	s.out.Close()
	return s.ep.Close()
}
