// Package app is the registry of the training applications: it finds an
// application by the name a job gives (Lookup, as partition.Lookup finds
// a partitioner), sets its defaults in a job (DefaultJob), opens a job
// (Open: loads its data and builds the train.App the engine trains) and
// places it (Opened.Place). The applications live in the packages below:
// app/lr (sparse logistic regression), app/mf (matrix factorisation),
// app/embed (node embeddings of a graph, whose samples are its edges) and
// app/ctr (a click-through model on a table read through a feature spec),
// placed by the partitioners of package partition; app/dense (the mlp and
// cnn of package nn), sharded by the schemes of package shard. app/smoke
// is the parameter server's smoke job, not a training application.
//
//	job, _ := app.DefaultJob("lr")
//	job.Data.Train, job.Placement = "news20.svm", "parsa"
//	opened, err := app.Open(job)
//	p, secs, err := opened.Place(job)
//	res, err := train.Run(ctx, job, opened.App, p, deploy.InProcess{})
package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"colo/app/ctr"
	"colo/app/dense"
	"colo/app/embed"
	"colo/app/lr"
	"colo/app/mf"
	"colo/dataset"
	"colo/features"
	"colo/graph"
	"colo/placement"
	"colo/table"
	"colo/train"
)

// Spec is an application of the registry.
type Spec struct {
	// Name is the name jobs and the command line use; Summary says what
	// it trains in a line.
	Name, Summary string
	// Defaults sets the application's defaults in a job: its options,
	// its placement and the engine's settings it needs.
	Defaults func(job *train.Job) error
	// Load reads the job's data files.
	Load func(job train.Job) (*Data, error)
	// Open builds the application of job on its loaded data.
	Open func(job train.Job, d *Data) (train.App, error)
	// Place returns the placement job.Placement names for the opened
	// application, and the seconds it took to compute (0 for one read).
	Place func(job train.Job, a train.App, d *Data) (*placement.Placement, float64, error)
	// CheckPlacement says whether job.Placement can name spec, before
	// anything is loaded.
	CheckPlacement func(spec string) error
	// Shares is set for an application that builds a machine's part
	// from the machine's samples of the training graph alone (with every
	// sample's label and every parameter's id) and, when it needs them,
	// statistics of the whole graph recorded with the shares, so that a
	// machine can train on its share of the graph (ReadShare): lr, mf,
	// embed, ctr. nil for an application that needs the whole data on
	// each machine.
	Shares *Shares
}

// Shares says how an application trains a machine on its share of the
// training graph.
type Shares struct {
	// Stats, when set, returns the statistics of the whole training
	// graph that the opened application's parts depend on, by name (mf:
	// "mean", the mean training rating): WriteShares records their bits
	// in shares.json, and ReadShare gives them back in Data.Stats, for
	// Open to use instead of computing them on the share, which would
	// give another model.
	Stats func(a train.App) map[string]float64
	// EachEvaluates is set when every machine scores its own samples'
	// held-out or test entries (mf), so that each reads the test graph;
	// unset when machine 0 alone scores, on the test graph or, without
	// one, on the whole training graph, which it then reads (lr).
	EachEvaluates bool
}

// Data is what a job's files hold, loaded: a sample–parameter graph for
// the sparse applications, labelled dense samples for the dense ones.
type Data struct {
	// Graph is the training graph, which partitioners place; TestGraph
	// the test graph, nil without one.
	Graph, TestGraph *graph.Graph
	// Samples are the labelled training samples, which sharding schemes
	// place; TestSamples the test samples, nil without.
	Samples, TestSamples *dataset.Dataset
	// Stats, set when Graph is one machine's share (ReadShare), are the
	// whole training graph's statistics recorded with the shares
	// (Shares.Stats); nil when Graph is the whole graph.
	Stats *Stats
}

// sparse is the registry's part that sparse applications share: graphs
// placed by partitioners.
func sparse(name, summary string, defaults func(*train.Job) error, open func(train.Job, *graph.Graph, *graph.Graph) (train.App, error)) Spec {
	return Spec{
		Name: name, Summary: summary, Defaults: defaults, Load: LoadGraphs,
		Open:           func(job train.Job, d *Data) (train.App, error) { return open(job, d.Graph, d.TestGraph) },
		Place:          placeGraph,
		CheckPlacement: CheckPartitioner,
	}
}

// shares returns s training a machine on its share of the graph as sh
// says.
func shares(s Spec, sh Shares) Spec {
	s.Shares = &sh
	return s
}

// mfSpec is matrix factorisation's entry: on a share, with the mean
// training rating of the whole graph recorded with the shares.
func mfSpec() Spec {
	s := sparse("mf", "matrix factorisation of a ratings graph", mf.Defaults, nil)
	s.Open = func(job train.Job, d *Data) (train.App, error) {
		if d.Stats == nil {
			return mf.Open(job, d.Graph, d.TestGraph)
		}
		mean, err := d.Stats.Get("mean")
		if err != nil {
			return nil, err
		}
		return mf.OpenShare(job, d.Graph, d.TestGraph, mean)
	}
	return shares(s, Shares{
		Stats:         func(a train.App) map[string]float64 { return map[string]float64{"mean": a.(*mf.App).Mean} },
		EachEvaluates: true,
	})
}

