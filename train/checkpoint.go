package train

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"colo/checkpoint"
	"colo/ps/worker"
)

// Checkpoints and resuming (package checkpoint stores the files).
//
// Every Checkpoint.Every rounds, at a round boundary, the workers take a
// checkpoint of the whole job, off the training path:
//
//  1. an all-reduce, which is the barrier: every worker's pushes of the
//     round are acknowledged, so every server has applied them (under
//     BSP the round is summed; under bounded delay and async each push
//     is applied before its acknowledgement) and nothing of the next
//     round is in flight. It carries whether a worker's writer of the
//     previous checkpoint is still at work: if any is, every worker
//     skips this checkpoint and counts it (Checkpointer.Skipped), and
//     training goes on at once; no worker waits for a writer (unless
//     Checkpoint.Wait asks it to, so that every due checkpoint is
//     taken);
//  2. the capture, in memory: worker rank s mod W asks server s for the
//     snapshot of its store (worker.Worker.Save: a copy of the values
//     and update rule states of every key it holds), and every worker
//     encodes its progress (WorkerState: pass, batch, rounds, the pass's
//     sums so far, the passes, and the state its part keeps, see
//     StatefulPart); a barrier, so that no worker pushes the next round
//     before every server's snapshot is taken. Training goes on from
//     here;
//  3. a writer goroutine per worker writes the snapshots and the state,
//     each file atomically (and durably when worker 0 said so in the
//     agreement, see Checkpoint.Durable), then an all-reduce in the
//     workers' subgroup WriterGroup (barrier numbers of its own, so that
//     it runs beside the loop's) gathers every file's size and CRC-32C
//     and whether a writer failed, and worker 0's writer writes the
//     MANIFEST naming the round and the job, which completes the
//     checkpoint, then prunes all but the newest Keep (and the newest
//     durable one).
//
// The files of one checkpoint are thus of the same round on every node,
// and the manifest is written after every file, as before. What training
// pays is the barrier and the copies of step 2 (Checkpointer.Seconds);
// encoding, checksums, writing and fsync are the writer's
// (WriteSeconds). A writer's failure to write is returned at the next
// checkpoint or at the end of the loop, and fails the job; a writer that
// meets a pause is waited for before the rollback, so that worker 0
// picks the checkpoint to roll back to when no manifest can appear any
// more. At the end of the loop the writer is waited for, and the
// checkpoint of the last round, when it was skipped, is taken then (no
// round changed the servers since), so that a job ends with its final
// checkpoint whatever the writers' speed.
//
// Resuming (Checkpoint.Resume), worker 0 picks the newest complete
// checkpoint (a damaged one is refused, naming the file, and the one
// before used), every worker learns its round through an all-reduce,
// loads its progress and its part's state, worker s mod W loads server
// s's snapshot (worker.Worker.Load), and after a barrier the loop goes on
// from the round after the checkpoint. Under BSP the resumed job ends
// with the same model, bit for bit, as a job never stopped: the servers
// hold the same values and states, the workers compute the same batches
// in the same order, and the servers sum each round in worker rank
// order. Under bounded delay and async, the updates applied after the
// checkpoint are lost and trained again, in an order that may differ.
// The rounds the consistency clocks count (and the staleness and the
// evaluator's steps measured from them) start again at 0.
//
// The directory must be shared by the workers (one host, or a shared
// file system). Jobs whose keys move between servers (Config.Balance)
// are not checkpointed: the routing table is not saved.

// Keep is the number of complete checkpoints kept (and the newest
// durable one, see Checkpoint.Durable).
const Keep = 2

// DurableEvery is the longest time between the captures of two durable
// checkpoints (see Checkpoint.Durable): about the delay after which the
// kernel writes back a file written without fsync (Linux's
// dirty_expire_centisecs, 30 s), so that a machine's crash loses about
// what it would lose anyway of the files being written.
const DurableEvery = 30 * time.Second

