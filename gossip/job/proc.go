package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"colo/gossip"
	"colo/internal/atomicfile"
	"colo/internal/tempdir"
	"colo/launch"
	"colo/ps/node"
	"colo/train"
	"colo/transport"
)

// ProcSpec is what every worker process of TrainProcesses reads: the job
// (its data and model), the gossip configuration, the shards, the link
// rate and the cluster token. Paths in the job are resolved against the
// parent's working directory, which the processes share.
type ProcSpec struct {
	Job    train.Job     `json:"job"`
	Gossip gossip.Config `json:"gossip"`
	Shards [][]int32     `json:"shards"`
	Link   float64       `json:"link_bytes_per_s"`
	Token  string        `json:"token"`
}

// The rendezvous: rank 0 prints RendezvousPrefix+ADDR first; every other
// rank sends it a hello with its own address; rank 0 answers everyone
// with the address book and a start time; after training every rank
// tells rank 0 it is done and waits for rank 0's release before closing
// its endpoint, so that no worker sees a neighbour go down while it still
// needs its model.
const (
	// RendezvousPrefix starts rank 0's first line of output; it is
	// launch's scheduler line, so that launch.Supervisor.StartScheduler
	// reads the address.
	RendezvousPrefix = "scheduler listening on "
	cmdHello         = 101
	cmdBook          = 102
	cmdDone          = 103
	cmdRelease       = 104
	appRendezvous    = 0x60552
	// startDelay is how far in the future rank 0 sets the start, so that
	// every rank has the book before anyone trains.
	startDelay = 300 * time.Millisecond
)

// book is rank 0's answer to the hellos.
type book struct {
	Addrs []string `json:"addrs"`
	Start int64    `json:"start_unix_ns"`
}

// Procs says how TrainProcesses runs its workers.
type Procs struct {
	// Bin is the binary of the processes ("" for this one).
	Bin string
	// Link is the rate of each worker's link in bytes per second (0:
	// unlimited).
	Link float64
	// Netns runs each worker in a Linux network namespace of its own
	// (launch.Netns: root and iproute2), its link shaped by tc at Link;
	// otherwise every worker runs on loopback and each TCP link is
	// limited to Link.
	Netns bool
}

// TrainProcesses trains as Train does, but with every worker a process
// (colo train --mode gossip-worker) talking TCP, on loopback or in
// network namespaces (p): it writes the ProcSpec to a temporary
// directory, starts rank 0 and then the others, waits for all, reads
// their reports and assembles the result.
func (d *Data) TrainProcesses(ctx context.Context, j train.Job, cfg gossip.Config, shards [][]int32, p Procs) (_ *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var starter launch.Starter = launch.Loopback{}
	link := p.Link
	if p.Netns {
		if err := launch.CheckNetns(); err != nil {
			return nil, err
		}
		rate := ""
		if p.Link > 0 {
			rate = fmt.Sprintf("%.0fbit", 8*p.Link)
		}
		ns, err := launch.NewNetns(cfg.Workers+1, rate) // host 0 is left idle; worker i is host i+1
		if err != nil {
			return nil, err
		}
		defer ns.Close()
		starter, link = ns, 0 // tc shapes the links
	}
	dir, err := tempdir.Make("colo-gossip-")
	if err != nil {
		return nil, err
	}
	defer tempdir.Remove(dir, &err)
	spec := ProcSpec{Job: j, Gossip: cfg, Shards: shards, Link: link, Token: launch.NewToken()}
	spec.Gossip.Progress = nil
	specPath := filepath.Join(dir, "spec.json")
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return nil, err
	}
	sup := launch.NewSupervisor(p.Bin, starter)
	args := func(rank int, rendezvous string) []string {
		a := []string{"train", "--mode", "gossip-worker", "--spec", specPath, "--rank", strconv.Itoa(rank),
			"--out", filepath.Join(dir, fmt.Sprintf("worker%d.json", rank)), "--host", starter.Addr(rank + 1)}
		if rendezvous != "" {
			a = append(a, "--rendezvous", rendezvous)
		}
		return a
	}
	addr, err := sup.StartScheduler(ctx, launch.Spec{Name: "worker 0", Host: 1, Args: args(0, "")})
	if err != nil {
		return nil, err
	}
	for i := 1; i < cfg.Workers; i++ {
		sup.Start(ctx, launch.Spec{Name: fmt.Sprintf("worker %d", i), Host: i + 1, Args: args(i, addr)})
	}
	if err := sup.Wait(ctx); err != nil {
		return nil, err
	}
	reps := make([]*gossip.WorkerReport, cfg.Workers)
	seconds := 0.0
	for i := range reps {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker%d.json", i)))
		if err != nil {
			return nil, fmt.Errorf("worker %d's report: %w", i, err)
		}
		if err := json.Unmarshal(b, &reps[i]); err != nil {
			return nil, fmt.Errorf("worker %d's report: %w", i, err)
		}
		if at := reps[i].At; len(at) > 0 {
			seconds = max(seconds, at[len(at)-1].Seconds())
		}
	}
	res, err := gossip.Assemble(cfg, reps, seconds)
	if err != nil {
		return nil, err
	}
	return d.score(res), nil
}

