package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"colo/graph"
	"colo/internal/datasum"
	"colo/partition"
	"colo/placement"
	"colo/ps/clock"
	"colo/ps/route"
	"colo/train"
)

// Place returns the placement of job on the training graph g: the part
// files of a directory written by colo partition when job.Placement is
// one, otherwise the placement the partitioner of that name computes on
// the job's machines with its seed (the "random" partitioners balanced,
// the others balanced by direction under BSP when job.Config.Directions
// is set: partition.Options.Directions; "rmax" compares its candidates
// on R_max under BSP with a server beside every worker, on T_max
// otherwise: partition.Options.Async), and the seconds partitioning took
// (0 for a directory).
func Place(job train.Job, g *graph.Graph) (*placement.Placement, float64, error) {
	spec, k := job.Placement, job.Config.Machines
	if st, err := os.Stat(spec); err == nil && st.IsDir() {
		warn, err := datasum.Check(filepath.Join(spec, placement.SummaryFile), job.Data.Checksum, job.Data.Train)
		if warn != "" && job.Config.Logf != nil {
			job.Config.Logf("%s", warn)
		}
		if err != nil {
			return nil, 0, err
		}
		p, err := placement.ReadDir(spec, g, 0)
		if err != nil {
			return nil, 0, err
		}
		if p.K != k {
			return nil, 0, fmt.Errorf("%s places the samples on %d machines, the job has %d", spec, p.K, k)
		}
		return p, 0, nil
	}
	run, err := partition.Lookup(spec)
	if err != nil {
		return nil, 0, fmt.Errorf("placement: %w (or a directory written by colo partition)", err)
	}
	cfg := job.Config
	random := strings.HasPrefix(spec, "random")
	opt := partition.Options{K: k, Seed: cfg.Seed, Balanced: random,
		Directions: cfg.Directions && !random && cfg.Clock.Mode == clock.BSP && cfg.Colocated(),
		Async:      cfg.Clock.Mode != clock.BSP || !cfg.Colocated()}
	if err := opt.Validate(g.NumSamples()); err != nil {
		return nil, 0, err
	}
	start := time.Now()
	p, err := run(g, opt)
	if err != nil {
		return nil, 0, err
	}
	return p, time.Since(start).Seconds(), nil
}

// CheckPartitioner says whether spec is a partitioner's name (optionally
// with +refine) or a directory.
func CheckPartitioner(spec string) error {
	if st, err := os.Stat(spec); err == nil && st.IsDir() {
		return nil
	}
	if _, err := partition.Lookup(spec); err != nil {
		return fmt.Errorf("placement: %w (or a directory written by colo partition)", err)
	}
	return nil
}

// OpenPlaced opens job (Open) and places it (Opened.Place): what a
// machine or the scheduler of a cluster of processes does with the job
// it is given, whose placement is a directory or is computed the same way
// in every process.
func OpenPlaced(job train.Job) (*Opened, *placement.Placement, error) {
	opened, err := Open(job)
	if err != nil {
		return nil, nil, err
	}
	p, _, err := opened.Place(job)
	if err != nil {
		return nil, nil, err
	}
	return opened, p, nil
}

// Placed opens and places job (OpenPlaced) and returns its application
// and placement: deploy.Kind's Place.
func Placed(job train.Job) (train.App, *placement.Placement, error) {
	o, p, err := OpenPlaced(job)
	if err != nil {
		return nil, nil, err
	}
	return o.App, p, nil
}

// Route returns what the scheduler of a cluster training job needs: the
// routing table of the job's placement (each key to its server) and the
// application's width.
func Route(job train.Job) (*route.Table, int, error) {
	opened, p, err := OpenPlaced(job)
	if err != nil {
		return nil, 0, err
	}
	table, err := route.FromPlacement(p.Param, job.Config.NumServers())
	if err != nil {
		return nil, 0, fmt.Errorf("placement %s: %w", job.Placement, err)
	}
	return table, opened.App.Width(), nil
}
