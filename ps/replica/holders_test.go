package replica

import "testing"

// TestHoldersDecide walks server deaths by hand against the scheduler's
// rule (ps/sched failover): a server fails over to its first backup
// whose own process is alive; with none left it is replaced; a process
// that served another's ranges takes them with it, and the whole job
// restarts.
func TestHoldersDecide(t *testing.T) {
	type death struct {
		rank int
		out  Outcome
		by   int
	}
	for _, tc := range []struct {
		name              string
		servers, replicas int
		deaths            []death
	}{
		{"one", 3, 1, []death{{1, FailOver, 2}}},
		{"wraps", 3, 1, []death{{2, FailOver, 0}}},
		// Server 2 serves server 1's ranges: they die with it.
		{"heir", 3, 1, []death{{1, FailOver, 2}, {2, Restart, -1}}},
		// Server 0's one backup, server 1, is gone.
		{"noBackup", 3, 1, []death{{1, FailOver, 2}, {0, Replace, -1}}},
		// With two backups, server 0's second one, server 2, takes over.
		{"second", 4, 2, []death{{1, FailOver, 2}, {0, FailOver, 2}}},
		{"chain", 4, 1, []death{{3, FailOver, 0}, {1, FailOver, 2}, {2, Restart, -1}}},
		{"lastBackup", 2, 1, []death{{0, FailOver, 1}, {1, Restart, -1}}},
		{"outOfRange", 2, 1, []death{{2, Replace, -1}, {-1, Replace, -1}}},
		{"deadTwice", 3, 1, []death{{1, FailOver, 2}, {1, Replace, -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHolders(tc.servers, tc.replicas)
			for i, d := range tc.deaths {
				out, b := h.Decide(d.rank)
				if out != d.out || b != d.by {
					t.Fatalf("death %d (server %d): outcome %d backup %d, want %d backup %d", i, d.rank, out, b, d.out, d.by)
				}
				if out == FailOver {
					h.FailedOver(d.rank, b)
				}
			}
		})
	}
}

// TestHoldersBackedUp walks failovers after new backups by hand, as the
// scheduler makes them (ps/sched rebackup, TestFailoverTwice): a rank
// whose ranges were taken over gets a new copy once the scheduler
// reports it, and the process serving them fails over again, taking
// every rank it serves to its copies; a copy not reported yet does not
// count.
func TestHoldersBackedUp(t *testing.T) {
	type step struct {
		kill       int // a death (-1: a report)
		out        Outcome
		by         int
		rank, copy int // a report: copy holds a new copy of rank's ranges
	}
	die := func(p int, out Outcome, by int) step { return step{kill: p, out: out, by: by} }
	backedUp := func(rank, copy int) step { return step{kill: -1, rank: rank, copy: copy} }
	for _, tc := range []struct {
		name              string
		servers, replicas int
		steps             []step
		holders           []int // after the steps
	}{
		// Server 0 fails over to 1; the scheduler copies 0's ranges to
		// 2 and 2's (whose copy died with 0) to 1; server 1 then fails
		// over to 2 with 0's ranges.
		{"twice", 3, 1, []step{die(0, FailOver, 1), backedUp(0, 2), backedUp(2, 1), die(1, FailOver, 2)}, []int{2, 2, 2}},
		// Without the copy of 0's ranges in place, they die with 1.
		{"notYet", 3, 1, []step{die(0, FailOver, 1), backedUp(2, 1), die(1, Restart, -1)}, []int{1, 1, 2}},
		// Everything on one process: no copy is left.
		{"thrice", 3, 1, []step{die(0, FailOver, 1), backedUp(0, 2), backedUp(2, 1), die(1, FailOver, 2), die(2, Restart, -1)}, []int{2, 2, 2}},
		// The copy of 0's ranges on 2 died with it: 0's ranges on 1
		// have none, and die with 1.
		{"copyDied", 4, 1, []step{die(0, FailOver, 1), backedUp(0, 2), die(2, FailOver, 3), die(1, Restart, -1)}, []int{1, 1, 3, 3}},
		// A report of a rank out of range, or of a copy held already,
		// changes nothing.
		{"badReports", 3, 1, []step{backedUp(5, 1), backedUp(0, -1), backedUp(0, 1), backedUp(0, 0), die(0, FailOver, 1), die(1, Restart, -1)}, []int{1, 1, 2}},
		// Four servers, two copies each: 1 fails over to 2, which
		// copies 1's ranges to 3 (2 already held 1's copy); 2 then
		// fails over to 3 with 1's ranges, and 0 (copies 1, 2, both
		// dead) is replaced.
		{"twoCopies", 4, 2, []step{die(1, FailOver, 2), backedUp(1, 3), die(2, FailOver, 3), die(0, Replace, -1)}, []int{0, 3, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHolders(tc.servers, tc.replicas)
			for i, s := range tc.steps {
				if s.kill < 0 {
					h.BackedUp(s.rank, s.copy)
					continue
				}
				out, b := h.Decide(s.kill)
				if out != s.out || b != s.by {
					t.Fatalf("step %d (server %d dies): outcome %d backup %d, want %d backup %d", i, s.kill, out, b, s.out, s.by)
				}
				if out == FailOver {
					h.FailedOver(s.kill, b)
				}
			}
			for q, want := range tc.holders {
				if h.holder[q] != want {
					t.Errorf("server %d's ranges are served by %d, want %d", q, h.holder[q], want)
				}
			}
		})
	}
}

// TestHoldersReplaced walks a replacement by hand (3 servers, one copy
// each): server 0 fails over to server 1, which gets a new copy of its
// ranges on server 2; server 2's process dies with no copy of its own
// ranges left and is replaced. Server 1's process goes on replicating
// server 0's ranges to server 2's rank, whose replacement keeps a copy
// of them from the rollback's empty store on: the death of server 1's
// process, which serves ranks 0 and 1, fails both over to it.
func TestHoldersReplaced(t *testing.T) {
	h := NewHolders(3, 1)
	if out, b := h.Decide(0); out != FailOver || b != 1 {
		t.Fatalf("server 0: %v %d, want a failover to server 1", out, b)
	}
	h.FailedOver(0, 1)
	h.BackedUp(0, 2)
	if out, _ := h.Decide(2); out != Replace {
		t.Fatalf("server 2: %v, want a replacement", out)
	}
	h.Replaced(2)
	if out, b := h.Decide(1); out != FailOver || b != 2 {
		t.Errorf("server 1 after server 2's replacement: %v %d, want a failover to server 2", out, b)
	}
	if c := h.copies[0]; len(c) != 1 || c[0] != 2 {
		t.Errorf("server 0's copies %v, want [2]", c)
	}
	// The replacement holds the copies of a start: server 1's, whose
	// process serves its own ranks. Its own ranges' chain is server 0's
	// rank, which is no process any more: they have no copy until the
	// scheduler's new one, on server 1 (the first process after it that
	// serves its own rank), is in place.
	if c := h.copies[1]; len(c) != 1 || c[0] != 2 {
		t.Errorf("server 1's copies %v, want [2]", c)
	}
	if c := h.copies[2]; len(c) != 0 {
		t.Errorf("server 2's copies %v, want none", c)
	}
	if out, _ := h.Decide(2); out != Replace {
		t.Errorf("server 2 with no copy: %v, want a replacement", out)
	}
	h.BackedUp(2, 1)
	if c := h.copies[2]; len(c) != 1 || c[0] != 1 {
		t.Errorf("server 2's copies after the new one %v, want [1]", c)
	}
	h.Replaced(-1)
	h.Replaced(3)
}

// TestHoldersBackedUpBeforeDeath: the scheduler's report of a new copy
// of server 0's ranges, made after server 0's process died and server 1
// took them over, is read before that death is told (the launcher reads
// the scheduler's lines and the processes' exits apart). It counts from
// the failover on, as the scheduler counts it: the death of server 1's
// process fails both its ranks over to server 2.
func TestHoldersBackedUpBeforeDeath(t *testing.T) {
	h := NewHolders(3, 1)
	h.BackedUp(0, 2)
	if out, b := h.Decide(0); out != FailOver || b != 1 {
		t.Fatalf("server 0: %v %d, want a failover to server 1", out, b)
	}
	h.FailedOver(0, 1)
	if out, b := h.Decide(1); out != FailOver || b != 2 {
		t.Fatalf("server 1, serving server 0's ranges copied on server 2: %v %d, want a failover to server 2", out, b)
	}
	h.FailedOver(1, 2)
	if h.holder[0] != 2 || h.holder[1] != 2 {
		t.Errorf("holders %v, want server 2 serving ranks 0 and 1", h.holder)
	}
}
