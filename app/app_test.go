package app_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"colo/app"
	"colo/app/lr"
	"colo/app/mf"
	"colo/internal/datasum"
	"colo/placement"
	"colo/train"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tiny is a libsvm file of six samples over five features, three
// classes.
const tiny = "0 1:1 2:1\n1 2:1 3:2\n2 4:1 5:1\n0 1:1 5:1\n1 3:1\n2 4:2 1:1\n"

func TestRegistry(t *testing.T) {
	if got := app.Names(); !slices.Equal(got, []string{"cnn", "ctr", "embed", "lr", "mf", "mlp"}) {
		t.Errorf("Names() = %v", got)
	}
	if _, err := app.Lookup("svm"); err == nil || !strings.Contains(err.Error(), "one of cnn, ctr, embed, lr, mf, mlp") {
		t.Errorf("Lookup(svm): %v", err)
	}
	if _, err := app.DefaultJob("svm"); err == nil {
		t.Error("DefaultJob(svm) succeeded")
	}
}

// TestEmbedPlaces opens a graph embedding job on an edge list and
// places it as --compare does: the partitioners place the edges (the
// samples) and the nodes (the keys), and parsa moves fewer vectors than
// random on two cliques joined by one edge.
func TestEmbedPlaces(t *testing.T) {
	var b strings.Builder
	for c := range 2 {
		for u := range 8 {
			for v := u + 1; v < 8; v++ {
				fmt.Fprintf(&b, "%d %d\n", 8*c+u, 8*c+v)
			}
		}
	}
	b.WriteString("0 8\n")
	job, err := app.DefaultJob("embed")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Config.Machines = writeFile(t, "cliques.txt", b.String()), 2
	opened, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	g := opened.Data.Graph
	if g.NumSamples()+opened.Data.TestGraph.NumSamples() != 57 || g.NumParams() != 16 {
		t.Fatalf("%d training edges + %d held out over %d nodes, want 57 over 16", g.NumSamples(), opened.Data.TestGraph.NumSamples(), g.NumParams())
	}
	tmax := map[string]int64{}
	for _, spec := range []string{"random", "parsa"} {
		job.Placement = spec
		p, _, err := opened.Place(job)
		if err != nil {
			t.Fatal(err)
		}
		c, err := placement.Evaluate(g, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		tmax[spec] = c.TMax
	}
	if !(tmax["parsa"] < tmax["random"]) {
		t.Errorf("T_max parsa %d, random %d: want parsa's lower", tmax["parsa"], tmax["random"])
	}
}

// TestDefaultJob: each application's defaults are in its job, and
// nowhere else.
func TestDefaultJob(t *testing.T) {
	j, err := app.DefaultJob("mf")
	if err != nil {
		t.Fatal(err)
	}
	var o mf.Config
	if err := j.DecodeOptions(&o); err != nil {
		t.Fatal(err)
	}
	want := mf.DefaultConfig()
	want.Seed = 0
	if j.Config.Rule.LR != 0.1 || j.Config.Rule.L2 != 0.05 || o != want {
		t.Errorf("mf: rule %+v, options %+v", j.Config.Rule, o)
	}
	j, err = app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	var lo lr.Options
	if err := j.DecodeOptions(&lo); err != nil {
		t.Fatal(err)
	}
	if j.Config.Rule != train.DefaultConfig().Rule || lo != lr.DefaultOptions() {
		t.Errorf("lr: rule %+v, options %+v", j.Config.Rule, lo)
	}
}

// TestSetOptions checks that SetOptions sets the options the job's
// application takes, and refuses one it does not, naming the option and
// the application and leaving the job as it was.
func TestSetOptions(t *testing.T) {
	j, err := app.DefaultJob("mf")
	if err != nil {
		t.Fatal(err)
	}
	if err := app.SetOptions(&j, map[string]any{"rank": 4, "holdout": 0.2}); err != nil {
		t.Fatal(err)
	}
	var o mf.Config
	if err := j.DecodeOptions(&o); err != nil {
		t.Fatal(err)
	}
	if o.Rank != 4 || o.HoldOut != 0.2 || o.RowLR != mf.DefaultConfig().RowLR {
		t.Errorf("options %+v: want rank 4, holdout 0.2 and the default row_lr", o)
	}
	before := slices.Clone(j.Options)
	for _, c := range []struct {
		app    string
		values map[string]any
		want   string
	}{
		{"mf", map[string]any{"rank": 8, "hidden": []int{8}}, `app mf takes no option "hidden": its options are holdout, rank, row_l2, row_lr`},
		{"lr", map[string]any{"holdout": 0.1}, `app lr takes no option "holdout": its options are features`},
		{"mlp", map[string]any{"features": "raw"}, `app mlp takes no option "features"`},
		// JSON holds no NaN: the encoding's "json: unsupported value:
		// NaN" named neither the option nor the application.
		{"mf", map[string]any{"holdout": math.NaN()}, "mf: option holdout NaN: want a finite number"},
		{"embed", map[string]any{"holdout": math.Inf(1)}, "embed: option holdout +Inf: want a finite number"},
	} {
		j := j
		if c.app != "mf" {
			if j, err = app.DefaultJob(c.app); err != nil {
				t.Fatal(err)
			}
		}
		was := slices.Clone(j.Options)
		err := app.SetOptions(&j, c.values)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.app, c.values, err, c.want)
		}
		if !bytes.Equal(j.Options, was) {
			t.Errorf("%s %v: the refused values changed the options to %s", c.app, c.values, j.Options)
		}
	}
	if !bytes.Equal(j.Options, before) {
		t.Errorf("options %s after refusals, want %s", j.Options, before)
	}
	// Every model on nn takes its threads.
	for _, name := range []string{"mlp", "cnn", "ctr"} {
		j, err := app.DefaultJob(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.SetOptions(&j, map[string]any{"threads": 2}); err != nil {
			t.Errorf("%s: threads: %v", name, err)
		}
	}
	// A job without options starts from its application's defaults.
	bare := train.Job{App: "lr"}
	if err := app.SetOptions(&bare, map[string]any{"features": "raw"}); err != nil {
		t.Fatal(err)
	}
	var lo lr.Options
	if err := bare.DecodeOptions(&lo); err != nil || lo.Features != "raw" {
		t.Errorf("a bare lr job: options %+v, %v", lo, err)
	}
	names, err := app.OptionNames(bare)
	if err != nil || !slices.Equal(names, []string{"features", "threads"}) {
		t.Errorf("lr's options %v, %v: want [features threads]", names, err)
	}
}