// Checkpoint configures a job's checkpoints.
type Checkpoint struct {
	// Dir is where checkpoints are written, Every the rounds between two;
	// both or neither are set.
	Dir   string `json:"dir,omitempty"`
	Every int    `json:"every,omitempty"`
	// Resume, when set, is a directory of checkpoints to resume from: the
	// job starts from its newest complete checkpoint.
	Resume string `json:"resume,omitempty"`
	// Wait, when set, has a checkpoint that is due while the one before
	// is still being written wait for it, instead of being skipped: every
	// due checkpoint is taken, at the cost of the wait on the training
	// path when the writers are slower than Every rounds.
	Wait bool `json:"wait,omitempty"`
	// Durable has every checkpoint made durable (its files and manifest
	// fsynced before the manifest is in place). Without it, a checkpoint
	// is durable when the newest durable one was captured DurableEvery or
	// longer before, and so are the first and the last of a loop; the
	// others are volatile (checkpoint.Options.Volatile): they survive a
	// process's crash, not always the machine's, whose restart falls back
	// to the newest durable one, which is kept for that.
	Durable bool `json:"durable,omitempty"`
	// Incremental writes, for a server whose store changed little since
	// the checkpoint before, only the slots it wrote since (a delta on
	// that checkpoint, see package checkpoint), and a whole snapshot
	// otherwise: at the first checkpoint of a loop (and after a restore),
	// for every durable checkpoint, after MaxDeltas deltas in a row, and
	// when the delta would make the deltas since the last whole snapshot
	// hold more slots than it does (so that a restore reads at most twice
	// a whole snapshot). Restores are bit for bit those of whole
	// checkpoints.
	Incremental bool `json:"incremental,omitempty"`
	// Override resumes from a checkpoint of a job whose settings differ
	// in what changes the result but not the checkpoint's layout (a rate,
	// the features transform, the data's values; Identity), with the new
	// values.
	Override bool `json:"override,omitempty"`
}

// Register registers c's flags in fs (colo train's --checkpoint,
// --checkpoint-every, --checkpoint-durable, --checkpoint-wait,
// --checkpoint-incremental, --resume and --resume-override).
func (c *Checkpoint) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Dir, "checkpoint", c.Dir, "write a checkpoint of the servers' keys and the workers' progress to this directory every --checkpoint-every rounds (the newest 2 kept; one host or a shared file system)")
	fs.IntVar(&c.Every, "checkpoint-every", c.Every, "rounds between two checkpoints (with --checkpoint); each is written beside training, and one due while the one before is still being written is skipped")
	fs.BoolVar(&c.Durable, "checkpoint-durable", c.Durable, "with --checkpoint: fsync every checkpoint; otherwise one at least every 30 s, the first and the last are, and the others survive a process's crash but maybe not the machine's")
	fs.BoolVar(&c.Wait, "checkpoint-wait", c.Wait, "with --checkpoint: a checkpoint due while the one before is still being written waits for it instead of being skipped (every due checkpoint is taken)")
	fs.BoolVar(&c.Incremental, "checkpoint-incremental", c.Incremental, fmt.Sprintf("with --checkpoint: write of each server only the keys changed since the checkpoint before (a delta on it) when they are few, a whole snapshot every %d deltas or when the deltas would outgrow it; restores are bit for bit the same", MaxDeltas))
	fs.StringVar(&c.Resume, "resume", c.Resume, "resume a stopped job from the newest complete checkpoint in this directory (the same job and flags; a damaged checkpoint is refused and the one before used); may be the --checkpoint directory")
	fs.BoolVar(&c.Override, "resume-override", c.Override, "with --resume: resume from a checkpoint whose job had another rate, features transform, seed or data (each named, with both values), training on with the new values")
}

// MaxDeltas is the number of deltas in a row after which an incremental
// checkpoint writes a server's whole snapshot again (Checkpoint.Incremental).
const MaxDeltas = 8

// IsZero reports whether c asks for nothing.
func (c Checkpoint) IsZero() bool { return c == Checkpoint{} }

