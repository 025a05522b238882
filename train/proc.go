package train

import "colo/placement"

// NewResult returns the result of a job before it runs: the fields that
// the application, the placement called name, its cost and cfg give.
// Run fills the same fields; a deployment of separate processes starts
// from it and adds the workers' results (SetWork), the nodes' traffic
// (AddTraffic) and the times it measures.
func NewResult(app App, name string, partitionSeconds float64, cost *placement.Cost, cfg Config) *Result {
	res := &Result{
		App: app.Name(), Placement: name, Machines: cfg.Machines, Consistency: consistencyName(cfg.Clock),
		Updater: cfg.Rule.Name, Batch: cfg.Batch, LinkBandwidth: cfg.LinkBandwidth,
		PartitionSeconds: partitionSeconds,
	}
	if cost != nil {
		res.TMax, res.TSum = cost.TMax, cost.TSum
	}
	return res
}

// PartInterValues returns the share of machine rank in InterValues: the
// values its part pushes to and pulls from other machines' servers in
// the given number of passes: each key of a batch owned by another
// machine costs 2·width values per pass.
func PartInterValues(part Part, rank int, p *placement.Placement, width, passes int) int64 {
	var n int64
	for b := range part.Batches() {
		for _, key := range part.Keys(b) {
			if int(p.Param[key]) != rank {
				n += int64(2 * width * passes)
			}
		}
	}
	return n
}
