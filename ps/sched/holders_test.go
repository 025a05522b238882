package sched

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"colo/ps/proto"
	"colo/ps/replica"
	"colo/transport"
)

// TestHoldersAgainstCore checks replica.Holders, which a launcher asks
// what the death of a server process leads to, against the scheduler's
// Core on random runs of 3 to 6 servers apart with 1 or 2 copies each:
// server processes die (the launcher told of it before the scheduler
// hears of it, or, for the first death, after the takeover got ready
// and the new copies it led to are in place), the takeovers get ready, the new copies the Core
// asks for get in place in any order (told to Holders as the launcher's
// supervisor reads them, Core.BackedUp), and a process whose death
// Holders says is replaced is replaced (Holders.Replaced, a rollback). At every death
// Holders must say what the Core does: a failover to the same backup, a
// pause for the replacement, or the end of the job (a pause for ranks the
// launcher has no process to replace ends it too). A replacement reports
// the copies it keeps beyond its chain (Assign.Held) at random later
// steps, as new copies. The scheduler is taken
// over at random steps (takenOver): the new one must rebuild the state
// from the reports and go on agreeing with Holders.
func TestHoldersAgainstCore(t *testing.T) {
	afterFailover := 0 // takeovers of a job that had a failover
	held := 0          // copies replacements keep beyond their chains
	defer func() {
		if !t.Failed() && (afterFailover < 100 || held < 20) {
			t.Errorf("%d takeovers after a failover, %d copies kept by replacements beyond their chains in 400 trials: the runs do not exercise them", afterFailover, held)
		}
		t.Logf("%d takeovers after a failover, %d copies kept by replacements beyond their chains", afterFailover, held)
	}()
	for trial := range 400 {
		rng := rand.New(rand.NewPCG(uint64(trial), 5))
		servers := 3 + rng.IntN(4)
		replicas := min(1+rng.IntN(2), servers-1)
		cfg := testConfig(servers, 2)
		cfg.Replicas, cfg.RecoverWait = replicas, 10*time.Second
		c := coreOf(t, cfg)
		for i := range servers {
			join(t, c, uint32(100+i), proto.RoleServer, i)
		}
		join(t, c, 20, proto.RoleWorker, 0)
		join(t, c, 21, proto.RoleWorker, 1)
		h := replica.NewHolders(servers, replicas)
		addr := make([]string, servers) // of each rank's own process
		alive := make([]bool, servers)
		for i := range servers {
			addr[i], alive[i] = "real", true
		}
		var (
			log       []string
			asked     []proto.Backup // new copies asked for, not in place
			takeovers []int          // ranks taken over, not ready
		)
		deaths := 0
		ready := func(p int) []Out {
			return c.Handle(msg(proto.ServerID(p), proto.CmdReady, proto.Ready{Addr: fmt.Sprintf("taken%d", p)}))
		}
	steps:
		for step := range 12 {
			if ended, _ := c.Ended(); ended {
				break
			}
			var outs []Out
			inPlace := map[proto.Backup]bool{} // the copies asked for and in place in this step
			switch k := rng.IntN(5); {
			case k == 4:
				// The scheduler dies and another takes the job over from
				// the nodes' reports: it must rebuild the same state, so
				// that Holders goes on agreeing with it. With a failover
				// whose takeover is not ready, or a pause, it cannot.
				paused, _ := c.Paused()
				nc, ok := takenOver(t, c, cfg)
				if ok != (len(takeovers) == 0 && !paused) {
					t.Fatalf("trial %d: taken over %v with %d takeovers not ready, paused %v\nevents: %q\nthe new core's log: %q", trial, ok, len(takeovers), paused, log, nc.Logs())
				}
				if ok {
					c = nc
					log = append(log, "the scheduler taken over")
					if c.seq() > 0 {
						afterFailover++
					}
				}
			case k == 0 && len(takeovers) > 0:
				i := rng.IntN(len(takeovers))
				p := takeovers[i]
				takeovers = slices.Delete(takeovers, i, i+1)
				outs = ready(p)
				log = append(log, fmt.Sprintf("server %d's takeover ready", p))
			case k == 1 && len(asked) > 0:
				i := rng.IntN(len(asked))
				b := asked[i]
				asked = slices.Delete(asked, i, i+1)
				outs = c.Handle(msg(proto.ServerID(b.Backup), proto.CmdBackedUp, b))
				log = append(log, fmt.Sprintf("server %d reports its copy of %d", b.Backup, b.Server))
			default:
				var live []int
				for i, a := range alive {
					if a {
						live = append(live, i)
					}
				}
				if len(live) == 0 {
					break steps
				}
				p := live[rng.IntN(len(live))]
				alive[p] = false
				outs = c.Down(&transport.PeerError{Peer: proto.ServerID(p), Addr: addr[p], Err: transport.ErrPeerClosed})
				failovers := map[int]int{}
				for _, o := range outs {
					var f proto.Failover
					if o.To == proto.WorkerID(0) && o.M.Cmd == proto.CmdFailover && proto.Decode(o.M, &f) == nil {
						failovers[f.Server] = f.Backup
					}
				}
				ended, _ := c.Ended()
				paused, _ := c.Paused()
				late := !ended && !paused && deaths == 0 && rng.IntN(2) == 0
				deaths++
				if late {
					// The launcher handles the exit late: the takeovers
					// got ready, the new copies asked then are in place,
					// and their lines were read before the exit.
					for q := range failovers {
						outs = append(outs, ready(q)...)
					}
					for _, bk := range decoded[proto.Backup](t, outs, proto.CmdBackup) {
						outs = append(outs, c.Handle(msg(proto.ServerID(bk.Backup), proto.CmdBackedUp, bk))...)
						inPlace[bk] = true
					}
					for _, bk := range c.BackedUp() {
						h.BackedUp(bk.Server, bk.Backup)
					}
				}
				out, b := h.Decide(p)
				what := map[replica.Outcome]string{replica.FailOver: "failover", replica.Replace: "replace", replica.Restart: "restart"}[out]
				log = append(log, fmt.Sprintf("server %d's process dies: %s %d (told late %v)", p, what, b, late))
				ok := false
				switch out {
				case replica.FailOver:
					ok = !ended && !paused && failovers[p] == b
				case replica.Replace:
					ok = paused
				case replica.Restart:
					ok = ended || paused
				}
				if !ok {
					t.Fatalf("trial %d, %d servers, %d copies: Holders says %s (backup %d); the Core ended %v, paused %v, failed over %v\nevents: %q\nthe Core's log: %q",
						trial, servers, replicas, what, b, ended, paused, failovers, log, c.Logs())
				}
				switch out {
				case replica.FailOver:
					h.FailedOver(p, b)
					for q := range failovers {
						if !late {
							takeovers = append(takeovers, q)
						}
					}
				case replica.Restart:
					break steps
				case replica.Replace:
					// The takeovers get ready, and the replacement
					// registers: the job resumes.
					for _, q := range takeovers {
						outs = append(outs, ready(q)...)
					}
					takeovers, asked = takeovers[:0], asked[:0]
					h.Replaced(p)
					reg := c.Handle(msg(proto.Provisional(uint32(500+step)), proto.CmdRegister, proto.Register{Role: proto.RoleServer, Token: proto.TokenDigest("tok"), Addr: "new", Rank: p, Recover: true}))
					for _, a := range decoded[proto.Assign](t, reg, proto.CmdAssign) {
						// The copies the replacement keeps beyond its
						// chain: it reports each at its first update.
						for _, q := range a.Held {
							asked = append(asked, proto.Backup{Server: q, Backup: p})
						}
						held += len(a.Held)
					}
					outs = append(outs, reg...)
					addr[p], alive[p] = fmt.Sprintf("new%d", p), true
					outs = append(outs, c.Handle(msg(proto.ServerID(p), proto.CmdReady, proto.Ready{Addr: addr[p]}))...)
					if paused, _ := c.Paused(); paused {
						t.Fatalf("trial %d: the replacement of server %d did not resume the job: %q", trial, p, c.Logs())
					}
					log = append(log, fmt.Sprintf("server %d replaced", p))
				}
			}
			for _, b := range c.BackedUp() {
				h.BackedUp(b.Server, b.Backup)
			}
			for _, b := range decoded[proto.Backup](t, outs, proto.CmdBackup) {
				if !inPlace[b] {
					asked = append(asked, b)
				}
			}
			c.Logs()
		}
	}
}

