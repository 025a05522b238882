package main

import (
	"colo/internal/membudget"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"colo/internal/datasum"
	"colo/partition"
	"colo/placement"
)

// defaultAlgo is the partitioner colo uses when none is named: the best
// one available.
func defaultAlgo() string {
	if _, err := partition.Lookup("parsa"); err == nil {
		return "parsa"
	}
	return "random"
}

func runPartition(e *env, args []string) error {
	f := newFlags(e, "partition", "colo partition [flags] --machines K FILE -o DIR",
		"Places the samples of FILE on K workers and its parameters on K servers\n"+
			"(worker i and server i share machine i) and writes DIR/data.part (one line\n"+
			"per sample, in file order: its machine), DIR/param.part (one line per\n"+
			"parameter: its id in the file and its machine) and DIR/summary.json (the\n"+
			"algorithm, its time and every metric of the cost model). Algorithms: "+fmt.Sprint(partition.Names())+",\n"+
			"each optionally followed by +refine (e.g. parsa+refine).")
	var df dataFlags
	df.register(f)
	var opt partition.Options
	algo := f.String("algo", defaultAlgo(), "partitioning algorithm: "+strings.Join(partition.Names(), ", ")+
		"\n(rmax: best's starts also refined for R_max, the bound of a BSP round, moving samples and parameters together;\nfor synchronous training, T_sum within 2% of best's)")
	f.Float64Var(&opt.RoundOpt.Slack, "rmax-slack", 0, fmt.Sprintf("--algo rmax: the share by which T_sum may grow while R_max is lowered (0: %g)", partition.DefaultRoundSlack))
	f.IntVar(&opt.K, "machines", 0, "number of machines K (required)")
	f.Alias("k", "machines")
	f.Uint64Var(&opt.Seed, "seed", 1, "random seed")
	f.Int64Var(&opt.Theta, "theta", 0, "memory bound θ on the parameters a worker holds, |N(U_i)| (0: none)")
	f.BoolVar(&opt.Directions, "directions", false, "for synchronous (bsp) training: then move parameters between servers so that no\nmachine pulls much more than it serves, lowering R_max = max_i max(T_i, 2·worker_i), a BSP round's bound, at a higher T_max")
	out := f.String("o", "", "output directory (required)")
	j := f.JSONOption("the summary")
	algoFlags(f, &opt)
	var mf memoryFlags
	mf.register(f)
	var ps psFlags
	ps.register(f)
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError("-o DIR is required")
	}
	if opt.K <= 0 {
		return usageError("--machines %d: want the number of machines, at least 1", opt.K)
	}
	run, err := partition.Lookup(*algo)
	if err != nil {
		return usageError("%v", err)
	}
	if b, _ := strings.CutSuffix(*algo, partition.RefineSuffix); opt.RoundOpt.Slack != 0 && b != "rmax" {
		return usageError("--rmax-slack applies to --algo rmax, not %s", *algo)
	}
	if err := ps.check(*algo); err != nil {
		return err
	}
	if err := opt.Check(); err != nil { // before the input is read
		return usageError("%v", err)
	}
	if err := checkOutputs(output{"-o", *out, true}, output{"--json", j.Path, false}); err != nil {
		return err
	}
	if err := placement.CheckDir(*out); err != nil { // the files in it too
		return fmt.Errorf("-o: %w", err)
	}
	if df.spec != "" && ps.processes > 0 {
		return usageError("--spec with --processes: the machines read libsvm, SNAP or Criteo text; place a table on one machine")
	}
	if ps.processes > 0 {
		if opt.Directions {
			return usageError("--directions with --processes: the machines write the placement; balance it with colo partition --directions on one machine, or in colo train")
		}
		return ps.runProcesses(e, f, pos[0], *out, *algo, opt, &df, &mf, j)
	}
	if df.spec != "" && (mf.memory == "" || strings.EqualFold(mf.memory, "auto")) {
		// A table is placed in memory unless --memory SIZE asks
		// otherwise: its compressed columns say little of the graph's
		// size.
		mf.memory = "off"
	}
	if memCap, ok, err := mf.cap(pos[0], *algo); err != nil {
		return err
	} else if ok && opt.Directions {
		return usageError("--directions: out of core (--memory %s) the parameters are placed from the neighbour sets alone; --memory off loads the graph", mf.memory)
	} else if ok && ps.on() {
		return usageError("--ps-workers: the workers share this process's graph, loaded whole, not out of core (--memory %s; off loads it)", mf.memory)
	} else if ok {
		return runPartitionFile(e, pos[0], *out, *algo, opt, &df, &mf, memCap, j)
	}
	load := startPhase(e, "load "+pos[0], 1)
	g, loadTime, err := df.load(pos[0])
	if err != nil {
		load.Abort()
		if me, ok := errors.AsType[*membudget.Error](err); ok && me.Line > 0 && *algo == "parsa" {
			if strings.EqualFold(mf.memory, "auto") && !opt.Directions && !ps.on() {
				// What --memory auto is for: the file's graph, read to
				// this line, does not fit.
				fmt.Fprintf(e.errOut, "%v: partitioning out of core within the budget instead\n", err)
				return runPartitionFile(e, pos[0], *out, *algo, opt, &df, &mf, me.Limit, j)
			}
			return fmt.Errorf("%w; or partition it out of core with --memory SIZE", err)
		}
		return err
	}
	load.Finish(g.Words())
	if err := opt.Validate(g.NumSamples()); err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	ph := startPhase(e, "partition "+*algo, 0)
	opt.Progress = ph.Set
	opt.Phase = func(name string, done, total int) {
		if b, _ := strings.CutSuffix(*algo, partition.RefineSuffix); b == "best" || b == "rmax" {
			ph.Event("start %d/%d (%s) done", done, total, name)
		} else {
			ph.Event("%s done (%d/%d)", name, done, total)
		}
	}
	details := map[string]any{"load_seconds": loadTime.Seconds()}
	opt.Report = func(name string, v any) { details[name] = v }
	baseline := placement.StartBaseline(g, opt.K)
	start := time.Now()
	var p *placement.Placement
	if ps.on() {
		if p, err = ps.run(f, g, opt, details); err == nil && opt.Directions {
			details["directions"] = partition.BalanceDirections(g, p, opt.Seed)
		}
	} else {
		p, err = run(g, opt)
	}
	if err != nil {
		ph.Abort()
		return err
	}
	ph.Finish("")
	took := time.Since(start)
	eval := startPhase(e, "evaluate", 1)
	s, err := placement.NewSummaryAgainst(g, p, opt.Theta, baseline())
	if err != nil {
		eval.Abort()
		return err
	}
	eval.Finish("")
	s.Algorithm, s.Seed, s.Seconds = *algo, opt.Seed, took.Seconds()
	s.Dataset = pos[0]
	if s.DataChecksum, err = datasum.Files(pos[0]); err != nil {
		return err
	}
	s.Details = details
	stamped, err := e.stamp(s)
	if err != nil {
		return err
	}
	if err := placement.WriteDir(*out, g, p, json.RawMessage(stamped)); err != nil {
		return err
	}
	if df.fitted != nil {
		// The feature columns the parameter ids of param.part are of.
		if err := df.fitted.Save(*out); err != nil {
			return err
		}
	}
	if j.Path != "" {
		if err := writeJSON(e, j.Path, s); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.out, "%s: %s; loaded in %.2f s\n", pos[0], g.Words(), loadTime.Seconds())
	fmt.Fprintf(e.out, "%s on %d machines (seed %d) in %.3f s, written to %s\n\n", *algo, opt.K, opt.Seed, took.Seconds(), *out)
	return s.WriteTable(e.out)
}

