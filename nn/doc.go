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
// both are monotone, on a quarter of the values).
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
// BenchmarkMLP and BenchmarkCNN measure whole training steps at batch 64
// on one core (forward, backward and the momentum rule of ps/update), as
// PyTorch's peer does; bench/nn/torch.sh runs both side by side. On that
// machine the mlp runs at about 63,000 samples/s and the cnn at 10,700,
// against PyTorch 1.13 on OpenBLAS at about 60,000 and 12,000.
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
