package nn_test

import (
	"fmt"
	"math/rand/v2"

	"colo/nn"
)

// The default cnn is LeNet-5; its tensors tile one parameter vector.
func ExampleModel_Tensors() {
	m, err := nn.New("cnn", nn.DefaultConfig())
	if err != nil {
		panic(err)
	}
	for _, t := range m.Tensors() {
		fmt.Println(t.Name, t.Shape, t.Offset)
	}
	fmt.Println(m.NumParams())
	// Output:
	// conv1.weight [6 1 5 5] 0
	// conv1.bias [6] 150
	// conv2.weight [16 6 5 5] 156
	// conv2.bias [16] 2556
	// fc1.weight [120 400] 2572
	// fc1.bias [120] 50572
	// fc2.weight [84 120] 50692
	// fc2.bias [84] 60772
	// fc3.weight [10 84] 60856
	// fc3.bias [10] 61696
	// 61706
}

// A few steps of SGD on one batch: the loss falls.
func ExampleModel_LossGrad() {
	cfg := nn.DefaultConfig()
	cfg.Height, cfg.Width, cfg.Classes, cfg.Hidden = 4, 4, 2, []int{8}
	m, _ := nn.New("mlp", cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	params := make([]float32, m.NumParams())
	m.Init(params, rng)

	// Two samples: a bright top half is class 0, a bright bottom half class 1.
	x := make([]float32, 2*m.InputDim())
	for i := range 8 {
		x[i], x[16+8+i] = 1, 1
	}
	labels := []int32{0, 1}
	ws := m.NewWorkspace(2)
	grad := make([]float32, m.NumParams())
	for step := range 30 {
		clear(grad)
		loss, correct := m.LossGrad(params, x, labels, 2, grad, 0.5, ws) // mean over the batch
		if step%10 == 0 {
			fmt.Printf("step %d: loss %.2f, %d correct\n", step, loss/2, correct)
		}
		for i, g := range grad {
			params[i] -= 0.5 * g
		}
	}
	fmt.Println(m.Predict(nil, params, x, 2, ws))
	// Output:
	// step 0: loss 0.83, 0 correct
	// step 10: loss 0.01, 2 correct
	// step 20: loss 0.01, 2 correct
	// [0 1]
}
