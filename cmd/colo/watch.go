package main

import (
	"context"
	"errors"
	"flag"

	"colo/dashboard"
	"colo/metrics"
	"colo/placement"
	"colo/ps/node"
	"colo/timeline"
	"colo/train"
)

// watchFlags are the flags that watch a job trained in this process:
// --dashboard and --trace.
type watchFlags struct {
	dashboard, trace string
}

func (w *watchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.dashboard, "dashboard", "", "serve a live dashboard of the job at http://ADDR/, such as :8080 (traffic between machines, link rates, server load, loss, accuracy, round times, the cost model beside the measured traffic)")
	fs.StringVar(&w.trace, "trace", "", "write every worker's pull, compute, push and barrier spans to this file in the Chrome trace-event JSON format (chrome://tracing, ui.perfetto.dev)")
}

// check validates the flags before any work.
func (w *watchFlags) check(inProcess bool) error {
	if w.trace != "" && !inProcess {
		return usageError("--trace records the workers of this process: not with --processes or --netns")
	}
	return checkOutputs(output{"--trace", w.trace, false})
}

// watchers watch a job trained in this process: its metrics, its
// dashboard and its timeline, each nil when not asked for.
type watchers struct {
	mon   *metrics.Job
	dash  *dashboard.Board
	rec   *timeline.Recorder
	trace string
}

// startWatchers serves the metrics and the dashboard; errors name the
// flag.
func startWatchers(e *env, mf metrics.Flags, wf watchFlags) (*watchers, error) {
	w := &watchers{trace: wf.trace}
	var err error
	if w.mon, err = metrics.StartJob(mf, e.errOut); err != nil {
		return nil, usageError("%v", err)
	}
	if w.dash, err = dashboard.Start(wf.dashboard, dashboard.DefaultConfig(), e.errOut); err != nil {
		w.mon.End(context.Background())
		return nil, usageError("%v", err)
	}
	if wf.trace != "" {
		w.rec = timeline.New()
	}
	return w, nil
}

// watch makes stats the nodes' counters (deploy.InProcess.Watch).
func (w *watchers) watch(stats func() []node.Stats) {
	w.mon.Watch(stats)
	w.dash.Watch(stats)
}

// run sets cfg's hooks for the run on placement spec, whose cost is cost
// (nil: none), after progress, which is called first.
func (w *watchers) run(cfg *train.Config, spec string, width int, cost *placement.Cost, progress train.Progress) {
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

// end writes the trace and the metrics file, keeps the metrics for
// --linger, and sends the dashboard's last frame, saying how the job
// ended (err).
func (w *watchers) end(err error) error {
	if err != nil {
		w.dash.Status("failed: " + err.Error())
	}
	w.dash.Close()
	if w.rec != nil && err == nil {
		err = w.rec.WriteFile(w.trace)
	}
	return errors.Join(err, w.mon.End(context.Background()))
}
