package distparsa

import (
	"context"
	"encoding/json"
	"fmt"

	"colo/launch"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
)

// KindName is the name of the distributed partition kind.
const KindName = "parsa"

// Kind is the kind of a distributed partition job (a Job): its scheduler
// takes the job's key space, width and consistency model, and each of
// its W machines runs RunNode; the report of each is its Result.
//
// The scheduler refuses a machine whose job is not its own (LocalFields
// says what each may set for itself), since machines that disagree would
// draw different plans from one seed and partition the file wrongly, or
// stall at an all-reduce of another length.
type Kind struct{}

// LocalFields returns the fields of a partition job that each machine
// may set for itself, left out of the digest that the scheduler checks
// (launch.JobDigest): the data file's path and the name its errors give
// it, the output directory (worker 0's alone) and the spill directory,
// since each host may mount them elsewhere. Every other field must
// agree, the memory cap among them: the machines plan the number of
// blocks for it (ooc.Machine.Memory), and machines with other caps would
// plan other blocks; and shared_spill, which decides what each machine
// parses and which all-reduces it joins. That the machines read the same
// data is checked against keys, the key space the job gives (RunNode).
func LocalFields() []string { return []string{"data", "data_name", "out", "spill_dir"} }

// digest is the launch.Digest of j without LocalFields.
func (j Job) digest() (launch.Digest, error) {
	return launch.JobDigest(KindName, j, LocalFields()...)
}

// Name returns "parsa".
func (Kind) Name() string { return KindName }

// decodeJob reads the job of an envelope, unknown fields refused, and
// validates it.
func decodeJob(raw json.RawMessage) (Job, error) {
	var j Job
	if err := launch.DecodeJob(KindName, raw, &j); err != nil {
		return j, err
	}
	if err := j.Validate(); err != nil {
		return j, fmt.Errorf("job of kind %s: %w", KindName, err)
	}
	return j, nil
}

// Scheduler sets W servers and W workers, the key space and width of the
// job's Layout and its consistency model.
func (Kind) Scheduler(raw json.RawMessage, cfg *sched.Config) error {
	j, err := decodeJob(raw)
	if err != nil {
		return err
	}
	w := j.Config.Workers
	cfg.NumServers, cfg.NumWorkers = w, w
	cfg.NumKeys, cfg.Width, cfg.Clock = j.Keys, j.K, j.Config.Clock()
	d, err := j.digest() // every machine must run this job
	if err != nil {
		return err
	}
	cfg.JobDigest, cfg.JobFields = d.Sum, d.Fields
	return nil
}

// Open returns a machine's member, which runs RunNode.
func (Kind) Open(_ context.Context, raw json.RawMessage, at launch.Position) (*launch.Member, error) {
	if at.Role != proto.RoleMachine {
		return nil, fmt.Errorf("a partition job runs on --role machine (a server and a worker), not %s", at.Role)
	}
	j, err := decodeJob(raw)
	if err != nil {
		return nil, err
	}
	if w := j.Config.Workers; (at.Servers != 0 && at.Servers != w) || (at.Workers != 0 && at.Workers != w) {
		return nil, fmt.Errorf("--num-servers %d, --num-workers %d: the job runs %d machines", at.Servers, at.Workers, w)
	}
	d, err := j.digest()
	if err != nil {
		return nil, err
	}
	return &launch.Member{JobDigest: d.Sum, JobFields: d.Fields, Run: func(ctx context.Context, n *node.Node, _ *launch.NodeSummary) (any, error) {
		return RunNode(ctx, n, j)
	}}, nil
}
