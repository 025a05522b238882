package deploy

import (
	"fmt"

	"colo/ps/replica"
)

// serving follows, for a job with replicated key ranges
// (train.Config.Replicas) and servers apart, which server process
// serves each rank's key ranges, so that the launcher decides about a
// dead server as the scheduler does (ps/sched, Failover):
//
//   - its first backup (replica.Chain) whose own process is alive takes
//     its ranges over: the cluster goes on without it (Survive);
//   - none is left: the scheduler waits for a replacement in its rank
//     and the job rolls back (Replace), or ends;
//   - its process also served the ranges of servers that had failed
//     before: those have no live copy and no process to replace, so the
//     whole job restarts (or ends).
//
// Each decision is O(r) for r replicas.
type serving struct {
	replicas int
	// holder[i] is the rank whose process serves rank i's ranges, -1
	// for none (a dead process whose ranges were lost).
	holder []int
}

// Outcomes of a server's death (serving.decide).
const (
	failOver = iota // its backup takes over
	replace         // a replacement in its rank, after a rollback
	restart         // the whole job
)

func newServing(servers, replicas int) *serving {
	s := &serving{replicas: replicas, holder: make([]int, servers)}
	for i := range s.holder {
		s.holder[i] = i
	}
	return s
}

// rank returns the rank of the server apart named name ("server 1"),
// false for another member.
func (s *serving) rank(name string) (int, bool) {
	var p int
	if _, err := fmt.Sscanf(name, "server %d", &p); err != nil || p < 0 || p >= len(s.holder) {
		return 0, false
	}
	return p, true
}

// decide returns what the death of server p's process leads to and,
// for failOver, the backup that takes its ranges over.
func (s *serving) decide(p int) (outcome, backup int) {
	for q, h := range s.holder {
		if h == p && q != p {
			return restart, -1
		}
	}
	for _, b := range replica.Chain(p, len(s.holder), s.replicas, nil) {
		if s.holder[b] == b {
			return failOver, b
		}
	}
	return replace, -1
}

// failedOver records that backup b serves p's ranges.
func (s *serving) failedOver(p, b int) { s.holder[p] = b }
