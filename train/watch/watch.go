// Package watch watches a job trained in this process: its metrics
// (metrics.Job, served for Prometheus and written to a file), its live
// dashboard (dashboard.Board) and its timeline of the workers' spans
// (timeline.Recorder, written as a Chrome trace), each off when not asked
// for. It is the glue between train.Config's hooks and those three; every
// hook costs O(1) per pass or check beyond what the watcher itself does.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"colo/dashboard"
	"colo/metrics"
	"colo/placement"
	"colo/ps/node"
	"colo/timeline"
	"colo/train"
)

// Watchers watch a job trained in this process; each of its watchers is
// nil when not asked for.
type Watchers struct {
	mon   *metrics.Job
	dash  *dashboard.Board
	rec   *timeline.Recorder
	trace string
}

// Start serves the metrics (mf) and the dashboard at dashboardAddr (""
// for none), and records a timeline when trace, the file End writes it
// to, is not empty. Both servers log to logw. Its errors are those of
// metrics.StartJob and dashboard.Start, which name the flag.
func Start(mf metrics.Flags, dashboardAddr, trace string, logw io.Writer) (*Watchers, error) {
	w := &Watchers{trace: trace}
	var err error
	if w.mon, err = metrics.StartJob(mf, logw); err != nil {
		return nil, err
	}
	if w.dash, err = dashboard.Start(dashboardAddr, dashboard.DefaultConfig(), logw); err != nil {
		w.mon.End(context.Background())
		return nil, err
	}
	if trace != "" {
		w.rec = timeline.New()
	}
	return w, nil
}

// Watch makes stats the nodes' counters (deploy.InProcess.Watch).
func (w *Watchers) Watch(stats func() []node.Stats) {
	w.mon.Watch(stats)
	w.dash.Watch(stats)
}

// Run sets cfg's hooks for the run on placement spec, of a model width
// wide, whose cost is cost (nil: none), after progress, which is called
// first.
func (w *Watchers) Run(cfg *train.Config, spec string, width int, cost *placement.Cost, progress train.Progress) {
	w.dash.Run(dashboard.RunInfo{Name: spec, Machines: cfg.Machines, Width: width, Cost: cost})
	cfg.Progress = func(p train.Pass) {
		progress(p)
		w.mon.Pass(p)
		w.dash.Pass(p)
	}
	cfg.Checked = func(c train.Check) {
		w.mon.Check(c)
		w.dash.Check(c)
	}
	cfg.Trace = w.rec.Workers(spec)
}

// Logf returns the log of a deployment's restarts and replacements
// (deploy.Processes.Logf) that also lists each line on the dashboard,
// naming the node that failed and how the job recovered; logf is the
// log it writes to as well (nil for none).
func (w *Watchers) Logf(logf func(format string, args ...any)) func(format string, args ...any) {
	if w.dash == nil {
		return logf
	}
	return func(format string, args ...any) {
		w.dash.Event(fmt.Sprintf(format, args...))
		if logf != nil {
			logf(format, args...)
		}
	}
}

// End writes the trace and the metrics file, keeps the metrics for
// their linger time, and sends the dashboard's last frame, saying how the
// job ended (err, which it returns joined with its own errors).
func (w *Watchers) End(err error) error {
	if err != nil {
		w.dash.Status("failed: " + err.Error())
	}
	w.dash.Close()
	if w.rec != nil && err == nil {
		err = w.rec.WriteFile(w.trace)
	}
	return errors.Join(err, w.mon.End(context.Background()))
}
