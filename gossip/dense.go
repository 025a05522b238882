package gossip

import "colo/nn"

// Dense is the Learner of a dense network of package nn on labelled
// samples: X holds the samples' features row by row (Model.InputDim()
// values each) and Labels their classes.
type Dense struct {
	Model  *nn.Model
	X      []float32
	Labels []int32
}

// NumParams returns the model's number of parameters.
func (d *Dense) NumParams() int { return d.Model.NumParams() }

// Oracle returns a gradient oracle with its own workspace.
func (d *Dense) Oracle(int) Oracle {
	return &denseOracle{d: d, ws: d.Model.NewWorkspace(64)}
}

type denseOracle struct {
	d  *Dense
	ws *nn.Workspace
	x  []float32
	y  []int32
}

// LossGrad gathers the rows and runs the model's forward and backward
// pass with the gradient scaled by 1/len(rows).
func (o *denseOracle) LossGrad(params []float32, rows []int32, grad []float32) float64 {
	dim := o.d.Model.InputDim()
	o.x, o.y = o.x[:0], o.y[:0]
	for _, u := range rows {
		o.x = append(o.x, o.d.X[int(u)*dim:(int(u)+1)*dim]...)
		o.y = append(o.y, o.d.Labels[u])
	}
	loss, _ := o.d.Model.LossGrad(params, o.x, o.y, len(rows), grad, 1/float32(len(rows)), o.ws)
	return loss
}
