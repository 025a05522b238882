package clib

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"colo/checkpoint"
)

// # Checkpoints
//
// Save and Load write and read a checkpoint of the cluster's tables in
// the layout of package checkpoint, the one colo train writes: a
// directory per step (round-NNNNNNNNN), a snapshot file per server
// (server-SSS.snap: every key with its values and update rule states,
// so that AdaGrad's sums and Adam's moments and step counts resume with
// the rows), a state file of the program's own (state.bin, rank 0's
// bytes: the dense parameters' starting values, the epoch…), and the
// MANIFEST with each file's size and CRC-32C, written last, which
// makes the checkpoint complete. Both are collective: every worker
// calls them at the same point of its program, and worker r writes or
// reads the snapshots of servers r, r+size, … (in a cluster of
// machines, its own server's).
//
// The MANIFEST's job string is the identity of the cluster's keys: the
// number of servers, the placement's keys, the rule and every declared
// table in order. A checkpoint loads only into a cluster with the same
// identity; the error names what differs.

// StateFile is the name of the program's own file in a checkpoint.
const StateFile = "state.bin"

// identity is what a checkpoint's keys mean: the cluster's shape and
// tables, as the MANIFEST's job string.
type identity struct {
	Format  string    `json:"format"`
	Servers int       `json:"servers"`
	Lo      uint64    `json:"placed_keys"`
	Rule    string    `json:"rule"`
	Tables  []tableID `json:"tables"`
}

// tableID is a declared table as a checkpoint's identity holds it.
type tableID struct {
	Name  string `json:"name"`
	Shape string `json:"shape"`
	Init  string `json:"init"`
}

const identityFormat = "colo-python-tables/1"

func (s *Session) identity() identity {
	id := identity{Format: identityFormat, Servers: s.w.Servers(), Lo: s.lo, Rule: "unknown"}
	if s.rule != nil {
		id.Rule = ruleString(*s.rule)
	}
	s.mu.Lock()
	for _, t := range s.tables {
		id.Tables = append(id.Tables, tableID{Name: t.spec.Name, Shape: shapeString(t.spec), Init: fmt.Sprintf("%+v", t.spec.Init)})
	}
	s.mu.Unlock()
	return id
}

// differs says how a checkpoint's identity old differs from now's, or
// "" when it does not.
func (now identity) differs(old identity) string {
	switch {
	case old.Format != now.Format:
		return fmt.Sprintf("it is a checkpoint of %q, not of a Python program's tables", old.Format)
	case old.Servers != now.Servers:
		return fmt.Sprintf("it was saved by %d servers, this cluster has %d", old.Servers, now.Servers)
	case old.Lo != now.Lo:
		return fmt.Sprintf("it was saved with %d placed keys, this cluster has %d (another placement)", old.Lo, now.Lo)
	case old.Rule != now.Rule && old.Rule != "unknown" && now.Rule != "unknown":
		return fmt.Sprintf("it was saved by servers running %s, these run %s", old.Rule, now.Rule)
	case len(old.Tables) != len(now.Tables):
		return fmt.Sprintf("it holds %d tables, this program declared %d (declare every table before loading)", len(old.Tables), len(now.Tables))
	}
	for i, o := range old.Tables {
		n := now.Tables[i]
		if o != n {
			return fmt.Sprintf("its table %d is %q, %s, init %s; this program's is %q, %s, init %s", i, o.Name, o.Shape, o.Init, n.Name, n.Shape, n.Init)
		}
	}
	return ""
}

// Save writes the checkpoint of step to dir: once every push of this
// worker is answered (waited for here, whether or not the program waited
// for its tickets) and after a barrier, so that the snapshots are of
// whole steps, this worker's servers' snapshots and, on worker 0, state;
// then worker 0 writes the MANIFEST. Every worker returns once the checkpoint is
// complete, or with the error of the worker that failed. A checkpoint of
// the same step already in dir is replaced.
func (s *Session) Save(ctx context.Context, dir string, step int, state []byte) error {
	if dir == "" {
		return &SpecError{"checkpoint: an empty directory name"}
	}
	if step < 0 {
		return &SpecError{fmt.Sprintf("checkpoint of %s: step %d, want ≥ 0", dir, step)}
	}
	id := s.identity()
	job, err := json.Marshal(id)
	if err != nil {
		return err
	}
	// Every push of every worker answered, then nobody pushes until the
	// snapshots are taken: they are of whole steps, whatever tickets the
	// program has not waited for yet.
	if err := s.flushPushes(); err != nil {
		return fmt.Errorf("checkpoint of step %d: a push before it failed: %w", step, err)
	}
	if err := s.Barrier(ctx); err != nil {
		return fmt.Errorf("checkpoint of step %d: %w", step, err)
	}
	rank, size, servers := s.Rank(), s.Size(), id.Servers
	n := servers + 1 // the snapshots, then the state
	// Sizes and checksums by file, then whether a writer failed: each
	// file is written by one worker, so the sum is its figures.
	files := make([]float64, 2*n+1)
	record := func(i int, f checkpoint.File) { files[2*i], files[2*i+1] = float64(f.Size), float64(f.CRC32C) }
	werr := func() error {
		for sv := rank; sv < servers; sv += size {
			b, err := s.w.Save(sv)
			if err != nil {
				return err
			}
			f, err := checkpoint.WriteSnapshot(dir, step, checkpoint.Snapshot{Server: sv, Batch: b})
			if err != nil {
				return err
			}
			record(sv, f)
		}
		if rank == 0 {
			f, err := checkpoint.WriteFile(dir, step, StateFile, state)
			if err != nil {
				return err
			}
			record(servers, f)
		}
		return nil
	}()
	if werr != nil {
		files[2*n] = 1
	}
	if err := s.AllReduce(ctx, files); err != nil {
		return fmt.Errorf("checkpoint of step %d: gathering the checksums: %w", step, err)
	}
	switch {
	case werr != nil:
		return fmt.Errorf("checkpoint of step %d: %w", step, werr)
	case files[2*n] > 0:
		return fmt.Errorf("checkpoint of step %d: another worker could not write its part (its own error says why)", step)
	}
	done := []float64{0}
	var cerr error
	if rank == 0 {
		m := checkpoint.Manifest{Round: step, Job: string(job)}
		for i := range n {
			name := StateFile
			if i < servers {
				name = checkpoint.SnapshotName(i)
			}
			m.Files = append(m.Files, checkpoint.File{Name: name, Size: int64(files[2*i]), CRC32C: uint32(files[2*i+1])})
		}
		if cerr = checkpoint.Commit(dir, m); cerr != nil {
			done[0] = 1
		}
	}
	// Nobody returns before the MANIFEST is there.
	if err := s.AllReduce(ctx, done); err != nil {
		return fmt.Errorf("checkpoint of step %d: %w", step, err)
	}
	switch {
	case cerr != nil:
		return fmt.Errorf("checkpoint of step %d: %w", step, cerr)
	case done[0] > 0:
		return fmt.Errorf("checkpoint of step %d: worker 0 could not write its MANIFEST (its own error says why)", step)
	}
	return nil
}

