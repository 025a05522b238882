package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"colo/gossip"
	"colo/launch"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/train"
	"colo/transport"
)

// ProcSpec is the job of the decentralised kind (Kind), what every worker
// process of TrainProcesses reads: the job (its data and model), the
// gossip configuration, the shards and the link rate. Paths in the job
// are resolved against the parent's working directory, which the
// processes share.
type ProcSpec struct {
	Job    train.Job     `json:"job"`
	Gossip gossip.Config `json:"gossip"`
	Shards [][]int32     `json:"shards"`
	Link   float64       `json:"link_bytes_per_s"`
}

// KindName is the name of the decentralised kind.
const KindName = "gossip"

// startDelay is how far in the future the workers set their common
// start, so that every rank has the others' addresses before anyone
// trains.
const startDelay = 300 * time.Millisecond

// addrLen bounds the length of a worker's address in the exchange.
const addrLen = 128

// Procs says how TrainProcesses runs its workers.
type Procs struct {
	// Bin is the binary of the processes ("" for this one).
	Bin string
	// Link is the rate of each worker's link in bytes per second (0:
	// unlimited).
	Link float64
	// Netns runs each worker in a Linux network namespace of its own
	// (launch.Netns: root and iproute2), its link shaped by tc at Link
	// (not shaped at 0); otherwise every worker runs on loopback and its
	// TCP links share an emulated interface of rate Link each way
	// (node.Rates).
	Netns bool
}