// placeGraph places the training graph of a sparse application.
func placeGraph(job train.Job, _ train.App, d *Data) (*placement.Placement, float64, error) {
	if c := job.Config; !c.Colocated() && c.Servers != c.Machines {
		return nil, 0, fmt.Errorf("%s places each sample and parameter on one of K machines: servers apart from the workers (config.servers %d) must be as many as the workers (config.machines %d), server i holding the parameters of machine i", job.App, c.Servers, c.Machines)
	}
	return Place(job, d.Graph)
}

// denseSpec is the registry's entry of a dense architecture.
func denseSpec(name, summary string) Spec {
	return Spec{
		Name: name, Summary: summary, Defaults: dense.Defaults,
		Load: func(job train.Job) (*Data, error) {
			tr, te, err := dense.Load(job)
			if err != nil {
				return nil, err
			}
			return &Data{Samples: tr, TestSamples: te}, nil
		},
		Open: func(job train.Job, d *Data) (train.App, error) { return dense.Open(job, d.Samples, d.TestSamples) },
		Place: func(job train.Job, a train.App, _ *Data) (*placement.Placement, float64, error) {
			return a.(*dense.App).Place(job)
		},
		CheckPlacement: dense.CheckPlacement,
	}
}

// specs is the registry.
var specs = []Spec{
	shares(sparse("lr", "logistic regression, binary or multinomial, on sparse features", lr.Defaults,
		func(job train.Job, g, test *graph.Graph) (train.App, error) { return lr.Open(job, g, test) }), Shares{}),
	mfSpec(),
	{
		Name: "embed", Summary: "node embeddings of a graph for link prediction (SNAP edge lists)", Defaults: embed.Defaults,
		Load: func(job train.Job) (*Data, error) {
			g, test, err := embed.Load(job)
			if err != nil {
				return nil, err
			}
			return &Data{Graph: g, TestGraph: test}, nil
		},
		Open: func(job train.Job, d *Data) (train.App, error) {
			if d.Stats != nil { // a machine's share
				return embed.OpenShare(job, d.Graph, d.TestGraph)
			}
			return embed.Open(job, d.Graph, d.TestGraph)
		},
		Place: placeGraph, CheckPlacement: CheckPartitioner,
		// Worker 0 alone scores, on the test graph that Load always
		// makes (the test file's edges or the held-out ones).
		Shares: &Shares{},
	},
	{
		Name: "ctr", Summary: "a click-through model: an embedding table per categorical field of a --spec and an mlp", Defaults: ctr.Defaults,
		Load: func(job train.Job) (*Data, error) {
			if err := ctr.CheckSpec(job.Data.Load.Spec); err != nil {
				return nil, err
			}
			return LoadGraphs(job)
		},
		Open: func(job train.Job, d *Data) (train.App, error) { return ctr.Open(job, d.Graph, d.TestGraph) },
		Place: func(job train.Job, a train.App, d *Data) (*placement.Placement, float64, error) {
			p, secs, err := placeGraph(job, a, d)
			if err != nil {
				return nil, 0, err
			}
			p, err = a.(*ctr.App).Extend(p, job.Config.NumServers())
			return p, secs, err
		},
		CheckPlacement: CheckPartitioner,
		// A part reads its rows alone, the labels of all (which the
		// share keeps), and the fitted spec, which travels in the job;
		// worker 0 scores the test rows or, without them, the training
		// rows.
		Shares: &Shares{},
	},
	denseSpec("mlp", "a multilayer perceptron on labelled dense data (784-256-128-10 by default)"),
	denseSpec("cnn", "a LeNet-5 convolutional network on labelled images"),
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
	return Spec{}, fmt.Errorf("app %q: want one of %s", name, strings.Join(Names(), ", "))
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
	spec Spec
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
	var d *Data
	if job.Data.Cache != "" {
		d, err = readCache(job, s)
	} else {
		d, err = s.Load(job)
	}
	if err != nil {
		return nil, err
	}
	return OpenData(job, d)
}

// readCache reads the data cache of job: only the share of machine
// job.Data.Share when it is set, the application trains on shares, the
// cache holds them and the machine needs no more (under lr machine 0
// scores the training set when there is no test set), and the test set
// only for the machines that score it (Shares.EachEvaluates); the whole
// cache otherwise.
func readCache(job train.Job, s Spec) (*Data, error) {
	dir, r := job.Data.Cache, job.Data.Share
	if r == nil || s.Shares == nil || (!s.Shares.EachEvaluates && *r == 0 && !hasTest(dir)) {
		return ReadCache(dir)
	}
	d, err := ReadShare(dir, *r, *r == 0 || s.Shares.EachEvaluates)
	if errors.Is(err, ErrNoShares) {
		return ReadCache(dir)
	}
	return d, err
}