// Validate checks c; errors name the field as a job file spells it.
func (c Checkpoint) Validate() error {
	switch {
	case c.Every < 0:
		return fmt.Errorf("checkpoint.every %d: want a positive number of rounds", c.Every)
	case c.Every > 0 && c.Dir == "":
		return fmt.Errorf("checkpoint.every %d without checkpoint.dir: want a directory to write to", c.Every)
	case c.Dir != "" && c.Every == 0:
		return fmt.Errorf("checkpoint.dir %s without checkpoint.every: want the rounds between two checkpoints", c.Dir)
	case c.Wait && c.Dir == "":
		return fmt.Errorf("checkpoint.wait without checkpoint.dir: it says how checkpoints are written, and none are")
	case c.Durable && c.Dir == "":
		return fmt.Errorf("checkpoint.durable without checkpoint.dir: it says how checkpoints are written, and none are")
	case c.Incremental && c.Dir == "":
		return fmt.Errorf("checkpoint.incremental without checkpoint.dir: it says how checkpoints are written, and none are")
	case c.Override && c.Resume == "":
		return errors.New("checkpoint.override without checkpoint.resume: it overrides the checks of a resume")
	}
	return nil
}

// StatefulPart is a Part that keeps state of its own from round to
// round (row factors, a step count): a checkpoint saves it with
// MarshalBinary, and resuming restores it with UnmarshalBinary on a part
// made as the saved one was.
type StatefulPart interface {
	Part
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// WorkerState is a worker's file of a checkpoint: where its loop was
// after round Rounds. Floats are kept as their bits, so that they come
// back exactly (NaN included).
type WorkerState struct {
	Rank int `json:"rank"`
	// Rounds is the rounds trained; the next is batch Batch of pass Pass
	// (Batch may be the number of batches: the pass's batches are done).
	Rounds int `json:"rounds"`
	Pass   int `json:"pass"`
	Batch  int `json:"batch"`
	// LossBits, Samples and Correct are this worker's sums of the pass so
	// far; PrevBits the loss of the previous pass (NaN before the first).
	LossBits uint64 `json:"loss_bits"`
	Samples  int    `json:"samples"`
	Correct  int    `json:"correct"`
	PrevBits uint64 `json:"prev_bits"`
	// Seconds is the training time so far.
	Seconds float64 `json:"seconds"`
	Passes  []Pass  `json:"passes"`
	// Part is the part's state (StatefulPart), nil for parts without.
	Part []byte `json:"part,omitempty"`
}

// WorkerFile returns the file name of worker rank r's state.
func WorkerFile(r int) string { return fmt.Sprintf("worker-%03d.json", r) }

// Checkpointer takes and restores a job's checkpoints on one worker (see
// above); Deployment.WorkerSchedule gives each worker one when the job
// asks for checkpoints.
type Checkpointer struct {
	Config Checkpoint
	// Job identifies the job (JobID); a checkpoint of another job is
	// refused.
	Job string
	// Servers and Workers are the cluster's.
	Servers, Workers int
	// Logf, when set, receives the refusals of damaged checkpoints.
	Logf func(format string, args ...any)
	// Taken counts the checkpoints this worker took part in, Seconds the
	// training time they cost it (the agreement with the other workers,
	// which is the checkpoint's barrier, and the capture of its share in
	// memory; the files are written beside training). Skipped counts the
	// checkpoints due while a writer of the one before was still at work
	// on some worker, not taken; WriteSeconds the time this worker's
	// writer spent on the files (and the manifest, on worker 0).
	Taken        int
	Seconds      float64
	Skipped      int
	WriteSeconds float64
	// Restored lists the checkpoints this worker restored.
	Restored []Restore
	// Bytes counts the bytes of the files of the checkpoints written
	// (every worker's: the servers' snapshots and deltas, the workers'
	// progress; not the manifests), Deltas the servers' deltas among
	// them (Checkpoint.Incremental).
	Bytes  int64
	Deltas int

	// chains holds, per server this worker captures, the rounds of the
	// checkpoints its newest capture builds on (an incremental
	// checkpoint's, see capture); nil when the next must be whole.
	chains map[int]*chain

	// writer is the checkpoint being written, nil when none; skipped the
	// state of the last due checkpoint when it was skipped.
	writer  *writing
	skipped *WorkerState
	// last is the round of the last checkpoint taken in this loop and
	// whether it is volatile (every worker has the same: a replacement
	// starts a loop with none, the others forget theirs when their loop
	// ends, see abandon and restore); durableAt (worker 0's) when the
	// newest durable one was captured.
	last struct {
		round    int
		volatile bool
	}
	durableAt time.Time
	// gate, when set (by tests), is called by the writer before it writes
	// the checkpoint of round; now, when set, replaces time.Now.
	gate func(round int)
	now  func() time.Time
}

// JobID identifies job d for its checkpoints: its Identity as a
// MANIFEST holds it.
func (d *Deployment) JobID() string { return d.Identity().String() }

// due reports whether a checkpoint is due after rounds.
func (c *Checkpointer) due(rounds int) bool {
	return c != nil && c.Config.Every > 0 && rounds > 0 && rounds%c.Config.Every == 0
}

// WriterGroup is the workers' barrier subgroup (worker.Worker.AllReduceIn)
// in which the checkpoint writers gather their files' checksums.
const WriterGroup = "checkpoint"

// writing is a checkpoint being written by a writer goroutine; err,
// gather and seconds are set before done is closed.
type writing struct {
	round int
	opts  checkpoint.Options
	done  chan struct{}
	// err is a failure to write a file, the manifest or to prune; gather
	// a failure of the all-reduce (a pause, the end of the job).
	err, gather error
	seconds     float64
	// bytes and deltas count the checkpoint's files (Bytes, Deltas);
	// incomplete marks one another worker's writer failed to write.
	bytes      int64
	deltas     int
	incomplete bool
}

// save takes the checkpoint of state st on worker w (every worker at the
// same round): it agrees with the other workers on taking it, captures
// this worker's share in memory and hands it to a writer goroutine, which
// writes it while training goes on (see write). When a writer of the
// previous checkpoint is still at work on any worker, the checkpoint is
// skipped, on every worker alike, and counted (Skipped); nothing waits
// for a writer here. Worker 0 decides whether the checkpoint is durable
// (Checkpoint.Durable; always with durable) and tells the others in the
// same agreement.
func (c *Checkpointer) save(ctx context.Context, w *worker.Worker, part Part, st WorkerState, durable bool) error {
	t0 := time.Now()
	defer func() { c.Seconds += time.Since(t0).Seconds() }()
	if c.Config.Wait {
		if err := c.wait(); err != nil {
			return err
		}
	}
	busy := 0.0
	if c.writer != nil {
		select {
		case <-c.writer.done:
			if err := c.collect(); err != nil {
				return err
			}
		default:
			busy = 1
		}
	}
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	sync := 0.0
	if w.Rank() == 0 && (durable || c.Config.Durable || c.durableAt.IsZero() || now().Sub(c.durableAt) >= DurableEvery) {
		sync = 1
	}
	// The agreement is the barrier: every worker's pushes of the round
	// are acknowledged, so every server has applied them and nothing of
	// the next round is in flight.
	got, err := w.AllReduce(ctx, []float64{busy, sync})
	if err != nil {
		return err
	}
	if got[0] > 0 {
		c.Skipped++
		c.skipped = &st
		return nil
	}
	opts := checkpoint.Options{Volatile: got[1] == 0}
	if !opts.Volatile && w.Rank() == 0 {
		c.durableAt = now()
	}
	round, rank := st.Rounds, w.Rank()
	var snaps []checkpoint.Snapshot
	for s := rank; s < c.Servers; s += c.Workers {
		if c.Config.Incremental {
			snap, err := c.capture(w, s, round, !opts.Volatile)
			if err != nil {
				c.chains = nil
				return fmt.Errorf("checkpoint of round %d: %w", round, err)
			}
			snaps = append(snaps, snap)
			continue
		}
		snap, err := w.Save(s)
		if err != nil {
			return fmt.Errorf("checkpoint of round %d: %w", round, err)
		}
		snaps = append(snaps, checkpoint.Snapshot{Server: s, Width: w.Width(), Batch: snap})
	}
	if sp, ok := part.(StatefulPart); ok {
		b, err := sp.MarshalBinary()
		if err != nil {
			return fmt.Errorf("checkpoint of round %d: the state of worker %d's part: %w", round, rank, err)
		}
		st.Part = b
	}
	st.Rank = rank
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("checkpoint of round %d: worker %d: %w", round, rank, err)
	}
	// Every snapshot is taken before any worker pushes the next round.
	if err := w.Barrier(ctx); err != nil {
		return err
	}
	c.Taken++
	c.skipped = nil
	c.last.round, c.last.volatile = round, opts.Volatile
	c.writer = &writing{round: round, opts: opts, done: make(chan struct{})}
	go c.write(ctx, w, c.writer, snaps, data)
	return nil
}

