package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"colo/features"
	"colo/graph"
)

// Job is a training job as a value: what to train (the application and
// its options), on what (the data files and how to load them), where
// (the placement: a partitioner's name or a directory written by colo
// partition) and how (Config). It is what crosses process boundaries:
// colo train writes it to a file, every machine of a cluster of processes
// reads it back (ReadJob) and trains the same job. DefaultJob gives the
// engine's defaults; app.DefaultJob adds an application's.
//
// A job file is JSON:
//
//	{"app": "lr", "options": {"features": "auto"},
//	 "data": {"train": "news20.svm", "test": "news20.t", "load": {"format": "", "index_base": -1, "hash_bits": 20}},
//	 "placement": "parsa",
//	 "config": {"machines": 4, "consistency": "bsp", "rule": {"name": "adagrad", "lr": 0.5, ...},
//	            "batch": 0, "epsilon": 0.0001, "max_passes": 200, "seed": 1}}
type Job struct {
	// App names the application in the registry (package app).
	App string `json:"app"`
	// Options are the application's own settings, as JSON the
	// application reads (app/lr: feature transformation; app/mf: rank,
	// hold-out); empty for its defaults.
	Options json.RawMessage `json:"options,omitempty"`
	// Data is where the training (and test) data are.
	Data Data `json:"data"`
	// Placement is a partitioner's name (such as "parsa" or
	// "random+refine") or a directory written by colo partition.
	Placement string `json:"placement"`
	// Config is the engine's settings.
	Config Config `json:"config"`
}

// Data names the data files of a job and how to read them.
type Data struct {
	// Train is the training file.
	Train string `json:"train"`
	// Test is the test file; empty for the application's default (lr
	// scores the training set, mf holds out entries).
	Test string `json:"test,omitempty"`
	// Load are the options of graph.Load for both files.
	Load LoadOptions `json:"load"`
	// Checksum, when set, is the checksum of the training data's files
	// (internal/datasum: the training file, then an idx label file):
	// part of the job's identity (JobIdentity), so that a checkpoint of
	// a job on other data is refused.
	Checksum string `json:"checksum,omitempty"`
	// Cache, when set, is a directory holding the training and test data
	// as loaded, written once by the parent of a cluster of processes
	// (app.Opened.WriteCache): its members, and a replacement started
	// while the others train, read it instead of parsing Train and Test
	// again. It is not part of the job's identity.
	Cache string `json:"cache,omitempty"`
	// Share, when set with Cache, is the rank of the one machine (or
	// worker) the process trains: it reads that machine's share of the
	// training graph from Cache (app.ReadShare) instead of the whole
	// graph, when the parent wrote shares (an application that trains
	// on one, lr and mf) and the machine needs no more. A replacement's
	// (deploy.Kind.Open). It is not part of the job's identity.
	Share *int `json:"share,omitempty"`
}

// LoadOptions are graph.LoadOptions as a job file spells them, and the
// feature columns of a table.
type LoadOptions struct {
	Format        string `json:"format,omitempty"`
	IndexBase     int    `json:"index_base"`
	DropSelfLoops bool   `json:"drop_self_loops,omitempty"`
	HashBits      int    `json:"hash_bits"`
	// MemoryBudget is graph.LoadOptions.Memory (and the dense loaders'
	// dataset.LoadOptions.Memory): 0 for each machine's default.
	MemoryBudget int64 `json:"memory_budget,omitempty"`
	// Spec, when set, reads the files as tables (Parquet, CSV, JSON
	// lines) through these fitted feature columns (package features):
	// the training file's training rows, and the test file's rows (or,
	// without a test file, the training file's test rows when the spec
	// has a test predicate).
	Spec *features.Fitted `json:"spec,omitempty"`
}

// Graph returns the options as graph.Load takes them.
func (o LoadOptions) Graph() graph.LoadOptions {
	return graph.LoadOptions{Format: graph.Format(o.Format), IndexBase: o.IndexBase, DropSelfLoops: o.DropSelfLoops, HashBits: o.HashBits, Memory: o.MemoryBudget}
}

