package replica

// Holders follows which server process serves each rank's key ranges as
// failovers move them, so that a launcher decides about a server
// process that died as the scheduler does (ps/sched, Failover):
//
//   - the first of its backups (Chain) whose own process lives takes its
//     ranges over, and the job goes on without it (FailOver);
//   - none is left: the scheduler waits for a replacement in its rank,
//     and the job rolls back, or ends (Replace);
//   - its process also served the ranges of servers that failed before:
//     those have no live copy and no process to replace, so the whole
//     job restarts, or ends (Restart).
//
// It holds no process: the launcher reports the failovers it saw
// (FailedOver). Decide is O(servers).
type Holders struct {
	replicas int
	// holder[i] is the rank whose process serves rank i's ranges.
	holder []int
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
// backups each, every rank served by its own process.
func NewHolders(servers, r int) *Holders {
	h := &Holders{replicas: r, holder: make([]int, servers)}
	for i := range h.holder {
		h.holder[i] = i
	}
	return h
}

// Decide returns what the death of server p's process leads to and, for
// FailOver, the backup that takes its ranges over (-1 otherwise). It
// returns Replace for a rank out of range.
func (h *Holders) Decide(p int) (Outcome, int) {
	if p < 0 || p >= len(h.holder) {
		return Replace, -1
	}
	for q, o := range h.holder {
		if o == p && q != p {
			return Restart, -1
		}
	}
	for _, b := range Chain(p, len(h.holder), h.replicas, nil) {
		if h.holder[b] == b {
			return FailOver, b
		}
	}
	return Replace, -1
}

// FailedOver records that backup b's process serves p's ranges.
func (h *Holders) FailedOver(p, b int) { h.holder[p] = b }