// RunProcess is what one worker process runs: it reads the ProcSpec at
// specPath, loads the job's data, opens a TCP endpoint on addr, meets
// the others (rank 0 prints its address to stdout; the others are given
// it as rendezvous), trains its shard and writes its gossip.WorkerReport
// as JSON to out.
func RunProcess(ctx context.Context, specPath string, rank int, addr, rendezvous, out string, stdout io.Writer) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec ProcSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	cfg := spec.Gossip
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	if rank < 0 || rank >= cfg.Workers || len(spec.Shards) != cfg.Workers {
		return fmt.Errorf("rank %d: want 0..%d with a shard each", rank, cfg.Workers-1)
	}
	if (rank == 0) != (rendezvous == "") {
		return errors.New("rank 0 is the rendezvous; every other rank needs its address (--rendezvous)")
	}
	d, err := Load(spec.Job)
	if err != nil {
		return err
	}
	rates := node.Rates{Link: spec.Link, Host: func(id transport.NodeID) (int, bool) { return int(id) - 1, true }}
	ep, err := node.TCP{Host: addr, Token: spec.Token, Tune: rates.Tune(nil)}.Listen(gossip.WorkerID(rank), nil)
	if err != nil {
		return err
	}
	defer ep.Close()
	var start time.Time
	var early []*transport.Message
	if rank == 0 {
		fmt.Fprintf(stdout, "%s%s\n", RendezvousPrefix, ep.Addr())
		if f, ok := stdout.(interface{ Sync() error }); ok {
			f.Sync()
		}
		start, err = host(ctx, ep, cfg.Workers, &early)
	} else {
		start, err = join(ctx, ep, rank, rendezvous, &early)
	}
	if err != nil {
		return fmt.Errorf("rendezvous: %w", err)
	}
	total := 0
	for _, s := range spec.Shards {
		total += len(s)
	}
	// Start training together.
	if wait := time.Until(start); wait > 0 {
		time.Sleep(wait)
	}
	rep, err := gossip.RunWorker(ctx, cfg, rank, d.Learner().Oracle(rank), spec.Shards[rank], total, d.Initial(cfg.Seed), ep, start, early)
	if err != nil {
		return err
	}
	if err := finish(ctx, ep, rank, cfg.Workers, rep.Other); err != nil {
		return fmt.Errorf("after training: %w", err)
	}
	return atomicfile.Write(out, func(w io.Writer) error { return json.NewEncoder(w).Encode(rep) })
}

// loadTime bounds the time a worker process takes to load its data and
// meet the others.
const loadTime = 60 * time.Second

