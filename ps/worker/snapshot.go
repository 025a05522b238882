package worker

import (
	"fmt"

	"colo/kv"
	"colo/ps/proto"
)

// SnapshotChunk bounds the keys of one DataSave or DataLoad message, so
// that a snapshot of a large store travels in frames of a sensible size.
const SnapshotChunk = 1 << 16

// Save returns the snapshot of server rank server's whole store (see
// package server, snapshot.go): every key it holds with its values and
// update rule states, asked for in chunks of SnapshotChunk keys and
// joined into one snapshot batch. It is for checkpoints: called between
// rounds, once every worker's pushes are acknowledged (a barrier after
// the round), the snapshot is of whole rounds; a server under BSP
// refuses it otherwise.
func (w *Worker) Save(server int) (kv.Batch, error) {
	var parts []kv.Batch
	for lo := uint64(0); ; lo += SnapshotChunk {
		var b kv.Batch
		if err := w.submit(&Op{kind: opSave, server: server, begin: lo, end: lo + SnapshotChunk, snap: &b}).Wait(); err != nil {
			return kv.Batch{}, fmt.Errorf("worker %d: snapshot of server %d from slot %d: %w", w.Rank(), server, lo, err)
		}
		parts = append(parts, b)
		if len(b.Keys) < SnapshotChunk {
			break
		}
	}
	if len(parts) == 1 {
		// One chunk: its arrays are the worker's own copy of the answer.
		if _, _, err := snapshotShape(parts[0], w.Width()); err != nil {
			return kv.Batch{}, fmt.Errorf("worker %d: snapshot of server %d: %w", w.Rank(), server, err)
		}
		return parts[0], nil
	}
	out, err := JoinSnapshots(parts, w.Width())
	if err != nil {
		return kv.Batch{}, fmt.Errorf("worker %d: snapshot of server %d: %w", w.Rank(), server, err)
	}
	return out, nil
}

// Capture is what SaveSince took of a server's store.
type Capture struct {
	// Batch is the snapshot: of the whole store, or of the slots written
	// since the capture of the base round when Changed is set.
	Batch   kv.Batch
	Changed bool
	// Slots is the store's slots, Marked the slots written since the
	// last capture (all of them, when the server kept no marks).
	Slots, Marked int
}

// SaveSince takes an incremental checkpoint's capture of server rank
// server's store after round: the slots written since its capture of
// round base, when the server's marks count from there and at most
// budget slots were written (base < 0: none), or else the whole store,
// as Save; then the server's marks start again from round (see package
// server, snapshot.go). It is called where Save is.
//
// A capture is a conversation with one server: its begin, its slots,
// its end. When the server fails during it and a backup takes its
// ranges over (replicated ranges; the worker sends the backup what the
// server did not answer), the backup, which did not see the begin,
// refuses the changed slots or the end. A capture that fails after a
// takeover of the server fell into it is taken again from its begin,
// whole (the backup keeps no marks), of the backup, which holds the
// store the server held after round: it restores the store the
// capture without the failure restores, and the backup's marks count
// from round on. Each try after the first follows a takeover
// during the one before, and is told to SetRetake's function first.
func (w *Worker) SaveSince(server, round, base, budget int) (Capture, error) {
	for {
		moves := w.moved(server)
		c, err := w.saveSince(server, round, base, budget)
		if err == nil || w.moved(server) == moves {
			return c, err
		}
		if w.retake != nil {
			w.retake(server, round, err)
		}
		base, budget = -1, 0
	}
}

// saveSince is one try of SaveSince.
func (w *Worker) saveSince(server, round, base, budget int) (Capture, error) {
	fail := func(what string, err error) (Capture, error) {
		return Capture{}, fmt.Errorf("worker %d: incremental snapshot of server %d: %s: %w", w.Rank(), server, what, err)
	}
	if round < 0 || budget < 0 {
		return fail("arguments", fmt.Errorf("round %d, budget %d", round, budget))
	}
	ask := func(keys ...uint64) (kv.Batch, error) {
		var b kv.Batch
		err := w.submit(&Op{kind: opSave, server: server, keys: keys, snap: &b}).Wait()
		return b, err
	}
	b, err := ask(proto.SaveBegin, uint64(base+1), uint64(budget), 0)
	if err != nil {
		return fail("begin", err)
	}
	if len(b.Keys) != 3 || b.Keys[0] > 1 || b.Keys[1] > 1<<62 || b.Keys[2] > b.Keys[1] {
		return fail("begin", fmt.Errorf("answered %v, want {changed, slots, marked}", b.Keys))
	}
	c := Capture{Changed: b.Keys[0] == 1, Slots: int(b.Keys[1]), Marked: int(b.Keys[2])}
	if !c.Changed {
		if c.Batch, err = w.Save(server); err != nil {
			return Capture{}, err
		}
	} else {
		var parts []kv.Batch
		for lo := 0; lo == 0 || lo < c.Slots; lo += SnapshotChunk {
			p, err := ask(proto.SaveChanged, uint64(lo), uint64(lo+SnapshotChunk), 0)
			if err != nil {
				return fail(fmt.Sprintf("slots from %d", lo), err)
			}
			parts = append(parts, p)
		}
		if len(parts) == 1 {
			// One chunk: its arrays are the worker's own copy of the answer.
			if _, _, err := snapshotShape(parts[0], w.Width()); err != nil {
				return fail("the changed slots", err)
			}
			c.Batch = parts[0]
		} else if c.Batch, err = JoinSnapshots(parts, w.Width()); err != nil {
			return fail("joining", err)
		}
	}
	if _, err := ask(proto.SaveEnd, uint64(round+1), 0, 0); err != nil {
		return fail("end", err)
	}
	return c, nil
}