// chain is what an incremental checkpoint keeps of a server's captures
// since its last whole snapshot: the rounds (the whole snapshot's first,
// then each delta's), the slots of the whole snapshot and those of the
// deltas together.
type chain struct {
	rounds      []int
	full, slots int
}

// capture takes server s's share of an incremental checkpoint of round
// (Checkpoint.Incremental): a delta on this worker's capture of s before
// when there is one in this loop, the chain is shorter than MaxDeltas,
// whole is not set (a durable checkpoint is whole, so that it needs no
// volatile one) and the server's store changed in few enough slots that
// the chain's deltas stay smaller than its whole snapshot; the whole
// snapshot otherwise. The server decides from its marks
// (worker.Worker.SaveSince): a server that was replaced, restored or
// that moved keys since gives the whole snapshot.
func (c *Checkpointer) capture(w *worker.Worker, s, round int, whole bool) (checkpoint.Snapshot, error) {
	if c.chains == nil {
		c.chains = map[int]*chain{}
	}
	ch := c.chains[s]
	base, budget := -1, 0
	if ch != nil && !whole && len(ch.rounds) <= MaxDeltas {
		base, budget = ch.rounds[len(ch.rounds)-1], max(ch.full-ch.slots, 0)
	}
	got, err := w.SaveSince(s, round, base, budget)
	if err != nil {
		delete(c.chains, s)
		return checkpoint.Snapshot{}, err
	}
	snap := checkpoint.Snapshot{Server: s, Width: w.Width(), Batch: got.Batch}
	if got.Changed {
		snap.Delta, snap.Base = true, base
		ch.rounds = append(ch.rounds, round)
		ch.slots += len(got.Batch.Keys)
		return snap, nil
	}
	c.chains[s] = &chain{rounds: []int{round}, full: len(got.Batch.Keys)}
	return snap, nil
}

