// Package balance distributes the communication load of a parameter server
// over servers of unequal bandwidth and cuts the model into the slices that
// carry it: the load distribution and slice assignment of seed 002 (Cai,
// Yang, Sun, Zhang, Yu, "Adaptive load balancing for parameter servers in
// distributed machine learning over heterogeneous networks", §3.1 and
// §3.3), and the balancer that applies them to a running job. The
// algorithms are pure (functions over in-memory numbers, no I/O, no
// clocks); Balancer is the thin driver that measures, exchanges and moves
// keys through a worker.
//
// # The model (§3.3)
//
// N nodes each run a server and a worker. Every worker holds M parameters
// (or bytes) to aggregate; server i aggregates a share m_i of them,
// Σ m_i = M. Node i's worker sends the M − m_i it does not serve itself,
// and its server serves m_i to each of the N−1 other workers, so its load
// is (Eq. 7)
//
//	L_i = M − m_i + (N−1)·m_i = M + (N−2)·m_i.
//
// With s_ij the measured throughput of the link from node i to node j
// (row i = sender), node i's aggregate speed is S_i = Σ_{j≠i} s_ij
// (Eq. 8, Aggregate), and it needs (Eq. 9, Model.Time)
//
//	t_i = L_i/S_i = (M + (N−2)·m_i)/S_i.
//
// Nodes send at the same time, so a round takes max_i t_i
// (Model.RoundTime), and the problem is (Eq. 10)
//
//	minimise max_i t_i  subject to  Σ m_i = M (and m_i ≥ 0).
//
// Each t_i is a line in m_i with intercept M/S_i and slope (N−2)/S_i
// (Eq. 11, Fig. 3).
//
// # What it provides
//
//   - Model.Distribute: Alg. 1, starting from M/N each and repeatedly
//     equalising the slowest and fastest node (Eqs. 12–14) until their
//     times differ by less than similarity_threshold. O(N) per move.
//   - Model.Solve: the exact optimum of Eq. 10 with m_i ≥ 0 by water
//     filling: all loaded servers finish at one time T, servers with
//     M/S_i ≥ T get nothing. O(N log N). Never worse than Alg. 1 when
//     Alg. 1 returns shares ≥ 0.
//   - Granularity and SliceCost: the slice granularity x = √(M·α/N)
//     (Eq. 4) that minimises the synchronisation time of Eq. 1 (§3.1).
//     O(1).
//   - Segment and Assign: cutting M into probe slices and slices of x, and
//     Alg. 2, which gives every server its probe slices (§3.2) and then
//     each slice to the server with the largest remaining load.
//     O(N·num_slice).
//
// Where the paper is loose the choice is documented at the function:
// Eq. 14 (line 12 of Alg. 1) prints S_min − S_max where solving Eqs. 12
// and 13 gives S_max + S_min; Alg. 1 can produce negative shares; N = 1
// and N = 2 make N−2 ≤ 0; Eq. 5 leaves w and n undefined.
//
//   - Starts, Fit and Level: shares as ranges of whole slices with probe
//     slices, and Elastic's linear fits equalised by water filling.
//   - Balancer (live.go): every Config.Every rounds the workers exchange
//     their measured pull timings (§3.2, on the data messages) in an
//     all-reduce, every worker takes the same decision by the Config's
//     scheme (Average, Elastic, Aware, Oracle) and the keys move with
//     worker.Worker.Retable. Package train calls it after every round.
//
// The experiment of §4–5 (Figs. 4–6) is package bench/balancing, run by
// colo bench balance: the schemes against each other on links drawn at
// random, and Aware's round time against the slice granularity.
//
// # Example
//
// Three nodes with S = (4, 5, 6) and M = 6 (the Fig. 3 test): the even
// split gives t = (2, 1.6, 1.33); Alg. 1 moves 1.6 from node 0 to node 2
// once and every node then takes 1.6, which Solve confirms is optimal:
// m = (0.4, 2, 3.6).
package balance