// LoadOptionsOf returns o as a job file spells it.
func LoadOptionsOf(o graph.LoadOptions) LoadOptions {
	return LoadOptions{Format: string(o.Format), IndexBase: o.IndexBase, DropSelfLoops: o.DropSelfLoops, HashBits: o.HashBits, MemoryBudget: o.Memory}
}

// LocalFields returns the fields of a Job, as a job file spells them,
// that each host of a cluster of processes may set for itself, so that
// the processes of one job need not agree on them (launch.JobDigest):
// the paths of the data files (with a dense application's label files,
// options.labels and options.test_labels), of the data cache and of the
// checkpoints' directory, since each host may mount them elsewhere; the
// share of a replacement, which is its own; the host's memory budget
// for loading; and the goroutines a worker's step runs on
// (options.threads of lr, mlp, cnn and ctr), whose results are the same
// to the bit at any number. What the training data holds is checked by
// its checksum (data.checksum) when the job has one.
func LocalFields() []string {
	return []string{
		"data.train", "data.test", "data.cache", "data.share", "data.load.memory_budget",
		"options.labels", "options.test_labels", "options.threads",
		"config.checkpoint.dir", "config.checkpoint.resume",
	}
}

// DefaultJob returns a job with the engine's defaults (DefaultConfig),
// the loader's (graph.DefaultLoadOptions) and Parsa's placement; the
// application and the training file are left to fill.
func DefaultJob() Job {
	return Job{
		Data:      Data{Load: LoadOptionsOf(graph.DefaultLoadOptions())},
		Placement: "parsa",
		Config:    DefaultConfig(),
	}
}

// Validate checks the fields the engine reads; errors name the field as
// a job file spells it. The application's options are checked by the
// application when it opens the job (app.Open).
func (j Job) Validate() error {
	if j.App == "" {
		return errors.New("train: job: app is empty: want an application's name, such as lr or mf")
	}
	if j.Data.Train == "" {
		return errors.New("train: job: data.train is empty: want the training file")
	}
	if err := j.Data.Load.Graph().Validate(); err != nil {
		return fmt.Errorf("train: job: data.load: %w", err)
	}
	if sp := j.Data.Load.Spec; sp != nil {
		if err := sp.Validate(); err != nil {
			return fmt.Errorf("train: job: data.load.spec: %w", err)
		}
	}
	if j.Placement == "" {
		return errors.New("train: job: placement is empty: want a partitioner or a directory written by colo partition")
	}
	if len(j.Options) > 0 && !json.Valid(j.Options) {
		return errors.New("train: job: options is not valid JSON")
	}
	if err := j.Config.Validate(); err != nil {
		return fmt.Errorf("train: job: config.%w", err)
	}
	return nil
}

// SetOptions stores the application's options v as JSON.
func (j *Job) SetOptions(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("train: job options: %w", err)
	}
	j.Options = b
	return nil
}

// DecodeOptions reads the application's options into v, which holds the
// defaults: fields the job does not set keep them. A field v does not
// have is an error that names it.
func (j Job) DecodeOptions(v any) error {
	if len(j.Options) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(j.Options))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s options: %w", j.App, err)
	}
	return nil
}

// maxJobFile bounds the size of a job file.
const maxJobFile = 64 << 20

// WriteJob writes j as indented JSON to w.
func WriteJob(w io.Writer, j Job) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

// ReadJob reads a job written by WriteJob from r, named name in errors,
// and validates it. Fields the file does not set keep DefaultJob's;
// unknown fields are errors, so that a misspelt field does not silently
// take its default.
func ReadJob(r io.Reader, name string) (Job, error) {
	j := DefaultJob()
	dec := json.NewDecoder(io.LimitReader(r, maxJobFile))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return j, fmt.Errorf("%s: %w", name, err)
	}
	if err := j.Validate(); err != nil {
		return j, fmt.Errorf("%s: %w", name, err)
	}
	return j, nil
}

// ReadJobFile reads the job of a file written by WriteJob.
func ReadJobFile(path string) (Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return Job{}, err
	}
	defer f.Close()
	return ReadJob(f, path)
}
