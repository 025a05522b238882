package main

import (
	"context"
	"encoding/json"
	"io"

	"colo/launch"
	"colo/partition/distparsa"
	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
)

// parsaNodeJob returns the job of a machine of colo node --job parsa: the
// distributed partition job of --job-file (distparsa.RunNode), and a
// function that writes its result to --result once the job succeeded.
func parsaNodeJob(e *env, nf *nodeFlags, role proto.Role) (func(context.Context, *node.Node, *launch.NodeSummary) error, func() error, error) {
	if role != proto.RoleMachine {
		return nil, nil, usageError("--job parsa runs on --role machine (a server and a worker), not %s", role)
	}
	if nf.train.jobFile == "" {
		return nil, nil, usageError("--job parsa needs --job-file: the partition job (as colo partition --processes writes it)")
	}
	job, err := distparsa.ReadJob(nf.train.jobFile)
	if err != nil {
		return nil, nil, err
	}
	var res *distparsa.Result
	run := func(ctx context.Context, n *node.Node, _ *launch.NodeSummary) error {
		var err error
		res, err = distparsa.RunNode(ctx, n, job)
		return err
	}
	write := func() error {
		if nf.result == "" || res == nil {
			return nil
		}
		return writeOutput(e, nf.result, func(w io.Writer) error { return json.NewEncoder(w).Encode(res) })
	}
	return run, write, nil
}

// parsaScheduler sets the scheduler of a distributed partition job from
// the job of --job-file: the key space, the width k, the consistency
// model and, unless given, the number of machines.
func parsaScheduler(nf *nodeFlags, cfg *sched.Config) error {
	if nf.train.jobFile == "" {
		return usageError("--job parsa needs --job-file: the partition job (as colo partition --write-job writes it)")
	}
	job, err := distparsa.ReadJob(nf.train.jobFile)
	if err != nil {
		return err
	}
	w := job.Config.Workers
	if (nf.numServers != 0 && nf.numServers != w) || (nf.numWorkers != 0 && nf.numWorkers != w) {
		return usageError("--num-servers %d, --num-workers %d: the job of %s runs %d machines", nf.numServers, nf.numWorkers, nf.train.jobFile, w)
	}
	cfg.NumServers, cfg.NumWorkers = w, w
	cfg.NumKeys, cfg.Width, cfg.Clock = job.Keys, job.K, job.Config.Clock()
	return nil
}