// write writes this worker's share of the checkpoint of wr.round (its
// servers' snapshots snaps and its state data), each file atomically,
// then gathers every file's size and CRC-32C from every worker's writer
// (an all-reduce in WriterGroup, which also carries whether a writer
// failed), and on worker 0 writes the MANIFEST, which completes the
// checkpoint, and prunes all but the newest Keep. It runs on a goroutine
// of its own; it touches nothing but wr until it closes wr.done.
func (c *Checkpointer) write(ctx context.Context, w *worker.Worker, wr *writing, snaps []checkpoint.Snapshot, data []byte) {
	t0 := time.Now()
	defer func() {
		wr.seconds = time.Since(t0).Seconds()
		close(wr.done)
	}()
	dir, round, rank, n := c.Config.Dir, wr.round, w.Rank(), c.Servers+c.Workers
	if c.gate != nil {
		c.gate(round)
	}
	// Sizes and checksums of every file, then 1 + the base of each
	// server's delta (0: a whole snapshot), then failures.
	files := make([]float64, 2*n+c.Servers+1)
	record := func(i int, f checkpoint.File) { files[2*i], files[2*i+1] = float64(f.Size), float64(f.CRC32C) }
	err := func() error {
		for _, s := range snaps {
			f, err := wr.opts.WriteSnapshot(dir, round, s)
			if err != nil {
				return err
			}
			record(s.Server, f)
			if s.Delta {
				files[2*n+s.Server] = float64(s.Base + 1)
			}
		}
		f, err := wr.opts.WriteFile(dir, round, WorkerFile(rank), data)
		if err != nil {
			return err
		}
		record(c.Servers+rank, f)
		return nil
	}()
	fail := len(files) - 1
	if err != nil {
		files[fail] = 1
		wr.err = fmt.Errorf("checkpoint of round %d: %w", round, err)
	}
	// Every writer joins, failed or not, so that none waits for ever.
	sum, aerr := w.AllReduceIn(ctx, WriterGroup, files)
	switch {
	case err != nil:
		return
	case aerr != nil:
		wr.gather = fmt.Errorf("checkpoint of round %d: gathering the checksums: %w", round, aerr)
		return
	case sum[fail] > 0:
		// A writer that failed reports it itself; the checkpoint stays
		// incomplete, and no delta may build on it.
		wr.incomplete = true
		return
	}
	for i := range n {
		wr.bytes += int64(sum[2*i])
		if i < c.Servers && sum[2*n+i] > 0 {
			wr.deltas++
		}
	}
	if rank != 0 {
		return
	}
	m := checkpoint.Manifest{Round: round, Job: c.Job}
	for i := range n {
		f := checkpoint.File{Name: checkpoint.SnapshotName(i), Size: int64(sum[2*i]), CRC32C: uint32(sum[2*i+1])}
		switch {
		case i >= c.Servers:
			f.Name = WorkerFile(i - c.Servers)
		case sum[2*n+i] > 0:
			f.Name, f.Base = checkpoint.DeltaName(i), int(sum[2*n+i])-1
		}
		m.Files = append(m.Files, f)
	}
	if err := wr.opts.Commit(dir, m); err != nil {
		wr.err = err
		return
	}
	wr.err = checkpoint.Prune(dir, Keep)
}