// Load installs snapshot b, as Save returned it, on server rank server,
// in chunks of SnapshotChunk keys. It is for resuming from a checkpoint,
// before any push.
func (w *Worker) Load(server int, b kv.Batch) error {
	parts, err := SplitSnapshot(b, w.Width(), SnapshotChunk)
	if err != nil {
		return fmt.Errorf("worker %d: snapshot for server %d: %w", w.Rank(), server, err)
	}
	for i := range parts {
		if err := w.submit(&Op{kind: opLoad, server: server, snap: &parts[i]}).Wait(); err != nil {
			return fmt.Errorf("worker %d: loading a snapshot on server %d: %w", w.Rank(), server, err)
		}
	}
	return nil
}

// snapshotShape returns the values per array of snapshot b of a store of
// the given width (the sum of the lengths at width 0) and the number of
// arrays (values and rule states).
func snapshotShape(b kv.Batch, width int) (per, arrays int, err error) {
	per = len(b.Keys) * width
	if width == 0 {
		if len(b.Lens) != len(b.Keys) {
			return 0, 0, fmt.Errorf("%d lengths for %d keys", len(b.Lens), len(b.Keys))
		}
		for _, l := range b.Lens {
			if l < 0 {
				return 0, 0, fmt.Errorf("negative length %d", l)
			}
			per += int(l)
		}
	} else if b.Lens != nil {
		return 0, 0, fmt.Errorf("lengths in a snapshot of width %d", width)
	}
	if per == 0 {
		if len(b.Vals) != 0 {
			return 0, 0, fmt.Errorf("%d values for keys without values", len(b.Vals))
		}
		return 0, 0, nil
	}
	if len(b.Vals)%per != 0 || len(b.Vals) == 0 {
		return 0, 0, fmt.Errorf("%d values are not whole arrays of %d", len(b.Vals), per)
	}
	return per, len(b.Vals) / per, nil
}

// JoinSnapshots joins snapshots of consecutive slots of one store of the
// given width into one snapshot: keys and lengths one after another, and
// each array (values, then each rule state) one after another.
func JoinSnapshots(parts []kv.Batch, width int) (kv.Batch, error) {
	arrays, total := 0, 0
	for i, p := range parts {
		per, a, err := snapshotShape(p, width)
		if err != nil {
			return kv.Batch{}, fmt.Errorf("part %d: %w", i, err)
		}
		if per > 0 {
			if arrays > 0 && a != arrays {
				return kv.Batch{}, fmt.Errorf("part %d has %d arrays, the earlier %d", i, a, arrays)
			}
			arrays = a
		}
		total += per
	}
	out := kv.Batch{Keys: []uint64{}, Vals: make([]float32, 0, arrays*total)}
	if width == 0 {
		out.Lens = []int32{}
	}
	for _, p := range parts {
		out.Keys = append(out.Keys, p.Keys...)
		out.Lens = append(out.Lens, p.Lens...)
	}
	for a := range arrays {
		for _, p := range parts {
			per := len(p.Vals) / arrays
			out.Vals = append(out.Vals, p.Vals[a*per:(a+1)*per]...)
		}
	}
	return out, nil
}

// SplitSnapshot cuts snapshot b of a store of the given width into
// snapshots of at most chunk keys each (one, possibly empty, at least).
func SplitSnapshot(b kv.Batch, width, chunk int) ([]kv.Batch, error) {
	per, arrays, err := snapshotShape(b, width)
	if err != nil {
		return nil, err
	}
	if chunk < 1 {
		return nil, fmt.Errorf("chunk %d, at least 1", chunk)
	}
	var out []kv.Batch
	vo := 0 // values of the keys before the chunk, per array
	for lo := 0; lo == 0 || lo < len(b.Keys); lo += chunk {
		hi := min(lo+chunk, len(b.Keys))
		p := kv.Batch{Keys: b.Keys[lo:hi]}
		n := (hi - lo) * width
		if width == 0 {
			p.Lens = b.Lens[lo:hi]
			n = 0
			for _, l := range p.Lens {
				n += int(l)
			}
		}
		p.Vals = make([]float32, 0, arrays*n)
		for a := range arrays {
			p.Vals = append(p.Vals, b.Vals[a*per+vo:a*per+vo+n]...)
		}
		vo += n
		out = append(out, p)
	}
	return out, nil
}