// host is rank 0's side: it collects the hellos, sends everyone the book
// and returns the start time.
func host(ctx context.Context, ep node.Endpoint, n int, early *[]*transport.Message) (time.Time, error) {
	addrs := make([]string, n)
	addrs[0] = ep.Addr()
	for seen := 1; seen < n; {
		m, err := recv(ctx, ep, cmdHello, early)
		if err != nil {
			return time.Time{}, err
		}
		r := int(m.Sender) - 1
		if r < 1 || r >= n || addrs[r] != "" {
			return time.Time{}, fmt.Errorf("a hello from node %d: want each of workers 1..%d once", m.Sender, n-1)
		}
		addrs[r] = string(m.Body)
		ep.SetPeer(m.Sender, addrs[r])
		seen++
	}
	start := time.Now().Add(startDelay)
	body, _ := json.Marshal(book{Addrs: addrs, Start: start.UnixNano()})
	for r := 1; r < n; r++ {
		if err := send(ctx, ep, gossip.WorkerID(r), cmdBook, body); err != nil {
			return time.Time{}, err
		}
	}
	return start, nil
}

// join is the side of the other ranks: hello to rank 0, then the book.
func join(ctx context.Context, ep node.Endpoint, rank int, rendezvous string, early *[]*transport.Message) (time.Time, error) {
	ep.SetPeer(gossip.WorkerID(0), rendezvous)
	if err := send(ctx, ep, gossip.WorkerID(0), cmdHello, []byte(ep.Addr())); err != nil {
		return time.Time{}, err
	}
	m, err := recv(ctx, ep, cmdBook, early)
	if err != nil {
		return time.Time{}, err
	}
	var bk book
	if err := json.Unmarshal(m.Body, &bk); err != nil || len(bk.Addrs) <= rank {
		return time.Time{}, fmt.Errorf("the book %q: want the addresses of every worker", m.Body)
	}
	for r, a := range bk.Addrs {
		if r != rank {
			ep.SetPeer(gossip.WorkerID(r), a)
		}
	}
	return time.Unix(0, bk.Start), nil
}

// finish holds every endpoint open until all ranks are done; seen are
// the messages that arrived during training.
func finish(ctx context.Context, ep node.Endpoint, rank, n int, seen []*transport.Message) error {
	if rank != 0 {
		if err := send(ctx, ep, gossip.WorkerID(0), cmdDone, nil); err != nil {
			return err
		}
		_, err := recv(ctx, ep, cmdRelease, nil)
		return err
	}
	done := 0
	for _, m := range seen {
		if m.App == appRendezvous && m.Cmd == cmdDone {
			done++
		}
	}
	for ; done < n-1; done++ {
		if _, err := recv(ctx, ep, cmdDone, nil); err != nil {
			return err
		}
	}
	for r := 1; r < n; r++ {
		if err := send(ctx, ep, gossip.WorkerID(r), cmdRelease, nil); err != nil {
			return err
		}
	}
	return nil
}

func send(ctx context.Context, ep node.Endpoint, to transport.NodeID, cmd uint16, body []byte) error {
	return ep.Send(ctx, to, &transport.Message{Header: transport.Header{Type: transport.TypeControl, Cmd: cmd, App: appRendezvous}, Body: body})
}

// recv waits for a rendezvous message cmd, keeping other messages in
// early (dropping them when early is nil); link failures are errors
// except at the release, when rank 0 may have closed already.
func recv(ctx context.Context, ep node.Endpoint, cmd uint16, early *[]*transport.Message) (*transport.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*loadTime)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for message %d: %w", cmd, ctx.Err())
		case pe, ok := <-ep.Down():
			if ok && cmd != cmdRelease {
				return nil, pe
			}
			if !ok {
				return nil, transport.ErrClosed
			}
		case m, ok := <-ep.Recv():
			if !ok {
				return nil, transport.ErrClosed
			}
			if m.App == appRendezvous && m.Cmd == cmd {
				return m, nil
			}
			if m.App == appRendezvous {
				return nil, fmt.Errorf("message %d from node %d while waiting for %d", m.Cmd, m.Sender, cmd)
			}
			if early != nil {
				*early = append(*early, m)
			}
		}
	}
}
