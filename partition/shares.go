package partition

import "sync"

// shareUnit is the weight of one part of a run on the scale that shares
// reports to Options.Progress.
const shareUnit = 1000

// shares reports the progress of a run made of parts, each of which
// reports its own progress in its own unit, on one scale whose total,
// parts × shareUnit, is known from the first call: a part's own progress
// fills the first half of its share and its end (after its refinement,
// which reports nothing) the rest. So the done never falls and reaches
// the total exactly when the last part ends.
type shares struct {
	mu       sync.Mutex
	done     []int64
	ended    int
	progress func(done, total int64)
	phase    func(name string, done, total int)
}

// newShares returns the shares of parts parts, reported to progress;
// phase, when not nil, is told of the end of each part.
func newShares(parts int, progress func(done, total int64), phase func(name string, done, total int)) *shares {
	return &shares{done: make([]int64, parts), progress: progress, phase: phase}
}

// part returns the progress callback of part i, nil when nothing listens.
func (s *shares) part(i int) func(done, total int64) {
	if s.progress == nil {
		return nil
	}
	return func(d, t int64) {
		if t <= 0 {
			return
		}
		s.set(i, min(d, t)*(shareUnit/2)/t)
	}
}

// end records the end of part i, called name.
func (s *shares) end(i int, name string) {
	s.set(i, shareUnit)
	s.mu.Lock()
	s.ended++
	ended := s.ended
	s.mu.Unlock()
	if s.phase != nil {
		s.phase(name, ended, len(s.done))
	}
}

func (s *shares) set(i int, d int64) {
	if s.progress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done[i] = max(s.done[i], d)
	var sum int64
	for _, x := range s.done {
		sum += x
	}
	s.progress(sum, int64(len(s.done))*shareUnit)
}
