// Package app is the registry of the training applications: it finds an
// application by the name a job gives (Lookup, as partition.Lookup finds
// a partitioner), sets its defaults in a job (DefaultJob) and opens a job
// (Open): loads its data and builds the train.App that the engine
// trains. The applications live in the packages below: app/lr (sparse
// logistic regression), app/mf (matrix factorisation); app/smoke is the
// parameter server's smoke job, not a training application.
//
//	job, _ := app.DefaultJob("lr")
//	job.Data.Train, job.Placement = "news20.svm", "parsa"
//	opened, err := app.Open(job)
//	res, err := train.Run(ctx, job, opened.App, p, cluster.InProcess{})
package app

import (
	"fmt"
	"slices"
	"strings"

	"colo/app/lr"
	"colo/app/mf"
	"colo/graph"
	"colo/train"
)

// Spec is an application of the registry.
type Spec struct {
	// Name is the name jobs and the command line use; Summary says what
	// it trains in a line.
	Name, Summary string
	// Defaults sets the application's defaults in a job: its options and
	// the update rule's settings it needs.
	Defaults func(job *train.Job) error
	// Open builds the application of job on its loaded data.
	Open func(job train.Job, d *Data) (train.App, error)
}

// Data is what a job's files hold, loaded.
type Data struct {
	// Train is the training graph, which placements place; Test the test
	// graph, nil without one.
	Train, Test *graph.Graph
}

// specs is the registry.
var specs = []Spec{
	{
		Name: "lr", Summary: "logistic regression, binary or multinomial, on sparse features",
		Defaults: lr.Defaults,
		Open: func(job train.Job, d *Data) (train.App, error) {
			return lr.Open(job, d.Train, d.Test)
		},
	},
	{
		Name: "mf", Summary: "matrix factorisation of a ratings graph",
		Defaults: mf.Defaults,
		Open: func(job train.Job, d *Data) (train.App, error) {
			return mf.Open(job, d.Train, d.Test)
		},
	},
}

// Names lists the applications in order.
func Names() []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	slices.Sort(names)
	return names
}

// Lookup returns the application called name.
func Lookup(name string) (Spec, error) {
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("app %q: want %s", name, strings.Join(Names(), " or "))
}

// DefaultJob returns train.DefaultJob with application name's defaults.
func DefaultJob(name string) (train.Job, error) {
	s, err := Lookup(name)
	if err != nil {
		return train.Job{}, err
	}
	job := train.DefaultJob()
	job.App = name
	if err := s.Defaults(&job); err != nil {
		return job, err
	}
	return job, nil
}

// Opened is a job's application ready to train, with its data.
type Opened struct {
	App  train.App
	Data *Data
}

// Open validates job, loads its data and builds its application; errors
// name the file or the field.
func Open(job train.Job) (*Opened, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	s, err := Lookup(job.App)
	if err != nil {
		return nil, err
	}
	d, err := Load(job.Data)
	if err != nil {
		return nil, err
	}
	a, err := s.Open(job, d)
	if err != nil {
		return nil, err
	}
	return &Opened{App: a, Data: d}, nil
}

// Load reads the training and test graphs of d.
func Load(d train.Data) (*Data, error) {
	opt := d.Load.Graph()
	g, err := graph.Load(d.Train, opt)
	if err != nil {
		return nil, err
	}
	out := &Data{Train: g}
	if d.Test != "" {
		if out.Test, err = graph.Load(d.Test, opt); err != nil {
			return nil, err
		}
	}
	return out, nil
}