// collect takes the result of the writer, which is done: its failure
// to write, or else the failure of its all-reduce.
func (c *Checkpointer) collect() error {
	wr := c.writer
	c.writer = nil
	c.WriteSeconds += wr.seconds
	c.Bytes += wr.bytes
	c.Deltas += wr.deltas
	if wr.err != nil || wr.gather != nil || wr.incomplete {
		c.chains = nil // no delta builds on a checkpoint not complete
	}
	if wr.err != nil {
		return wr.err
	}
	return wr.gather
}

// wait waits for the writer at work, if any, and returns its error.
func (c *Checkpointer) wait() error {
	if c == nil || c.writer == nil {
		return nil
	}
	<-c.writer.done
	return c.collect()
}

// finish ends the checkpoints of a loop that trained rounds rounds: it
// waits for the writer, and when the checkpoint of the last round was
// skipped (a writer was still at work), takes it now, so that the job
// ends with its final checkpoint as when every checkpoint is taken (the
// servers have not changed since: no round came after it). The final
// checkpoint is durable: taken now, it is written so; taken volatile in
// the loop (of its last round or an earlier one), it is made durable
// (makeDurable). Every worker calls it at the same point.
func (c *Checkpointer) finish(ctx context.Context, w *worker.Worker, part Part, rounds int) error {
	if c == nil {
		return nil
	}
	if err := c.wait(); err != nil {
		return err
	}
	if st := c.skipped; st != nil && st.Rounds == rounds {
		c.Skipped--
		if err := c.save(ctx, w, part, *st, true); err != nil {
			return err
		}
		return c.wait()
	}
	if c.last.round > 0 && c.last.volatile {
		// The last checkpoint of the loop, of its last round or not.
		return c.makeDurable(ctx, w, c.last.round)
	}
	return nil
}

