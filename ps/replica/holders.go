package replica

import "slices"

// Holders follows which server process serves each rank's key ranges,
// and which hold copies of them, as failovers move them and new backups
// are made, so that a launcher decides about a server process that died
// as the scheduler does (ps/sched, Failover):
//
//   - every rank it serves (its own, and those it took over) has a copy
//     on a live server process: the first of them takes the rank over,
//     and the job goes on without it (FailOver);
//   - its own rank has none left, and it served no other: the scheduler
//     waits for a replacement in its rank, and the job rolls back, or
//     ends (Replace);
//   - it served the ranges of a server that failed before, and they have
//     no live copy: they have no process to replace, so the whole job
//     restarts, or ends (Restart).
//
// A rank's copies are at first its Chain; a failover drops the copies
// the dead process held and those of the ranges it served (they followed
// it), and a new copy counts once the scheduler reported it in place
// (BackedUp), as the scheduler counts it. It holds no process: the
// launcher reports the failovers it saw (FailedOver), the replacements
// it started (Replaced) and the new copies the scheduler reported
// (BackedUp). Decide, FailedOver and Replaced are O(servers × r) for r
// copies a rank.
type Holders struct {
	replicas int
	// holder[i] is the rank whose process serves rank i's ranges.
	holder []int
	// copies[i] are the ranks whose processes hold a live copy of rank
	// i's ranges, the first to take them over first.
	copies [][]int
	// early[i] are new copies of rank i's ranges reported while it had
	// all its copies: made after a death not told yet (see BackedUp).
	early [][]int
}

// Outcome is what the death of a server process leads to (Decide).
type Outcome int

// The outcomes of Decide.
const (
	FailOver Outcome = iota // its backup takes its ranges over
	Replace                 // a replacement in its rank, after a rollback
	Restart                 // the whole job
)

// NewHolders returns the holders of a job of servers servers with r
// backups each, every rank served by its own process and copied on its
// Chain.
func NewHolders(servers, r int) *Holders {
	h := &Holders{replicas: r, holder: make([]int, servers), copies: make([][]int, servers), early: make([][]int, servers)}
	for i := range h.holder {
		h.holder[i] = i
		h.copies[i] = Chain(i, servers, r, nil)
	}
	return h
}

// Decide returns what the death of server p's process leads to and, for
// FailOver, the backup that takes its own ranges over (-1 otherwise). It
// returns Replace for a rank out of range or whose process died before.
func (h *Holders) Decide(p int) (Outcome, int) {
	if p < 0 || p >= len(h.holder) || h.holder[p] != p {
		return Replace, -1
	}
	for q, o := range h.holder {
		if o == p && q != p && h.backup(q, p) < 0 {
			return Restart, -1
		}
	}
	if b := h.backup(p, p); b >= 0 {
		return FailOver, b
	}
	for q, o := range h.holder {
		if o == p && q != p {
			// Its own rank is replaced and rolled back, but the
			// ranges it took over have copies: the scheduler has no
			// rule for both at once.
			return Restart, -1
		}
	}
	return Replace, -1
}

// backup returns the first copy of rank q's ranges on a live process
// other than dead's, -1 if none.
func (h *Holders) backup(q, dead int) int {
	for _, b := range h.copies[q] {
		if b != dead && h.holder[b] == b {
			return b
		}
	}
	return -1
}

// FailedOver records that backup b's process serves p's ranges, p's
// process having died: the other ranks it served go to their first live
// copies (as Decide found them), and every copy it held, or that followed
// a rank it served, is dropped.
func (h *Holders) FailedOver(p, b int) {
	if p < 0 || p >= len(h.holder) {
		return
	}
	for q, o := range h.holder {
		if o == p && q != p {
			h.holder[q] = h.backup(q, p)
			h.copies[q] = nil
		}
	}
	h.holder[p], h.copies[p] = b, nil
	for q := range h.copies {
		h.copies[q] = slices.DeleteFunc(h.copies[q], func(c int) bool { return c == p })
	}
	h.settle()
}

// settle counts the copies reported early whose ranges now have fewer
// copies than r, and drops those whose process died.
func (h *Holders) settle() {
	for p, bs := range h.early {
		kept := bs[:0]
		for _, b := range bs {
			switch {
			case h.holder[b] != b || h.holder[p] == b || slices.Contains(h.copies[p], b):
			case len(h.copies[p]) < h.replicas:
				h.copies[p] = InRing(p, len(h.holder), append(h.copies[p], b))
			default:
				kept = append(kept, b)
			}
		}
		h.early[p] = kept
	}
}

// BackedUp records that the process of rank b holds a new copy of rank
// p's ranges, made after a failover (the scheduler's proto.CmdBackedUp):
// it takes them over if their server dies. A report about a rank out of
// range changes nothing.
//
// The scheduler asks for a copy only of ranges with fewer than r copies,
// on a process that holds none, so a report about ranges that have all
// theirs here, or this one, follows a death
// that the launcher was not told yet (it reads the scheduler's lines and
// the processes' exits apart: the copy of a failed server's ranges made
// once its backup took them over can be read before its exit). Such a
// copy counts once that death is told (FailedOver), as it does for the
// scheduler; before, the failover dropped it as a copy that followed
// the dead process.
func (h *Holders) BackedUp(p, b int) {
	if p < 0 || p >= len(h.copies) || b < 0 || b >= len(h.copies) || b == p {
		return
	}
	if len(h.copies[p]) >= h.replicas || slices.Contains(h.copies[p], b) {
		if !slices.Contains(h.early[p], b) {
			h.early[p] = append(h.early[p], b)
		}
		return
	}
	h.copies[p] = InRing(p, len(h.copies), append(h.copies[p], b))
}

// Replaced records that the process of rank q, whose death Decide said
// is replaced, was (a rollback), as the scheduler counts it: the copies
// its process held died with it, the new process holds the copies of a
// start (q is back in the copies of the ranks whose Chain it is in and
// that their own process serves), and q's ranges have the copies of a
// start on the processes of its Chain that serve their own rank: a
// process that failed over before holds none (the scheduler asks for
// new copies once the job resumes, told by BackedUp). The ranges whose
// copies the dead process held beyond those (new copies made after a
// failover) keep it: their servers go on replicating to the
// replacement, which keeps a copy of them. Before, a copy the dead process held was still
// counted, and the death of the process serving the ranges it copied
// was taken for a failover where the scheduler paused the job for a
// replacement. A rank out of range changes nothing.
func (h *Holders) Replaced(q int) {
	if q < 0 || q >= len(h.holder) {
		return
	}
	n := len(h.holder)
	var counted []int // the ranges replicated to q's process, which go on being so to the replacement
	for p := range h.copies {
		if p != q && h.holder[p] != q && slices.Contains(h.copies[p], q) {
			counted = append(counted, p)
		}
		h.copies[p] = slices.DeleteFunc(h.copies[p], func(b int) bool { return b == q })
		h.early[p] = slices.DeleteFunc(h.early[p], func(b int) bool { return b == q })
	}
	h.early[q] = nil
	own := func(b int) bool { return h.holder[b] == b }
	h.holder[q] = q
	h.copies[q] = slices.DeleteFunc(Chain(q, n, h.replicas, nil), func(b int) bool { return !own(b) })
	for p := range h.copies {
		if p != q && own(p) && slices.Contains(Chain(p, n, h.replicas, nil), q) || slices.Contains(counted, p) {
			h.copies[p] = InRing(p, n, append(h.copies[p], q))
		}
	}
}
