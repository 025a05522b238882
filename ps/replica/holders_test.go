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
