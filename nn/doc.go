// Package nn holds the dense neural networks that colo trains (seed 004,
// §II-A: a network of layers fitted by minibatch SGD; seeds 002 and 003
// reuse them): fully connected layers, 2-D convolution, max pooling, ReLU
// and the softmax cross-entropy loss, composed into two architectures
// chosen by name.
//
//	mlp  [fc, ReLU] per Config.Hidden width (default 256, 128), fc to Classes
//	cnn  [conv k×k, ReLU, maxpool] per Config.Conv width (default 6, 16),
//	     flatten, [fc, ReLU] per Hidden width (default 120, 84), fc to Classes
//
// With the defaults on a 1×28×28 input the mlp is 784-256-128-10 (235,146
// parameters) and the cnn LeNet-5 (conv5x5 1→6 pad 2, pool 2, conv5x5
// 6→16, pool 2, fc 400→120→84→10; 61,706 parameters), the models of
// PyTorch's peer in ../shared/peers/torch, tensor for tensor.
//
// # The flat layout
//
// A model's parameters are one []float32 vector, owned by the caller, cut
// into named tensors (Tensors): each layer's weight and then its bias, in
// layer order, row-major, with PyTorch's shapes and names:
//
//	conv1.weight [6 1 5 5] at 0, conv1.bias [6] at 150, conv2.weight [16 6 5 5] at 156, …
//
// On a parameter server of width 1 key i is parameter i, so a tensor is a
// contiguous key range and the whole model one range [0, NumParams()). A
// Model holds only sizes; LossGrad reads the parameters it is given and
// adds scale·∂loss/∂params to a gradient vector of the same layout, which
// is what a worker pushes.
//
// # Passes
//
// LossGrad runs the forward and backward pass of a batch of n samples
// (rows of InputDim() values, channel by channel, each row by row) and
// returns the summed loss and the number of correct predictions; Logits,
// Predict and Evaluate run the forward pass only. A Workspace holds one
// goroutine's activations, gradients and scratch space, so after its
// first use at a batch size a pass does not allocate. A Model may be
// shared by goroutines, each with its own Workspace.
//
// Inside, dense layers hold a batch as rows [n, d] and the convolution
// stages as planes [C, n, H, W], so that a convolution over the whole
// batch is one matrix product (im2col: y = W·col + b with col of shape
// [C·k·k, n·H'·W']); flatten converts between the two. A ReLU right
// before a pooling layer is applied after it (the same function, since
// both are monotone, on a quarter of the values). A dense layer's ReLU is
// the last step of its forward product, block by block while the block
// is in the cache, and its gradient mask the last step of the next dense
// layer's input gradient: no pass of its own over memory.
//
// # Cost
//
// Per sample, a dense layer costs 2·in·out flops forward and twice that
// backward (the input gradient is skipped for the first layer), a
// convolution 2·C·k²·OC·H'·W' forward likewise; about 1.0 Mflop for a
// training step of the default mlp and 2.3 Mflop for the cnn. The
// products run on a blocked float32 matrix product (gemm.go) whose
// micro-kernel is written in Go assembly for AVX2 and FMA on amd64 (no
// cgo), with a portable Go kernel elsewhere or with the purego build tag.
// On one core of an AMD EPYC (Zen 4) the products reach 60–100 Gflop/s
// (gonum's native Sgemm: 12–15), the portable kernel about 5.
//
// # Threads
//
// Workspace.SetThreads runs each layer's pass on that many goroutines
// (intra-op parallelism; default 1): a convolution's forward pass and its
// input gradient by chunks of samples, with the pooling after it (forward)
// and before it (backward) in the same parts, chunk by chunk, its weight
// gradient by two groups of chunks (each summed into its own buffer and
// the two added at the end of the pass, whatever the thread count; each
// thread reads half of the cols), cut further by columns when there are
// more threads than groups, a dense layer's forward pass and input
// gradient by blocks of output columns (each thread reads its share of
// the weights; by samples when the layer is narrow) and its weight
// gradient by blocks of input columns, a pooling layer on its own by
// planes. Each part writes what no other part writes and sums in an
// order that does not depend on the thread count, with cuts on whole
// micro-tiles, so LossGrad's results are bit for bit the same at any
// thread count and under any scheduling. The threads beyond the caller are helper goroutines that
// the workspace keeps while it lives: a pass is published to them, a
// helper that finished one spins for the next for up to 100 µs (a step's
// passes follow each other closely), pausing the processor between looks
// rather than calling the scheduler, and then parks until woken, so no
// goroutine is started or woken per pass. A pass of
// less than about a million floating-point operations (the mlp's last
// layer, the cnn's momentum step, a small batch) runs on the caller alone. colo train's
// --threads sets the count for each worker (the dense option threads).
//
// # Measured speed
//
// BenchmarkMLP and BenchmarkCNN measure whole training steps at batch 64
// (forward, backward and the momentum rule of ps/update, whose bulk is an
// SSE kernel, on the workspace's threads), as PyTorch's
// peer does, on as many threads as GOMAXPROCS (-cpu 1,2);
// bench/nn/torch.sh runs them beside PyTorch 1.13 on OpenBLAS's OpenMP
// build at one and two threads, alternating. On an idle AMD EPYC (Zen 4),
// one thread, before the changes described below:
//
//	model  colo        PyTorch     ratio
//	mlp    60,679/s    59,308/s    1.02
//	cnn    12,639/s    14,620/s    0.86
//
// The cnn's step then spent about 40% of its time in the products, a
// third in im2col and col2im of the second convolution, whose rows are
// ten values long and were moved one value at a time, and a tenth in max
// pooling. Copying those rows in 16-byte blocks cut im2col's
// instructions by 39% and a cnn step from 77.9 to 69.5 million
// instructions (valgrind, one thread, batch 64, −11%), with
// bit-identical results. Pooling 2×2 windows without recording indices
// (backward finding the maximum again) saved instructions too but cost
// time: its comparisons are unpredictable branches. col2im then took a
// fifth of what was left: it now adds each kernel offset's block of rows
// with an AVX kernel (addRows, the same sum value by value), which cut
// its instructions by 55% and a cnn step's forward and backward passes by
// 9% (about 6 million instructions of 65; valgrind, one thread, batch
// 64). The products and pooling remain. Wall-clock figures
// since then were taken with the two cores shared by others at load
// averages of 2–35 and are not comparable to the table: rerun
// bench/nn/torch.sh on an idle machine.
//
// Two threads then made the mlp no faster than one. Its passes were cut
// by samples (36 and 28 rows, each thread reading all the weights), the
// ReLU passes, the bias gradient and the gradient's clearing ran on the
// caller alone, and a waiting helper yielded to the scheduler between
// looks. With the cuts by output columns, the ReLU fused into the
// products, the bias gradient in a part, AVX for the ReLU, its mask, the
// bias gradient and 2×2 pooling, gemmNT's deeper blocks and PAUSE between
// a helper's looks, the mlp's step (the 1st percentile of 3,000, at a
// load of 13–20) went from 993 to 883 µs on one thread and from 822 to
// 525 µs on two (121.8k samples/s); docs/dense.md has the passes.
// The benchmarks report the speed of their 10th-percentile step
// (samples/s-p10) beside the mean, the speed of the steps that had the
// cores on a machine others keep busy.
//
// Then the momentum step became an SSE kernel (ps/update), a
// convolution's weight gradient two groups of chunks (the first
// convolution's parts were 146 and 92 µs, now 108 and 102), pooling rows
// of 5 windows an XMM kernel (the second pooling 134 → 76 µs) and the
// pooling layers part of their convolutions' passes (a cnn step takes 9
// passes of the threads, not 12). Beside the build before, alternating,
// at a load of 40–53 (every run contended), the medians of the
// 10th-percentile steps: mlp 80.1k against 69.6k samples/s at one thread
// and 80.8k against 69.6k at two, cnn 14.0k against 13.0k at one (a
// repeat at load 20–42: mlp likewise, cnn 4% at one and at two threads).
// At that load two threads were no faster than one on
// either build (no step found both cores free): the two-thread target
// against PyTorch is still to be measured on an idle machine
// (docs/dense.md has the table).
//
// # Example
//
//	m, _ := nn.New("cnn", nn.DefaultConfig())
//	params := make([]float32, m.NumParams())
//	m.Init(params, rand.New(rand.NewPCG(1, 2)))
//	ws := m.NewWorkspace(64)
//	grad := make([]float32, m.NumParams())
//	loss, correct := m.LossGrad(params, x, labels, 64, grad, 1.0/64, ws)
package nn