// makeDurable makes the volatile checkpoint of round, complete, durable:
// every worker syncs the files it wrote (checkpoint.Sync), of the
// checkpoint and of its chain when it is incremental, an all-reduce
// tells whether any failed, and worker 0 writes the manifests again,
// durable (the chain's first), and prunes (an older durable checkpoint
// is no longer needed).
func (c *Checkpointer) makeDurable(ctx context.Context, w *worker.Worker, round int) error {
	c.last.volatile = false
	rank := w.Rank()
	// This worker's files of the checkpoint and of its chain (an
	// incremental checkpoint's deltas and the snapshots they build on),
	// by round.
	names := map[int][]string{round: {WorkerFile(rank)}}
	for s := rank; s < c.Servers; s += c.Workers {
		ch := c.chains[s]
		if ch == nil || ch.rounds[len(ch.rounds)-1] != round {
			names[round] = append(names[round], checkpoint.SnapshotName(s))
			continue
		}
		for i, r := range ch.rounds {
			name := checkpoint.DeltaName(s)
			if i == 0 {
				name = checkpoint.SnapshotName(s)
			}
			names[r] = append(names[r], name)
		}
	}
	var err error
	for r, ns := range names {
		if err == nil {
			err = checkpoint.Sync(c.Config.Dir, r, ns)
		}
	}
	failed := 0.0
	if err != nil {
		failed = 1
	}
	got, aerr := w.AllReduce(ctx, []float64{failed})
	switch {
	case err != nil:
		return fmt.Errorf("checkpoint of round %d: %w", round, err)
	case aerr != nil:
		return aerr
	case got[0] > 0:
		return fmt.Errorf("checkpoint of round %d: another worker failed to make its files durable", round)
	case rank != 0:
		return nil
	}
	m, err := checkpoint.Open(c.Config.Dir, round)
	if err != nil {
		return fmt.Errorf("checkpoint of round %d: %w", round, err)
	}
	// The manifests of the chain first, oldest first, then the
	// checkpoint's: a durable manifest needs only durable ones.
	for i := len(m.Needs) - 1; i >= 0; i-- {
		if err := checkpoint.Durable(c.Config.Dir, m.Needs[i]); err != nil {
			return fmt.Errorf("checkpoint of round %d: %w", round, err)
		}
	}
	if err := checkpoint.Commit(c.Config.Dir, *m); err != nil {
		return fmt.Errorf("checkpoint of round %d: %w", round, err)
	}
	return checkpoint.Prune(c.Config.Dir, Keep)
}

// abandon waits for the writer of a loop that ended with an error (a
// pause, or the end of the job) and forgets a skipped checkpoint. It
// returns the writer's failure to write; the failure of its all-reduce
// is the loop's own (a pause or the end of the job met there too).
func (c *Checkpointer) abandon() error {
	if c == nil {
		return nil
	}
	c.skipped = nil
	c.last.round, c.last.volatile = 0, false
	c.chains = nil
	if c.writer == nil {
		return nil
	}
	<-c.writer.done
	wr := c.writer
	c.collect()
	return wr.err
}

