package deploy

import "testing"

// TestServingDecide walks server deaths by hand against the scheduler's
// rule (ps/sched failover): a server fails over to its first backup
// whose own process is alive; with none left it is replaced; a process
// that served another's ranges takes them with it, and the whole job
// restarts.
func TestServingDecide(t *testing.T) {
	const fo, re, rs = failOver, replace, restart
	type death struct {
		name    string
		out, by int
	}
	for _, tc := range []struct {
		name              string
		servers, replicas int
		deaths            []death
	}{
		{"one", 3, 1, []death{{"server 1", fo, 2}}},
		{"wraps", 3, 1, []death{{"server 2", fo, 0}}},
		// Server 2 serves server 1's ranges: they die with it.
		{"heir", 3, 1, []death{{"server 1", fo, 2}, {"server 2", rs, -1}}},
		// Server 0's one backup, server 1, is gone.
		{"noBackup", 3, 1, []death{{"server 1", fo, 2}, {"server 0", re, -1}}},
		// With two backups, server 0's second one, server 2, takes over.
		{"second", 4, 2, []death{{"server 1", fo, 2}, {"server 0", fo, 2}}},
		{"chain", 4, 1, []death{{"server 3", fo, 0}, {"server 1", fo, 2}, {"server 2", rs, -1}}},
		{"lastBackup", 2, 1, []death{{"server 0", fo, 1}, {"server 1", rs, -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServing(tc.servers, tc.replicas)
			for i, d := range tc.deaths {
				p, ok := s.rank(d.name)
				if !ok {
					t.Fatalf("death %d: %q not a server", i, d.name)
				}
				out, b := s.decide(p)
				if out != d.out || out == fo && b != d.by {
					t.Fatalf("death %d (%s): outcome %d backup %d, want %d backup %d", i, d.name, out, b, d.out, d.by)
				}
				if out == fo {
					s.failedOver(p, b)
				}
			}
		})
	}
	s := newServing(3, 1)
	for _, name := range []string{"machine 0", "server 3", "server -1", "scheduler"} {
		if _, ok := s.rank(name); ok {
			t.Errorf("%q taken for a server apart", name)
		}
	}
}
