// Package distparsa runs Parsa across the workers of colo's parameter
// server: Alg. 4 of seed 001 (§4.3), where workers partition blocks of
// samples in parallel and servers hold the shared neighbour sets S_i.
//
// Who does what:
//
//   - Every worker plans the run alike from the graph and the seed
//     (partition.PlanParsa): the random blocks, the sample of the global
//     initialisation, the balance bounds. No loader hands out data: each
//     worker process reads the data file itself and partitions its own
//     blocks, w, w+W, w+2W, … of the plan's b.
//   - The servers hold, for each parameter v and partition i, the number
//     of pushes that put v in S_i (v ∈ S_i ⇔ count > 0), and each worker's
//     share of |S_i| and |U_i| (Layout). They add what workers push: the
//     "sum" update rule.
//   - Worker 0 runs the global initialisation (§4.4: one worker partitions
//     a random fraction of the samples; its neighbour sets start everyone)
//     in round 0. Then each round every worker pulls its block's sets and
//     the counts (Sets.Pull, one pull), runs Alg. 3
//     (partition.BlockPartitioner) and pushes what the block added to its
//     view (Sets.PushBlock, one push). Last, every worker pushes the
//     partition of its samples and worker 0 pulls them all, checks that
//     every sample is placed once, and assigns the parameters by Alg. 2
//     from the final data placement (partition.ParsaPlan.Finish): the seed
//     runs Alg. 2 once the samples are placed ("then we can assign V
//     using Algorithm 2"), on one node.
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
// price of a union that additions can express).
//
// InProcess runs a job on a cluster in this process (tests, and colo
// partition --ps-workers W); Processes runs it as colo node processes on
// loopback (colo partition --processes W), and RunNode is what each of
// them, or a node on a real machine, runs.
//
//	p, rep, err := distparsa.InProcess(ctx, g, opt, distparsa.Config{Workers: 4}, nil)
package distparsa