// restore loads the newest complete checkpoint of Config.Resume on every
// worker and returns this worker's state.
func (c *Checkpointer) restore(ctx context.Context, w *worker.Worker, part Part, dir string) (*WorkerState, error) {
	// The first checkpoint after a restore is durable, whatever was
	// written before it.
	c.last.round, c.last.volatile, c.durableAt = 0, false, time.Time{}
	c.chains = nil
	rank := w.Rank()
	pick := []float64{0}
	var perr error
	if rank == 0 {
		m, refused, err := checkpoint.Latest(dir)
		for _, r := range refused {
			if c.Logf != nil && err == nil {
				c.Logf("resume: refused %v", r)
			}
		}
		if perr = err; err == nil {
			pick[0] = float64(m.Round + 1)
		} else {
			pick[0] = -1
		}
	}
	got, err := w.AllReduce(ctx, pick)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if perr != nil {
		return nil, fmt.Errorf("resume: %w", perr)
	}
	if got[0] < 1 {
		// Worker 0 found none: say why, as it does.
		if _, _, err := checkpoint.Latest(dir); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		return nil, fmt.Errorf("resume: worker 0 found no complete checkpoint in %s", dir)
	}
	m, err := checkpoint.Open(dir, int(got[0])-1)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if m.Job != c.Job {
		now, _ := ParseIdentity(c.Job)
		warn, err := CompareIdentity(m.Dir+"/"+checkpoint.ManifestName, m.Job, now, c.Config.Override)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if rank == 0 && c.Logf != nil {
			c.Logf("resume: %s", warn)
		}
	}
	data, err := m.Read(WorkerFile(rank))
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	var st WorkerState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("resume: %s/%s: %w", m.Dir, WorkerFile(rank), err)
	}
	if st.Rank != rank || st.Rounds != m.Round || st.Pass < 0 || st.Batch < 0 || st.Batch > part.Batches() || st.Rounds < 0 {
		return nil, fmt.Errorf("resume: %s/%s: worker %d at round %d (pass %d, batch %d), want worker %d at round %d with at most %d batches", m.Dir, WorkerFile(rank), st.Rank, st.Rounds, st.Pass, st.Batch, rank, m.Round, part.Batches())
	}
	sp, ok := part.(StatefulPart)
	switch {
	case ok:
		if err := sp.UnmarshalBinary(st.Part); err != nil {
			return nil, fmt.Errorf("resume: %s/%s: the part's state: %w", m.Dir, WorkerFile(rank), err)
		}
	case st.Part != nil:
		return nil, fmt.Errorf("resume: %s/%s has a part state, the application's part keeps none", m.Dir, WorkerFile(rank))
	}
	for s := rank; s < c.Servers; s += c.Workers {
		// The server's snapshot, or its delta applied to its chain's.
		snap, err := m.ReadSnapshot(s)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		name := m.ServerFile(s)
		if snap.Width != w.Width() {
			return nil, fmt.Errorf("resume: %s/%s: server %d of width %d, want server %d of width %d", m.Dir, name, snap.Server, snap.Width, s, w.Width())
		}
		if err := w.Load(s, snap.Batch); err != nil {
			return nil, fmt.Errorf("resume: %s/%s: %w", m.Dir, name, err)
		}
	}
	if err := w.Barrier(ctx); err != nil {
		return nil, err
	}
	c.Restored = append(c.Restored, Restore{Round: m.Round, UnixNano: time.Now().UnixNano()})
	return &st, nil
}

// Restore is one restoration of a checkpoint on a worker: at the start
// of a resumed job, or in a rollback after a failed node was replaced.
type Restore struct {
	// Round is the checkpoint's round; UnixNano when the worker left the
	// barrier after every server's snapshot was loaded, and trained again.
	Round    int   `json:"round"`
	UnixNano int64 `json:"unix_ns"`
}

// CheckDirs checks, before a job starts, that c's directories can be
// used: a job that does not resume writes to a directory without
// checkpoints (pruning would otherwise remove the newer checkpoints of
// an earlier run, or keep them in place of the new ones), and one that
// resumes writes either to the directory it resumes from or to one
// without checkpoints.
func (c Checkpoint) CheckDirs() error {
	if c.Dir == "" || c.Dir == c.Resume {
		return nil
	}
	rounds, err := checkpoint.Rounds(c.Dir)
	if err != nil {
		return err
	}
	if len(rounds) > 0 {
		return fmt.Errorf("checkpoint directory %s holds checkpoints of an earlier run (round %d): resume from it (--resume %s) or write to another directory", c.Dir, rounds[0], c.Dir)
	}
	return nil
}
