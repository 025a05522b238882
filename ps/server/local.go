package server

import (
	"colo/kv"
	"colo/ps/proto"
)

// PushLocal serves the sparse push of worker (the one in the server's
// process) on the caller's goroutine, as the loop serves the same
// request sent as a message from that worker (id, round and membership
// epoch in its header, no early acknowledgement: the values are the
// caller's until it returns): the same checks, clock, round aggregation
// (a BSP round's push is copied and held until the round completes),
// update rule, counters and replies. The replies it releases for other
// workers (a push that completes a BSP round releases theirs) are sent
// as the loop sends them; the one to this push is returned instead:
// answered tells that there is one, err its error. When there is none
// yet (a BSP round the other workers have not completed, a bounded
// delay's wait) the loop sends it as a message once released. ok is
// false, with nothing done, when the message path does more than serve
// the request: the server's ranges are replicated, the request is of
// another epoch, or the loop has not started or has returned.
//
// It holds the core while it changes the store, after the replies in
// flight that read the store are sent (as the loop's pushes that change
// it wait for them: Core.Changes).
func (s *Server) PushLocal(worker int, id uint64, round int64, epoch uint64, keys []uint64, vals []float32, lens []int32) (answered bool, err error, ok bool) {
	if s.rep != nil {
		return false, nil, false
	}
	s.serve.Lock()
	defer s.serve.Unlock()
	if epoch != s.epoch || s.conn == nil || s.stopped {
		return false, nil, false
	}
	req := Request{Worker: worker, ID: id, Cmd: proto.DataSparse, Round: round, Push: true, KV: kv.Batch{Keys: keys, Vals: vals, Lens: lens}}
	if s.core.Changes(req) {
		s.unview(s.conn)
	}
	replies := s.core.Handle(req, false)
	for _, r := range replies {
		if r.Worker == worker && !r.Evaluator && r.ID == id {
			answered, err = true, r.Err
			continue
		}
		if r.View {
			s.views.Go(func() { s.send(s.ctx, s.conn, r) })
		} else {
			s.send(s.ctx, s.conn, r)
		}
	}
	st := s.core.Stats()
	s.mu.Lock()
	s.stats = st
	s.mu.Unlock()
	return answered, err, true
}
