package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"colo/features"
	"colo/internal/datasum"
	"colo/internal/tempdir"
	"colo/internal/textio"
	"colo/partition"
	"colo/partition/ooc"
)

// `colo partition --memory`: Parsa out of core (ooc.ParsaFile).

// memoryFlags are --memory and --spill-dir.
type memoryFlags struct {
	memory string
	spill  string
}

func (m *memoryFlags) register(f *cmdFlags) {
	f.StringVar(&m.memory, "memory", "auto", "parsa: partition out of core within `SIZE` (64MiB, 2GB, ...), streaming the blocks\n"+
		"from disk; auto: out of core only when the file would not fit in the available memory;\noff: always in memory. With --processes: the cap of each machine (auto, off: none)")
	f.StringVar(&m.spill, "spill-dir", "", "out of core and --processes: `DIR` for the temporary spill files (default: the system's temporary directory)")
}

// cap decides whether to partition out of core and within what
// (ooc.MemoryCap). ok is false for an in-memory run.
func (m *memoryFlags) cap(path, algo string) (cap int64, ok bool, err error) {
	if cap, ok, err = ooc.MemoryCap(m.memory, path, algo); err != nil {
		return 0, false, usageError("%v", err)
	}
	return cap, ok, nil
}

// machineCap returns the cap of each machine of colo partition
// --processes (ooc.MachineCap): 0 (none) for auto and off.
func (m *memoryFlags) machineCap() (int64, error) {
	c, err := ooc.MachineCap(m.memory)
	if err != nil {
		return 0, usageError("%v", err)
	}
	return c, nil
}

// runPartitionFile is runPartition out of core: ooc.ParsaFile, then
// the summary and the placement directory as in memory.
func runPartitionFile(e *env, path, out, algo string, opt partition.Options, df *dataFlags, mf *memoryFlags, memCap int64, j *jsonFlag) (err error) {
	load, err := df.options()
	if err != nil {
		return err
	}
	// The spill files go in a directory of this run, removed at its end
	// and by a signal (the partitioner takes no context to stop it).
	spill, err := tempdir.MakeIn(mf.spill, "colo-partition-")
	if err != nil {
		return fmt.Errorf("--spill-dir: %w", err)
	}
	defer tempdir.Remove(spill, &err)
	defer tempdir.RemoveOnSignal(spill)()
	ph := startPhase(e, "partition "+algo+" out of core within "+ooc.FormatBytes(memCap), 0)
	opt.Progress = ph.Set
	opt.Phase = func(name string, done, total int) { ph.Event("%s done (%d/%d)", name, done, total) }
	details := map[string]any{}
	opt.Report = func(name string, v any) { details[name] = v }
	oc := ooc.OutOfCore{Memory: memCap, TempDir: spill, Load: load}
	if df.spec != "" {
		// A table: its training rows through the fitted feature columns,
		// one row group at a time.
		fit, err := df.fit(path)
		if err != nil {
			ph.Abort()
			return err
		}
		topt, err := df.tableOptions()
		if err != nil {
			ph.Abort()
			return err
		}
		oc.Samples = func(sample func(ids []uint64) error) error {
			return fit.Samples(path, features.Train, topt, sample)
		}
	}
	start := time.Now()
	res, err := ooc.ParsaFile(path, opt, oc)
	if err != nil {
		ph.Abort()
		var me *ooc.MemoryError
		switch {
		case strings.EqualFold(mf.memory, "auto"):
			// Say why the run is out of core at all.
			return fmt.Errorf("--memory auto (%s would not fit in memory: out of core within %s): %w", path, ooc.FormatBytes(memCap), err)
		case errors.As(err, &me):
			return fmt.Errorf("--memory %s: %s: %w", mf.memory, path, err)
		}
		return err
	}
	defer res.Close()
	took := time.Since(start)
	ph.Finish("")
	s := res.Summary
	s.Algorithm, s.Seed, s.Seconds = algo, opt.Seed, took.Seconds()
	if s.DataChecksum, err = datasum.Files(path); err != nil {
		return err
	}
	s.Details = details
	stamped, err := e.stamp(s)
	if err != nil {
		return err
	}
	if err := res.WriteDir(out, json.RawMessage(stamped)); err != nil {
		return err
	}
	if df.fitted != nil {
		if err := df.fitted.Save(out); err != nil {
			return err
		}
	}
	if j.Path != "" {
		if err := writeJSON(e, j.Path, s); err != nil {
			return err
		}
	}
	st := res.Stats
	fmt.Fprintf(e.out, "%s: %s samples, %s parameters, %s edges; read out of core (%s)\n", path,
		textio.Commas(int64(s.NumSamp)), textio.Commas(int64(s.NumParams)), textio.Commas(s.NumEdges), st.Format)
	fmt.Fprintf(e.out, "%s on %d machines (seed %d) in %.3f s (%.2f M edges/s), written to %s\n", algo, opt.K, opt.Seed,
		took.Seconds(), float64(s.NumEdges)/took.Seconds()/1e6, out)
	fmt.Fprintf(e.out, "memory: cap %s, estimated need %s, peak resident %s, peak Go heap %s; %d blocks, %s spilled\n\n",
		ooc.FormatBytes(memCap), ooc.FormatBytes(st.Needed), ooc.FormatBytes(st.PeakRSS),
		ooc.FormatBytes(st.PeakHeap), st.Blocks, ooc.FormatBytes(st.SpillBytes))
	return s.WriteTable(e.out)
}