// takenOver returns a core of cfg that took over c's job from the
// reports c's nodes would send (each server process: its rank and the
// ranks it took over, what each is replicated to, the copies it holds;
// each worker), and whether it took it over. Once it did, it must hold
// c's replicated ranges, members and failover count.
func takenOver(t *testing.T, c *Core, cfg Config) (*Core, bool) {
	t.Helper()
	cfg.Takeover = true
	nc := coreOf(t, cfg)
	byMachine := map[int]*proto.Rejoin{}
	var machines []int
	paused, _ := c.Paused()
	for _, id := range slices.Sorted(maps.Keys(c.members)) {
		m := c.members[id]
		r := byMachine[m.machine]
		if r == nil {
			r = &proto.Rejoin{Token: proto.TokenDigest(cfg.Token), Machine: m.machine, Epoch: c.epoch, Paused: paused, Failovers: c.seq(), Announced: c.seq()}
			byMachine[m.machine] = r
			machines = append(machines, m.machine)
		}
		rm := proto.RejoinMember{ID: id, Addr: m.addr, Moved: m.moved}
		if role, p := proto.Identify(id); role == proto.RoleServer {
			rm.Backups = slices.Clone(c.copies[p])
			if b, ok := c.rebuilding[p]; ok {
				rm.Joining = []int{b.backup}
			}
			if !m.moved {
				for q := range c.copies {
					if slices.Contains(c.copies[q], p) {
						rm.Copies = append(rm.Copies, q)
					}
				}
			}
		}
		if m.takingOver {
			r.Announced = c.seq() + 1 // its announcement's second half not sent
			r.Failovers = c.seq() - 1
		}
		if m.moved {
			r.Members = append(r.Members, rm)
		} else {
			r.Members = append([]proto.RejoinMember{rm}, r.Members...)
		}
	}
	for i, m := range machines {
		nc.Handle(msg(proto.Provisional(uint32(900+i)), proto.CmdRejoin, *byMachine[m]))
	}
	if !nc.Running() {
		return nc, false
	}
	nc.Logs()
	if !slices.Equal(nc.holders, c.holders) || nc.seq() != c.seq() || !maps.Equal(nc.rebuilding, c.rebuilding) {
		t.Fatalf("taken over: holders %v, %d failovers, rebuilding %v; the dead scheduler's %v, %d, %v", nc.holders, nc.seq(), nc.rebuilding, c.holders, c.seq(), c.rebuilding)
	}
	for p := range c.copies {
		if !slices.Equal(nc.copies[p], c.copies[p]) {
			t.Fatalf("taken over: copies %v, the dead scheduler's %v", nc.copies, c.copies)
		}
	}
	for id, m := range c.members {
		if n := nc.members[id]; n == nil || n.moved != m.moved || n.addr != m.addr || n.machine != m.machine {
			t.Fatalf("taken over: %s is %+v, was %+v", proto.Name(id), n, m)
		}
	}
	return nc, true
}
