package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"colo/graph"
)

// The files of a data cache (Data.WriteCache): the training graph and,
// when the job has one, the test graph, in graph's binary form.
const (
	cacheTrain = "train" + graph.BinaryExt
	cacheTest  = "test" + graph.BinaryExt
)

// WriteCache writes d to the new directory dir, for the members of a
// cluster of processes to read (ReadCache, train.Data.Cache) instead of
// loading the job's files again: a replacement then resumes without
// parsing the data. It writes data that are graphs only (the sparse
// applications'), and returns false, writing nothing, for others: the
// dense applications' idx and table files load as fast as a cache would.
func (d *Data) WriteCache(dir string) (bool, error) {
	if d.Graph == nil || d.Samples != nil || d.TestSamples != nil {
		return false, nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return false, fmt.Errorf("data cache: %w", err)
	}
	if err := d.Graph.WriteBinaryFile(filepath.Join(dir, cacheTrain)); err != nil {
		return false, fmt.Errorf("data cache: %w", err)
	}
	if d.TestGraph != nil {
		if err := d.TestGraph.WriteBinaryFile(filepath.Join(dir, cacheTest)); err != nil {
			return false, fmt.Errorf("data cache: %w", err)
		}
	}
	return true, nil
}

// ReadCache reads the data a parent wrote to dir (Data.WriteCache).
func ReadCache(dir string) (*Data, error) {
	g, err := graph.ReadBinaryFile(filepath.Join(dir, cacheTrain))
	if err != nil {
		return nil, fmt.Errorf("data cache (data.cache of the job): %w", err)
	}
	d := &Data{Graph: g}
	d.TestGraph, err = graph.ReadBinaryFile(filepath.Join(dir, cacheTest))
	if errors.Is(err, fs.ErrNotExist) {
		d.TestGraph, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data cache (data.cache of the job): %w", err)
	}
	return d, nil
}
