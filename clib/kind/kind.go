// Package kind is the kind of job (launch.Kind) whose workers are
// programs linked with colo's client library (package clib, the Python
// package colo): colo run starts its scheduler and servers as colo node
// processes and its workers as the user's program, and every process
// reads the same envelope, {"kind": "torch", "job": clib.Job}.
//
// The scheduler gets per-key lengths, the job's consistency model and
// its placement's routing table; a server runs the job's rule over the
// job's emulated links. Workers and machines are the program's: a colo
// node asked to be one refuses, naming the program that should be.
package kind

import (
	"context"
	"encoding/json"
	"fmt"

	"colo/clib"
	"colo/launch"
	"colo/ps/proto"
	"colo/ps/sched"
)

// Kind is the torch kind.
type Kind struct{}

// Name returns clib.JobKind.
func (Kind) Name() string { return clib.JobKind }

// Scheduler configures the scheduler of the job, which refuses a server,
// or a worker that read the job (clib.Open), whose job is not its own
// (clib.LocalFields says what each may set for itself): a server of
// another rule or rate would train its keys otherwise, without an
// error.
func (Kind) Scheduler(raw json.RawMessage, cfg *sched.Config) error {
	j, err := clib.DecodeJob(raw)
	if err != nil {
		return err
	}
	if err := j.Scheduler(cfg); err != nil {
		return err
	}
	d, err := j.Digest()
	if err != nil {
		return err
	}
	cfg.JobDigest, cfg.JobFields = d.Sum, d.Fields
	return nil
}

// Open opens a server of the job: its rule and links. The job's workers
// and machines are the user's program, not colo node.
func (Kind) Open(_ context.Context, raw json.RawMessage, at launch.Position) (*launch.Member, error) {
	j, err := clib.DecodeJob(raw)
	if err != nil {
		return nil, err
	}
	if at.Role != proto.RoleServer {
		return nil, fmt.Errorf("job of kind %s: its %ss are programs linked with colo (colo run -- PROGRAM), not colo node", clib.JobKind, at.Role)
	}
	rule, err := j.ServerRule()
	if err != nil {
		return nil, err
	}
	rates, err := j.Rates()
	if err != nil {
		return nil, err
	}
	d, err := j.Digest()
	if err != nil {
		return nil, err
	}
	return &launch.Member{Rule: rule, Rates: rates, JobDigest: d.Sum, JobFields: d.Fields}, nil
}
