package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Early delivery. A Decoder set up with SetEarly delivers the frames it
// chooses as soon as their header, body and keys are read, with KV.Vals
// allocated but its content still arriving: the Decoder reads the values
// into KV.Vals when its next Decode starts, publishing after every read
// how many have arrived (Message.Arrived, Message.Await). The receiver
// can thus work on the first values, while they are still in cache,
// during the reading of the rest. The Decoder never waits for the
// receiver: a receiver that does not look at the values loses nothing.

// EarlyRead is the most bytes the Decoder asks for in one read of early
// values, so that the receiver sees them arrive in parts small enough to
// stay in a core's cache.
const EarlyRead = 128 << 10

// Arrival states.
const (
	arriving int32 = iota
	arrived
	broken
)

// arrival is the progress of the values of one early message, shared by
// the Decoder, which reads them, and the receiver.
type arrival struct {
	n     int          // values expected
	got   atomic.Int64 // bytes read so far
	state atomic.Int32 // arriving, arrived or broken; set after got
	err   error        // why the values broke off; set before state
	kick  chan struct{}
	// want is the bytes the receiver waits for (AwaitAtLeast): the
	// Decoder signals a read that leaves fewer without waking it.
	want atomic.Int64
}

// errDropped is the error of values that will never arrive because the
// Decoder stopped before reading them.
var errDropped = errors.New("values not read: the decoder stopped")

// signal wakes a receiver waiting for values, without ever waiting.
func (a *arrival) signal() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// end marks the values arrived (err nil) or broken off.
func (a *arrival) end(err error) {
	if err != nil {
		a.err = err
		a.state.Store(broken)
	} else {
		a.state.Store(arrived)
	}
	a.signal()
}

// progress returns how many whole values have arrived and whether the
// reading ended, with its error.
func (a *arrival) progress() (n int, ended bool, err error) {
	st := a.state.Load() // before got: once ended, got is final
	n = int(a.got.Load() / 4)
	switch st {
	case arrived:
		return a.n, true, nil
	case broken:
		return n, true, a.err
	}
	return n, false, nil
}

// Early reports whether m was delivered before its values were all read
// (see Decoder.SetEarly): KV.Vals has its length but only its first
// Arrived values are there. It stays true once they have arrived.
func (m *Message) Early() bool { return m.arrival != nil }

// Arrived returns how many of m's values have been read so far, without
// waiting: len(KV.Vals) for a message that was not delivered early. The
// error, when not nil, tells that the rest will never arrive: the link
// broke or closed.
func (m *Message) Arrived() (int, error) {
	a := m.arrival
	if a == nil {
		return len(m.KV.Vals), nil
	}
	n, _, err := a.progress()
	if err != nil {
		return n, fmt.Errorf("values of message %d from %d: %w", m.ID, m.Sender, err)
	}
	return n, nil
}

// Await waits until more than have of m's values have been read, or all
// of them, and returns how many have. It returns an error when the rest
// will never arrive or ctx ends first, with how many had arrived.
func (m *Message) Await(ctx context.Context, have int) (int, error) {
	a := m.arrival
	if a == nil {
		return len(m.KV.Vals), nil
	}
	for {
		n, ended, err := a.progress()
		if err != nil {
			return n, fmt.Errorf("values of message %d from %d: %w", m.ID, m.Sender, err)
		}
		if n > have || ended {
			return n, nil
		}
		select {
		case <-a.kick:
		case <-ctx.Done():
			return n, fmt.Errorf("waiting for the values of message %d from %d: %w", m.ID, m.Sender, context.Cause(ctx))
		}
	}
}

// AwaitAtLeast waits until at least want of m's values have been read,
// or all of them, and returns how many have, as Await does. The reader
// of the values wakes the caller only once they are there: a receiver
// that applies the values in parts asks for parts large enough to be
// worth a wake-up, instead of being woken by every read.
func (m *Message) AwaitAtLeast(ctx context.Context, want int) (int, error) {
	a := m.arrival
	if a == nil {
		return len(m.KV.Vals), nil
	}
	a.want.Store(4 * int64(min(want, a.n)))
	defer a.want.Store(0)
	for {
		n, ended, err := a.progress()
		if err != nil {
			return n, fmt.Errorf("values of message %d from %d: %w", m.ID, m.Sender, err)
		}
		if n >= want || ended {
			return n, nil
		}
		select {
		case <-a.kick:
		case <-ctx.Done():
			return n, fmt.Errorf("waiting for the values of message %d from %d: %w", m.ID, m.Sender, context.Cause(ctx))
		}
	}
}

// Complete waits until all of m's values have been read. After an error
// KV.Vals is incomplete.
func (m *Message) Complete(ctx context.Context) error {
	for have := 0; have < len(m.KV.Vals); {
		n, err := m.Await(ctx, have)
		if err != nil {
			return err
		}
		have = n
	}
	return nil
}

// settled reports whether m's values are all there, or will never be
// written to again.
func (m *Message) settled() bool {
	if m.arrival == nil {
		return true
	}
	_, ended, _ := m.arrival.progress()
	return ended
}

// SetEarly makes the Decoder deliver the frames for which choose returns
// true, given the header and the number of values, before their values
// are read (see Message.Early); frames with lengths, empty values or
// values that land in a berth are never delivered early, nor any on a
// big-endian host. The values are read when the next Decode starts, or by
// Finish.
func (d *Decoder) SetEarly(choose func(h *Header, nvals int) bool) {
	d.choose = choose
}

// Finish reads the rest of the values of the message that Decode
// delivered early last, if any; Decode calls it first. The receiver of
// that message sees the values arrive, and the error if the stream breaks
// off. A Decoder that will not be used again should be stopped with Stop.
func (d *Decoder) Finish() error {
	a := d.pending
	if a == nil {
		return nil
	}
	d.pending = nil
	b := d.early
	d.early = nil
	got := 0
	for got < len(b) {
		k, err := d.r.Read(b[got:min(len(b), got+EarlyRead)])
		got += k
		if k > 0 {
			a.got.Store(int64(got))
			if int64(got) >= a.want.Load() {
				a.signal()
			}
		}
		if err != nil && got < len(b) {
			err = fmt.Errorf("early values, %d of %d bytes read: %w", got, len(b), unexpected(err))
			a.end(err)
			return err
		}
	}
	a.end(nil)
	return nil
}

// Stop tells the receiver of the message delivered early last, if its
// values were not read, that they never will be.
func (d *Decoder) Stop() {
	if a := d.pending; a != nil {
		d.pending, d.early = nil, nil
		a.end(errDropped)
	}
}