// OpenData builds job's application on data already loaded (the demo's
// embedded dataset, say).
func OpenData(job train.Job, d *Data) (*Opened, error) {
	s, err := Lookup(job.App)
	if err != nil {
		return nil, err
	}
	a, err := s.Open(job, d)
	if err != nil {
		return nil, err
	}
	return &Opened{App: a, Data: d, spec: s}, nil
}

// Place returns the placement job.Placement names for the opened
// application (job is the opened one, with its placement chosen) and the
// seconds computing it took.
func (o *Opened) Place(job train.Job) (*placement.Placement, float64, error) {
	return o.spec.Place(job, o.App, o.Data)
}

// Cost returns what placement p of the opened application costs on its
// training graph (placement.Evaluate), nil without a graph (the dense
// models). For an application whose keys extend the graph's parameters
// (ctr's mlp, read by every machine and spread evenly) it is the cost
// of the part of p that places the graph.
func (o *Opened) Cost(p *placement.Placement) (*placement.Cost, error) {
	g := o.Data.Graph
	if g == nil {
		return nil, nil
	}
	if a, ok := o.App.(interface {
		GraphPlacement(*placement.Placement) *placement.Placement
	}); ok {
		p = a.GraphPlacement(p)
	}
	return placement.Evaluate(g, p, 0)
}

// PlacedGraph returns the graph whose samples and parameters a placement
// of the opened application assigns one for one, which a deployment of
// processes writes as a directory (deploy.Processes.Graph): a sparse
// application's training graph; nil for an application that writes its
// own placement (train.PlacementWriter: ctr, whose mlp keys follow the
// graph's, and the dense models).
func (o *Opened) PlacedGraph() *graph.Graph {
	if _, ok := o.App.(train.PlacementWriter); ok {
		return nil
	}
	return o.Data.Graph
}

// CheckPlacement says whether spec is a placement application name
// takes, before anything is loaded.
func CheckPlacement(name, spec string) error {
	s, err := Lookup(name)
	if err != nil {
		return err
	}
	return s.CheckPlacement(spec)
}

// LoadGraphs reads the training and test graphs of a job: with a
// feature spec (job.Data.Load.Spec) the training rows of the training
// table, and the test table's rows or, without one, the training table's
// test rows (none without a test predicate).
func LoadGraphs(job train.Job) (*Data, error) {
	if sp := job.Data.Load.Spec; sp != nil {
		return loadTables(job.Data.Train, job.Data.Test, sp, features.TableOptions(job.Data.Load.MemoryBudget))
	}
	opt := job.Data.Load.Graph()
	g, err := graph.Load(job.Data.Train, opt)
	if err != nil {
		return nil, err
	}
	out := &Data{Graph: g}
	if job.Data.Test != "" {
		if out.TestGraph, err = graph.Load(job.Data.Test, opt); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadTables reads the graphs of a job on tables through the fitted spec
// sp.
func loadTables(trainFile, testFile string, sp *features.Fitted, opt table.Options) (*Data, error) {
	if testFile == "" && sp.Spec.Test != "" {
		g, test, err := sp.Split(trainFile, opt)
		if err != nil {
			return nil, err
		}
		return &Data{Graph: g, TestGraph: test}, nil
	}
	g, err := sp.Graph(trainFile, features.Train, opt)
	if err != nil {
		return nil, err
	}
	out := &Data{Graph: g}
	if testFile != "" {
		if out.TestGraph, err = sp.Graph(testFile, features.All, opt); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SetOptions sets values in the job's options, each by its name as the
// options of the job's application spell it in JSON (OptionNames). A name
// the application does not take is refused, naming it and the
// application, and nothing is set: a value meant for one application is
// never dropped in silence when the job is another's. A job without
// options starts from its application's defaults (DefaultJob).
func SetOptions(job *train.Job, values map[string]any) error {
	opts, err := optionsOf(*job)
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(values))
	for _, name := range names {
		if _, ok := opts[name]; !ok {
			return fmt.Errorf("app %s takes no option %q: its options are %s", job.App, name, strings.Join(slices.Sorted(maps.Keys(opts)), ", "))
		}
	}
	for _, name := range names {
		// JSON has no NaN or infinity: the encoding would fail naming
		// neither the option nor the value.
		if x, ok := values[name].(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return fmt.Errorf("%s: option %s %v: want a finite number", job.App, name, x)
		}
		opts[name] = values[name]
	}
	return job.SetOptions(opts)
}

// OptionNames returns the names of the options that the job's
// application takes, as their JSON spells them, sorted.
func OptionNames(job train.Job) ([]string, error) {
	opts, err := optionsOf(job)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(opts)), nil
}

// optionsOf returns the job's options as a map by name: its own, or its
// application's defaults when it has none.
func optionsOf(job train.Job) (map[string]any, error) {
	raw := job.Options
	if len(raw) == 0 {
		d, err := DefaultJob(job.App)
		if err != nil {
			return nil, err
		}
		raw = d.Options
	}
	opts := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, fmt.Errorf("%s options: %w", job.App, err)
		}
	}
	return opts, nil
}