// TrainProcesses trains as Train does, but with every worker a process
// talking TCP, on loopback or in network namespaces (p): a launch.Cluster
// of the decentralised kind (Kind) with a machine per worker, whose
// scheduler only gathers them; it reads their reports and assembles the
// result.
func (d *Data) TrainProcesses(ctx context.Context, j train.Job, cfg gossip.Config, shards [][]int32, p Procs) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	spec := ProcSpec{Job: j, Gossip: cfg, Shards: shards, Link: p.Link}
	spec.Gossip.Progress = nil
	env, err := launch.NewEnvelope(KindName, spec)
	if err != nil {
		return nil, err
	}
	c := &launch.Cluster{Envelope: env, Machines: cfg.Workers, Bin: p.Bin, JoinTimeout: loadTime}
	if p.Netns {
		if err := launch.CheckNetns(); err != nil {
			return nil, err
		}
		rate := ""
		if p.Link > 0 {
			rate = fmt.Sprintf("%.0fbit", 8*p.Link)
		}
		ns, err := launch.NewNetns(c.Hosts(), rate) // host 0 is the scheduler's; worker i is host i+1
		if err != nil {
			return nil, err
		}
		defer ns.Close()
		c.Starter = ns
		// tc shapes the links.
		spec.Link = 0
		if c.Envelope, err = launch.NewEnvelope(KindName, spec); err != nil {
			return nil, err
		}
	}
	out, err := c.Run(ctx)
	if err != nil {
		return nil, err
	}
	reps := make([]*gossip.WorkerReport, cfg.Workers)
	seconds := 0.0
	for i, m := range out.Members {
		if m.Report == nil {
			return nil, fmt.Errorf("worker %d's report: %w", i, m.ReportErr)
		}
		if err := m.Report.Decode(&reps[i]); err != nil {
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

// Kind is the decentralised kind: W machines, whose parameter-server
// halves stay idle, each train a worker of decentralised SGD over links
// of their own (gossip.RunWorker). They meet through the scheduler: one
// all-reduce gives every worker the others' addresses and a common start,
// and a barrier after training holds every link open until all are done.
//
// The scheduler refuses a worker whose job is not its own (LocalFields
// says what each may set for itself): workers of another learning rate,
// number of epochs, topology or shards would mix models trained
// otherwise and end with a wrong average, or wait at a neighbour that
// stopped.
type Kind struct{}

// LocalFields returns the fields of the decentralised kind's job that
// each worker may set for itself, left out of the digest that the
// scheduler checks (launch.JobDigest): those of its training job that
// each host may set (train.LocalFields: the paths of the data and label
// files, of the cache and the checkpoints, the memory budget, the
// goroutines of a step), the placement, which the parent has already
// turned into the shards, and the name of the weights' file, which only
// reports give. Every other
// field must agree: the model and its options, the gossip configuration
// (the mixing weights themselves among them), the shards and the link's
// rate.
func LocalFields() []string {
	local := []string{"job.placement", "gossip.weights_file"}
	for _, f := range train.LocalFields() {
		local = append(local, "job."+f)
	}
	return local
}

// digest is the launch.Digest of spec without LocalFields.
func (spec ProcSpec) digest() (launch.Digest, error) {
	return launch.JobDigest(KindName, spec, LocalFields()...)
}

// Name returns "gossip".
func (Kind) Name() string { return KindName }

// decode reads a ProcSpec and checks it.
func decode(raw json.RawMessage) (ProcSpec, error) {
	var spec ProcSpec
	if err := launch.DecodeJob(KindName, raw, &spec); err != nil {
		return spec, err
	}
	if err := spec.Gossip.Validate(); err != nil {
		return spec, fmt.Errorf("job of kind %s: gossip: %w", KindName, err)
	}
	if len(spec.Shards) != spec.Gossip.Workers {
		return spec, fmt.Errorf("job of kind %s: %d shards for %d workers", KindName, len(spec.Shards), spec.Gossip.Workers)
	}
	return spec, nil
}

// Scheduler sets one machine per worker and a key space of one key.
func (Kind) Scheduler(raw json.RawMessage, cfg *sched.Config) error {
	spec, err := decode(raw)
	if err != nil {
		return err
	}
	cfg.NumServers, cfg.NumWorkers, cfg.NumKeys, cfg.Width = spec.Gossip.Workers, spec.Gossip.Workers, 1, 1
	d, err := spec.digest() // every worker must run this job
	if err != nil {
		return err
	}
	cfg.JobDigest, cfg.JobFields = d.Sum, d.Fields
	return nil
}

// Open loads the job's data; its member opens its own link at.Host,
// meets the others and trains its shard; its report is its
// gossip.WorkerReport.
func (Kind) Open(_ context.Context, raw json.RawMessage, at launch.Position) (*launch.Member, error) {
	if at.Role != proto.RoleMachine {
		return nil, fmt.Errorf("decentralised training runs on --role machine, not %s", at.Role)
	}
	spec, err := decode(raw)
	if err != nil {
		return nil, err
	}
	dg, err := spec.digest()
	if err != nil {
		return nil, err
	}
	d, err := Load(spec.Job)
	if err != nil {
		return nil, err
	}
	return &launch.Member{JobDigest: dg.Sum, JobFields: dg.Fields, Run: func(ctx context.Context, n *node.Node, _ *launch.NodeSummary) (any, error) {
		return runWorker(ctx, n, spec, d, at)
	}}, nil
}

// runWorker is one worker of the decentralised kind on node n.
func runWorker(ctx context.Context, n *node.Node, spec ProcSpec, d *Data, at launch.Position) (*gossip.WorkerReport, error) {
	cfg := spec.Gossip
	rank := n.Worker().Rank()
	rates := node.Rates{Link: spec.Link, Host: func(id transport.NodeID) (int, bool) { return int(id) - 1, true }}
	ep, err := node.TCP{Host: at.Host, Token: at.Token, Tune: rates.Tune(nil)}.Listen(gossip.WorkerID(rank), nil)
	if err != nil {
		return nil, err
	}
	defer ep.Close()
	// Every worker's address, byte by byte (plus one: 0 ends it), and its
	// clock in milliseconds, summed by the scheduler.
	W := cfg.Workers
	vals := make([]float64, W*addrLen+W)
	addr := ep.Addr()
	if len(addr) >= addrLen {
		return nil, fmt.Errorf("address %s: longer than %d bytes", addr, addrLen-1)
	}
	for i := range len(addr) {
		vals[rank*addrLen+i] = float64(addr[i]) + 1
	}
	vals[W*addrLen+rank] = float64(time.Now().UnixMilli())
	sum, err := n.AllReduce(ctx, "workers", vals)
	if err != nil {
		return nil, fmt.Errorf("meeting the other workers: %w", err)
	}
	var latest float64
	for r := range W {
		var b []byte
		for i := r * addrLen; i < (r+1)*addrLen && sum[i] > 0; i++ {
			b = append(b, byte(sum[i]-1))
		}
		if r != rank {
			ep.SetPeer(gossip.WorkerID(r), string(b))
		}
		latest = max(latest, sum[W*addrLen+r])
	}
	start := time.UnixMilli(int64(latest)).Add(startDelay)
	total := 0
	for _, s := range spec.Shards {
		total += len(s)
	}
	// Start training together.
	if wait := time.Until(start); wait > 0 {
		time.Sleep(wait)
	}
	rep, err := gossip.RunWorker(ctx, cfg, rank, d.Learner().Oracle(rank), spec.Shards[rank], total, d.Initial(cfg.Seed), ep, start, nil)
	if err != nil {
		return nil, err
	}
	// Every link stays open until every worker is done with its
	// neighbours' models.
	if err := n.Barrier(ctx, "workers"); err != nil {
		return nil, fmt.Errorf("after training: %w", err)
	}
	return rep, nil
}

// loadTime bounds the time a worker process takes to load its data and
// join the others.
const loadTime = 60 * time.Second