// Load reads the checkpoint of step in dir, or with step < 0 the newest
// complete one, installs its snapshots on the servers and returns its
// step and the state worker 0 saved. Every worker calls it after
// declaring the tables the checkpoint holds, in the same order, and
// before any push (a worker that pushed already fails, and so does
// every other). A checkpoint of other servers or tables is refused,
// saying what differs.
func (s *Session) Load(ctx context.Context, dir string, step int) (int, []byte, error) {
	if dir == "" {
		return 0, nil, &SpecError{"checkpoint: an empty directory name"}
	}
	rank, size := s.Rank(), s.Size()
	// Worker 0 picks the checkpoint; every worker says whether it pushed.
	pick := []float64{0, 0}
	var perr error
	if rank == 0 {
		var m *checkpoint.Manifest
		if step < 0 {
			m, _, perr = checkpoint.Latest(dir)
		} else {
			m, perr = checkpoint.Open(dir, step)
		}
		if perr == nil {
			pick[0] = float64(m.Round + 1)
		}
	}
	if s.pushed.Load() {
		pick[1] = 1
	}
	if err := s.AllReduce(ctx, pick); err != nil {
		return 0, nil, fmt.Errorf("loading a checkpoint of %s: %w", dir, err)
	}
	switch {
	case pick[1] > 0 && s.pushed.Load():
		return 0, nil, &SpecError{fmt.Sprintf("loading a checkpoint of %s: this worker pushed already; load it after declaring the tables and before training", dir)}
	case pick[1] > 0:
		return 0, nil, &SpecError{fmt.Sprintf("loading a checkpoint of %s: another worker pushed already; every worker loads it after declaring the tables and before training", dir)}
	case perr != nil:
		return 0, nil, fmt.Errorf("loading a checkpoint: %w", perr)
	case pick[0] < 1:
		return 0, nil, fmt.Errorf("loading a checkpoint of %s: worker 0 found none (its own error says why)", dir)
	}
	m, err := checkpoint.Open(dir, int(pick[0])-1)
	if err != nil {
		return 0, nil, fmt.Errorf("loading a checkpoint: %w", err)
	}
	var old identity
	if err := json.Unmarshal([]byte(m.Job), &old); err != nil {
		return 0, nil, fmt.Errorf("loading the checkpoint %s: its MANIFEST's job is not a Python program's tables: %w", m.Dir, err)
	}
	if why := s.identity().differs(old); why != "" {
		return 0, nil, &SpecError{fmt.Sprintf("loading the checkpoint %s: %s", m.Dir, why)}
	}
	state, lerr := func() ([]byte, error) {
		for sv := rank; sv < old.Servers; sv += size {
			data, err := m.Read(checkpoint.SnapshotName(sv))
			if err != nil {
				return nil, err
			}
			snap, err := checkpoint.DecodeSnapshot(data)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", m.Dir, checkpoint.SnapshotName(sv), err)
			}
			if snap.Server != sv || snap.Width != 0 {
				return nil, fmt.Errorf("%s/%s: the snapshot of server %d at width %d, want server %d at width 0", m.Dir, checkpoint.SnapshotName(sv), snap.Server, snap.Width, sv)
			}
			if err := s.w.Load(sv, snap.Batch); err != nil {
				return nil, err
			}
		}
		return m.Read(StateFile)
	}()
	failed := []float64{0}
	if lerr != nil {
		failed[0] = 1
	}
	// Nobody pushes before every snapshot is installed.
	if err := s.AllReduce(ctx, failed); err != nil {
		return 0, nil, fmt.Errorf("loading the checkpoint %s: %w", m.Dir, err)
	}
	switch {
	case lerr != nil:
		return 0, nil, fmt.Errorf("loading the checkpoint %s: %w", m.Dir, lerr)
	case failed[0] > 0:
		return 0, nil, errors.New("loading the checkpoint " + m.Dir + ": another worker could not load its part (its own error says why)")
	}
	return m.Round, state, nil
}