func runEval(e *env, args []string) error {
	f := newFlags(e, "eval", "colo eval [flags] FILE --data-part P [--param-part Q]",
		"Scores a placement of FILE on colo's cost model: memory and worker, server\n"+
			"and total traffic per machine, their maxima and sums, and the improvement\n"+
			"over random placement. P has one machine number per line per sample (the\n"+
			"output format of hMETIS, PaToH, Zoltan and METIS, and colo's data.part).\n"+
			"Q has `<parameter id> <machine>` per line (colo's param.part) or one\n"+
			"machine per line in increasing parameter id. Without Q the parameters are\n"+
			"assigned by colo's parameter assignment for the given data partition.")
	var df dataFlags
	df.register(f)
	dataPart := f.String("data-part", "", "data part file: one machine per sample (required)")
	paramPart := f.String("param-part", "", "parameter part file (optional)")
	k := f.Int("machines", 0, "number of machines K, at most the samples (default: one more than the largest machine in the data part file)")
	f.Alias("k", "machines")
	theta := f.Int64("theta", 0, "memory bound θ on |N(U_i)| (0: none)")
	seed := f.Uint64("seed", 1, "seed of the parameter assignment when there is no parameter part")
	var paramAlgo partition.ParamAlgo
	paramAlgoFlag(f, &paramAlgo)
	j := f.JSONOption("the summary")
	pos, err := f.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if err := checkOutputs(output{"--json", j.Path, false}); err != nil {
		return err
	}
	if *dataPart == "" {
		return usageError("--data-part P is required")
	}
	if *k < 0 {
		return usageError("--machines %d: want a positive number of machines", *k)
	}
	g, _, err := df.load(pos[0])
	if err != nil {
		return err
	}
	data, kData, err := placement.LoadDataPart(*dataPart, g.NumSamples(), *k)
	if err != nil {
		return err
	}
	p := &placement.Placement{K: kData, Data: data}
	start := time.Now()
	algo := "eval"
	if *paramPart != "" {
		// Without -k, the data part decides k, as for a placement
		// directory.
		if p.Param, err = placement.LoadParamPart(*paramPart, g, kData); err != nil {
			return err
		}
	} else {
		p.Param = make([]int32, g.NumParams())
		if _, err := partition.AssignParamsWith(g, p, paramAlgo, *seed); err != nil {
			return err
		}
		algo = "eval+assign"
		if paramAlgo != partition.ParamParsa {
			algo += "-" + string(paramAlgo)
		}
	}
	s, err := placement.NewSummary(g, p, *theta)
	if err != nil {
		return err
	}
	s.Algorithm, s.Seed, s.Seconds, s.Dataset = algo, *seed, time.Since(start).Seconds(), pos[0]
	s.Details = map[string]any{"data_part": *dataPart, "param_part": *paramPart}
	if j.Path != "" {
		if err := writeJSON(e, j.Path, s); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.out, "%s: %s\n", pos[0], g.Words())
	fmt.Fprintf(e.out, "placement %s on %d machines\n\n", *dataPart, p.K)
	return s.WriteTable(e.out)
}
