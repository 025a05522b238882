// Package distparsa runs Parsa across the workers of colo's parameter
// server: Alg. 4 of seed 001 (§4.3), where workers partition blocks of
// samples in parallel and servers hold the shared neighbour sets S_i,
// and then Alg. 2, the parameter assignment, across the same workers.
//
// Who does what:
//
//   - Every worker plans the run alike from the data and the seed: the
//     random blocks, the sample of the global initialisation, the balance
//     bounds, the parameters' seed (partition.PlanParsa for a graph in
//     memory, ooc.PlanParsaFile for a file: the same plan). No
//     loader hands out data: worker w partitions blocks w, w+W, w+2W, …
//     of the plan's b.
//   - Reading a file (RunNode, colo node --job parsa), a worker parses
//     the file once, as the out-of-core partitioner's first passes do
//     (graph.Stream into a binary spill, the ids numbered as graph.Load
//     numbers them), and keeps only the rows of its own blocks, each in a
//     file that it reads back when the block's turn comes. When the
//     machines share the spill directory (Job.SharedSpill: Processes on
//     loopback) a worker parses only its own range of the file's lines
//     (graph.SplitLines): the workers all-reduce their ranges' counts and
//     id sets, so that each numbers the ids as the whole file does, and
//     each writes its range's rows in those ids to the shared directory,
//     where the others read them (ooc.FileRanges); a compressed
//     file, which byte offsets cannot split, is parsed whole by each. It holds in memory the id index of the parameters (and of
//     SNAP nodes), one block at a time (its subgraph and bucket queues),
//     4 bytes per sample while it cuts the blocks, 8 bytes per sample of
//     its own blocks (the sample and its machine), 4 bytes per parameter
//     for a block's local ids, 8·⌈k/64⌉ bytes per parameter for the
//     masks of its samples' parameters (from its first block on) and,
//     during Alg. 2, 12 per parameter for the order. Worker 0 also keeps the rows spill and each sample's block
//     on disk, and 4 bytes per sample and per parameter for the whole
//     placement: it repairs the balance, evaluates the placement and
//     writes it from them.
//   - The servers hold, for each parameter v and partition i, the number
//     of pushes that put v in S_i (v ∈ S_i ⇔ count > 0), and each worker's
//     share of |S_i| and |U_i| (Layout). They add what workers push: the
//     "sum" update rule.
//   - Worker 0 runs the global initialisation (§4.4: one worker
//     partitions a random fraction of the samples; its neighbour sets
//     start everyone) in round 0. Then each round every worker pulls its
//     block's sets and the counts (Sets.Pull, one pull), runs Alg. 3
//     (partition.BlockPartitioner) and pushes what the block added to its
//     view (Sets.PushBlock, one push).
//   - Every worker pushes the partition of its samples; worker 0 pulls
//     them all, checks that every sample is placed once, restores the
//     balance bounds that stale views missed (and refines, in memory), and
//     pushes the samples it moved back to their owners.
//   - The workers assign the parameters by Alg. 2 together (params.go):
//     each pushes the machine masks C_v of its own samples' parameters,
//     every worker computes Alg. 2's order from the sizes c_v, and the
//     slices of that order are assigned one worker after the other, the
//     machines' loads all-reduced between them, so the result is
//     partition.AssignParams' exactly, for any W.
//
// The delay τ between blocks is the parameter server's consistency model
// (Config.Clock): τ = 0 is BSP, where a block sees every block of the
// rounds before its own and nothing else, so the placement does not
// depend on timing, and with one worker it is the sequential Parsa's
// (RunParsa with τ = 0), element by element; τ ≥ 1 is bounded delay, a
// worker at most τ rounds ahead of the slowest; partition.TauInfinite is
// asynchronous, eventual consistency. With W workers and τ = 0 the W
// blocks of a round see the same sets, as the sequential pipeline's
// τ = W − 1 roughly does; the balance bounds a stale view misses are
// restored at the end, as in the sequential run.
//
// Cost per block of n_b samples, e_b edges and m_b parameters: Alg. 3's
// O(k·(n_b + e_b)), and one pull and one push of at most m_b·k float32s
// (4k bytes per parameter, against k/8 for an in-memory bit mask: the
// price of a union that additions can express). Alg. 2 costs each worker
// O(m_b·⌈k/64⌉) per block for the masks of its samples' parameters (the
// union of its blocks' neighbour sets, gathered as it partitions them; a
// worker one of whose samples the repair moved reads its blocks' rows
// again, O(e_w) over its e_w edges), pushes and pulls of at most m·k
// float32s, O(m) for the order, and W all-reduces of k + 1 numbers per
// pass over the order (the greedy pass and each sweep); the
// passes over the slices run one worker at a time, as the order requires.
//
// InProcess runs a job on a cluster in this process over a graph in
// memory (tests, and colo partition --ps-workers W); Processes runs it as
// colo node processes on loopback (colo partition --processes W), and
// RunNode is what each of them, or a node on a real machine, runs.
//
//	p, rep, err := distparsa.InProcess(ctx, g, opt, distparsa.Config{Workers: 4}, nil)
package distparsa