// TestOpenAndPlace opens a job, then the same job written to a file and
// read back (as a machine of a cluster of processes does): both give the
// same application and, from a partitioner's name and from the directory
// it was written to, the same placement.
func TestOpenAndPlace(t *testing.T) {
	job, err := app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "tiny.svm", tiny), "random", 2
	a, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	if a.App.Name() != "lr" || a.App.NumSamples() != 6 || a.App.NumKeys() != 5 || a.App.Width() != 3 {
		t.Fatalf("opened %s: %d samples, %d keys, width %d", a.App.Name(), a.App.NumSamples(), a.App.NumKeys(), a.App.Width())
	}
	p, _, err := a.Place(job)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "place")
	if err := placement.WriteDir(dir, a.Data.Graph, p, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	job.Placement = dir
	if job.Data.Checksum, err = datasum.Files(job.Data.Train); err != nil {
		t.Fatal(err)
	}
	if err := train.WriteJob(&buf, job); err != nil {
		t.Fatal(err)
	}
	back, err := train.ReadJob(&buf, "job.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := app.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	q, secs, err := b.Place(back)
	if err != nil {
		t.Fatal(err)
	}
	if secs != 0 || !reflect.DeepEqual(p, q) {
		t.Errorf("placement read back %+v (%v s), want %+v", q, secs, p)
	}
	if b.App.NumKeys() != a.App.NumKeys() || b.App.Width() != a.App.Width() || back.Data.Checksum != job.Data.Checksum {
		t.Error("the job read back opens another application")
	}
	// A placement of other data, by the checksum its summary records.
	if err := placement.WriteDir(dir, a.Data.Graph, p, map[string]any{"k": 2, "data_checksum": "crc32c:00000001"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Place(back); err == nil || !strings.Contains(err.Error(), "made from other data: data_checksum crc32c:00000001, but "+job.Data.Train+" is "+job.Data.Checksum) {
		t.Errorf("a placement of other data: %v", err)
	}
}

// TestOpenErrors: a bad option, a missing file and a placement for other
// machines are named.
func TestOpenErrors(t *testing.T) {
	job, _ := app.DefaultJob("lr")
	job.Data.Train = writeFile(t, "tiny.svm", tiny)
	job.Options = []byte(`{"features": "sqrt"}`)
	if _, err := app.Open(job); err == nil || !strings.Contains(err.Error(), "sqrt") {
		t.Errorf("features sqrt: %v", err)
	}
	job.Options = []byte(`{"rank": 3}`)
	if _, err := app.Open(job); err == nil || !strings.Contains(err.Error(), `unknown field "rank"`) {
		t.Errorf("an mf option for lr: %v", err)
	}
	job.Options = nil
	job.Data.Test = "/nonexistent/test.svm"
	if _, err := app.Open(job); err == nil || !strings.Contains(err.Error(), "/nonexistent/test.svm") {
		t.Errorf("a missing test file: %v", err)
	}
	job.Data.Test = ""
	a, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	job.Placement = "parsa-typo"
	if _, _, err := a.Place(job); err == nil || !strings.Contains(err.Error(), "parsa-typo") {
		t.Errorf("an unknown partitioner: %v", err)
	}
}

// TestSparseServersApart: the sparse applications place samples and
// parameters on the same machines and refuse servers apart.
func TestSparseServersApart(t *testing.T) {
	job, _ := app.DefaultJob("lr")
	job.Data.Train, job.Config.Machines, job.Config.Servers = writeFile(t, "tiny.svm", tiny), 2, 1
	a, err := app.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Place(job); err == nil || !strings.Contains(err.Error(), "config.servers 1") {
		t.Errorf("lr with a server apart: %v", err)
	}
}

// TestPlaced checks that Placed gives the application and placement of
// OpenPlaced, and its error for a job that cannot open.
func TestPlaced(t *testing.T) {
	job, err := app.DefaultJob("lr")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train, job.Placement, job.Config.Machines = writeFile(t, "tiny.svm", tiny), "random", 2
	a, p, err := app.Placed(job)
	if err != nil {
		t.Fatal(err)
	}
	o, want, err := app.OpenPlaced(job)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != o.App.Name() || a.NumKeys() != o.App.NumKeys() || !slices.Equal(p.Param, want.Param) || !slices.Equal(p.Data, want.Data) {
		t.Fatalf("Placed gave %s with %d keys and a placement unlike OpenPlaced's", a.Name(), a.NumKeys())
	}
	job.Data.Train = filepath.Join(t.TempDir(), "missing.svm")
	if _, _, err := app.Placed(job); err == nil {
		t.Fatal("Placed of a missing file: no error")
	}
}
