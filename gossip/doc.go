// Package gossip trains a model without servers: decentralised parallel
// SGD (D-PSGD, Lian et al. 2017) and MATCHA (Wang et al. 2019) with F
// local steps between averagings, the training of seed 003's RCD-SGD
// (Alg. 2, §3) on workers of unequal speed.
//
// # The algorithm (seed 003, Alg. 2)
//
// N workers each hold the whole model x_i, all starting from the same
// initial parameters. Iteration k, on every worker at once:
//
//	g_i = ∇F_i(x_{k,i}; ξ_{k,i})                   the mean gradient of its batch
//	x_{k+1,i} = Σ_j W_ij (x_{k,j} − γ g_j)         if (k+1) mod F = 0   (atc)
//	x_{k+1,i} = x_{k,i} − γ g_i                    otherwise
//
// and the output is the average (1/N) Σ_i x_{K,i}. Config.Order
// CombineThenAdapt averages the models before the step instead,
// x_{k+1,i} = Σ_j W_ij x_{k,j} − γ g_i: Alg. 2's lines 5 and 8 as written
// and D-PSGD's own update. The default, adapt-then-combine, is local SGD
// with gossip averaging; on the complete graph with W = J (all 1/N) and
// F = 1 it is synchronous data-parallel SGD, step for step. Both send one
// model per neighbour per averaging, so F = 2 halves the traffic of F = 1.
//
// An epoch is K = ⌈n/B⌉ iterations for a global batch B (Config.Batch);
// each worker shuffles its shard every epoch (seeded by the seed, its rank
// and the epoch) and cuts it into K batches. A worker's batch is therefore
// proportional to its shard: on the ratio-constrained shards of seed 003
// Alg. 1 (package shard, scheme submodular with the speeds as ratios) a
// worker of speed r trains on r/Σr of every epoch in batches of about
// B·r/Σr, the B_{r_i} of Alg. 2; on equal shards every batch is B/N. Every
// sample is trained on once per epoch.
//
// # Weights and topologies
//
// W is doubly stochastic: Σ_j W_ij = Σ_i W_ij = 1, W_ij ≥ 0, and W_ij > 0
// only between neighbours. New builds the topologies (ring, torus,
// exponential, complete) and MetropolisHastings their weights
// W_ij = 1/(1 + max(d_i, d_j)); ReadWeights reads any other W from a file
// (N lines of N numbers) and checks it, naming the file and line of a row
// that does not sum to 1. A disconnected graph is refused: its
// components' models would never mix.
//
// # MATCHA
//
// NewMatcha decomposes the topology into matchings (greedy edge colouring)
// and gives matching j an activation probability p_j that maximises the
// algebraic connectivity λ2(Σ_j p_j L_j) of the expected Laplacian subject
// to Σ_j p_j ≤ c_b·M, 0 ≤ p_j ≤ 1 (projected supergradient ascent on the
// concave λ2; never worse than uniform p_j = c_b), and the mixing weight
// α that minimises ‖E[(I − αL_k)²] − J‖₂. Each averaging round k draws the
// active matchings from a stream of the seed and k, the same on every
// worker without talking, and mixes with W_k = I − α·L_k. The budget c_b
// is the expected fraction of the matchings, and so of the base graph's
// messages, used per round.
//
// # Transport and emulated speed
//
// Run drives one goroutine per worker over transport endpoints opened on
// a node.Network: the in-memory network of package transport/mem (with
// MemNetwork's per-worker network interface rate, as colo train emulates
// --link-bandwidth) or TCP. A model travels as one data message of its
// float32 values (n·4 bytes plus a 60-byte frame header) tagged with its
// averaging round; models that arrive early wait for their round. A
// worker's arithmetic does not depend on timing and averages sum the
// models in worker order, so a seed gives the same models bit for bit
// over either transport.
//
// Worker speeds are emulated explicitly: a worker of speed r measures the
// wall-clock time c of each gradient step and then sleeps (r_max/r − 1)·c,
// so its step takes r_max/r times what it measured (the timer's error is
// carried to the next step, so totals stay exact). Result.Workers shows,
// per worker, the measured compute seconds, the seconds slept for the
// emulation and the seconds spent sending and waiting for neighbours.
//
// # Cost
//
// Per iteration a worker computes one batch gradient; every F iterations
// it sends d_i models of P parameters (4P bytes each) and sums d_i + 1
// vectors: O(d_i·P) time and traffic. MetropolisHastings is O(N + |E|);
// NewMatcha is O(N³) per supergradient step (an eigendecomposition) for
// 300 steps, milliseconds for tens of workers.
//
// # Example
//
//	top, _ := gossip.New("ring", 4)
//	w := gossip.MetropolisHastings(top) // rows 1/3 1/3 0 1/3, …
//	cfg := gossip.DefaultConfig()
//	cfg.Speeds, cfg.LocalSteps = []float64{1, 2, 4, 8}, 2
//	net, _ := gossip.MemNetwork(4, 1.25e9, 1)
//	res, err := gossip.Run(ctx, cfg, &gossip.Dense{Model: m, X: x, Labels: y}, shards, init, node.Mem{Net: net})
//	// res.Model is the average model, res.Curve the loss against time.
//
// RunWorker runs one worker alone and Assemble builds a Result from every
// worker's WorkerReport, for a process per worker (gossip/job's
// TrainProcesses). Package gossip/job runs all this on a dense job's
// data; bench/rcd is seed 003's comparison.
package gossip
