package main

import (
	"flag"

	"colo/metrics"
	"colo/train/watch"
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

// startWatchers serves the metrics and the dashboard; errors name the
// flag.
func startWatchers(e *env, mf metrics.Flags, wf watchFlags) (*watch.Watchers, error) {
	w, err := watch.Start(mf, wf.dashboard, wf.trace, e.errOut)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return w, nil
}
