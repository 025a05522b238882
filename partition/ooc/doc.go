// Package ooc is Parsa out of core (seed 001 §4.2): it partitions a file
// that is never loaded, streaming its blocks from spill files on disk
// within a memory cap, and plans the distributed run of package
// distparsa over a file that no process loads. It holds all of
// the partitioner's file, spill and process-memory I/O; the algorithms it
// drives are package partition's pure functions over in-memory rows
// (partition.ParsaStream, partition.PlanParsaCounts,
// partition.AssignParamsMasks, partition.CostFromMasks,
// partition.Rebalance), so that the same options and seed give exactly
// partition.RunParsa's placement, part file for part file.
//
// ParsaFile partitions a libsvm or SNAP file that is not loaded, holding in memory the neighbour sets, the machine masks of
// the parameters and one block at a time (seed 001 §4.2: the current
// subgraph is all Parsa must keep, and the blocks remove the graph size
// constraint). The samples travel through spill files in a temporary
// directory:
//
//  1. read: the file is parsed once (graph.Stream, compressed or not);
//     its samples go to a spill file with their raw ids, its distinct
//     parameter (and SNAP node) ids to an index (idIndex);
//  2. rows: the spill is rewritten as rows of dense ids in sample order,
//     the numbering of graph.Load (SNAP edges are first cut into ranges of
//     source nodes, each sorted and deduplicated in memory);
//  3. blocks: the samples are shuffled by the seeded generator exactly as
//     Parsa in memory shuffles them (4 bytes per sample, for this phase
//     only) and cut into the same b blocks; one pass writes each block's
//     rows to its own file (and the global initialisation's sample to
//     another);
//  4. Alg. 3: the jobs of the run (the initialisation's, then one per
//     block) read their block file, partition it against the neighbour
//     sets and push; a real block appends its samples' machines to a
//     result file and ORs its machine masks into C_v;
//  5. Alg. 2 on the masks C_v (partition.AssignParamsMasks), the cost model on the
//     masks, and the random baseline by passes over the rows, each for as
//     many of its seeds as the memory allows (baseline);
//  6. FileResult.WriteDir streams data.part from the result file, in
//     file order, then param.part, then summary.json last.
//
// One thread, τ = 0: the result is exactly Parsa's in memory with the same
// options (TestParsaFileEqualsInMemory), at the price of parsing the
// file once and reading the binary spills a few times.
//
// Memory: the id index of the file's ids (a bitmap of 12 bytes per 64
// possible ids, or 8 bytes per id once that is smaller), the neighbour
// sets and the masks C_v (partition.MaskWords(k) words per parameter each), one
// block and, in the blocks pass, 4 bytes per sample, whatever |E|; the
// estimate of what a run needs (OutOfCoreStats.Needed) is checked
// against the cap before the partition starts, and a cap below it is a
// *MemoryError naming what is needed and why. Time: one parse of the
// file, then a few sequential reads of the binary spills, beside Alg. 3's
// O(k·|E|). AutoMemory decides when a file is too large for memory, and
// LimitMemory makes the Go runtime keep to a cap.
//
// Example:
//
//	opt := partition.Options{K: 8, Seed: 1, Parsa: partition.DefaultParsaOptions()}
//	res, err := ooc.ParsaFile("data.libsvm.xz", opt, ooc.OutOfCore{Memory: 100 << 20, Load: graph.DefaultLoadOptions()})
//	if err != nil {
//		return err
//	}
//	defer res.Close()
//	return res.WriteDir("out", summary) // data.part, param.part, summary.json
package ooc
