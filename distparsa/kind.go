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
type Kind struct{}

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
	return &launch.Member{Run: func(ctx context.Context, n *node.Node, _ *launch.NodeSummary) (any, error) {
		return RunNode(ctx, n, j)
	}}, nil
}
