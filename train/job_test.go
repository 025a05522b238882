package train_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"colo/internal/memcap"
	"colo/ps/clock"
	"colo/train"
	"colo/transport"
)

// fullJob is a job with every field set away from its default.
func fullJob(t testing.TB) train.Job {
	t.Helper()
	job := train.DefaultJob()
	job.App = "mf"
	job.Data = train.Data{Train: "u.data", Test: "u.test", Load: train.LoadOptions{Format: "ratings", IndexBase: 1, DropSelfLoops: true, HashBits: 18}}
	job.Placement = "parsa+refine"
	if err := job.SetOptions(map[string]any{"rank": 8, "holdout": 0.2}); err != nil {
		t.Fatal(err)
	}
	c := &job.Config
	c.Machines, c.Clock = 3, clock.Config{Mode: clock.Bounded, Tau: 2}
	c.Rule.Name, c.Rule.LR, c.Rule.L1, c.Rule.L2 = "ftrl", 0.05, 0.01, 0.02
	c.Batch, c.Epsilon, c.MaxPasses, c.Seed = 500, 1e-3, 17, 42
	c.Bandwidth = &transport.Bandwidth{K: 3, Rates: []float64{0, 1, 2, 3, 0, 5, 6, 7, 0}}
	return job
}

// TestJobRoundTrip: a job written by one process and read by another is
// the same value.
func TestJobRoundTrip(t *testing.T) {
	for _, job := range []train.Job{fullJob(t), func() train.Job {
		j := train.DefaultJob()
		j.App, j.Data.Train, j.Config.LinkBandwidth = "lr", "news20.svm", 12.5e6
		return j
	}()} {
		var buf bytes.Buffer
		if err := train.WriteJob(&buf, job); err != nil {
			t.Fatal(err)
		}
		got, err := train.ReadJob(bytes.NewReader(buf.Bytes()), "job.json")
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		// Options compare as JSON values.
		var a, b any
		json.Unmarshal(job.Options, &a)
		json.Unmarshal(got.Options, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("options %s, read back %s", job.Options, got.Options)
		}
		job.Options, got.Options = nil, nil
		if !reflect.DeepEqual(job, got) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, job)
		}
		if strings.Contains(buf.String(), "Progress") || !strings.Contains(buf.String(), `"consistency"`) {
			t.Errorf("job file:\n%s", buf.String())
		}
	}
}

// TestJobValidate: every bad field is refused with its name.
func TestJobValidate(t *testing.T) {
	if err := fullJob(t).Validate(); err != nil {
		t.Fatalf("a good job: %v", err)
	}
	for _, c := range []struct {
		edit func(*train.Job)
		want string
	}{
		{func(j *train.Job) { j.App = "" }, "app is empty"},
		{func(j *train.Job) { j.Data.Train = "" }, "data.train"},
		{func(j *train.Job) { j.Data.Load.Format = "csv" }, "data.load"},
		{func(j *train.Job) { j.Data.Load.IndexBase = 2 }, "data.load"},
		{func(j *train.Job) { j.Placement = "" }, "placement is empty"},
		{func(j *train.Job) { j.Options = json.RawMessage("{") }, "options"},
		{func(j *train.Job) { j.Config.Machines = 0 }, "config.machines 0"},
		{func(j *train.Job) { j.Config.Clock = clock.Config{Mode: clock.Bounded} }, "config.consistency"},
		{func(j *train.Job) { j.Config.Rule.Name = "sum" }, "config.rule.name sum does not train"},
		{func(j *train.Job) { j.Config.Rule.Name = "adam2" }, "config.rule"},
		{func(j *train.Job) { j.Config.Rule.LR = -1 }, "config.rule"},
		{func(j *train.Job) { j.Config.Batch = -1 }, "config.batch -1"},
		{func(j *train.Job) { j.Config.Epsilon = -1 }, "config.epsilon"},
		{func(j *train.Job) { j.Config.MaxPasses = 0 }, "config.max_passes 0"},
		{func(j *train.Job) { j.Config.Bandwidth = nil; j.Config.LinkBandwidth = -5 }, "config.link_bandwidth_bytes_per_s"},
		{func(j *train.Job) { j.Config.LinkBandwidth = 5 }, "exclude each other"},
		{func(j *train.Job) { j.Config.Machines = 4 }, "config.bandwidth_matrix is for 3 machines"},
		{func(j *train.Job) { j.Config.Bandwidth.Rates = j.Config.Bandwidth.Rates[:4] }, "config.bandwidth_matrix has 4 rates"},
		{func(j *train.Job) { j.Config.Bandwidth.Rates[1] = -1 }, "config.bandwidth_matrix rate 0→1"},
	} {
		job := fullJob(t)
		c.edit(&job)
		err := job.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}

// TestReadJobErrors: a job file with a misspelt field, bad JSON or an
// invalid value is refused, naming the file and the field.
func TestReadJobErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"app": "lr", "data": {"train": "x"}, "placement": "parsa", "config": {"machines": 2, "max_pases": 3}}`, `unknown field "max_pases"`},
		{`{"app": "lr"`, "job.json"},
		{`{"app": "lr", "data": {"train": "x"}, "placement": "parsa", "config": {"machines": 2, "consistency": "ssp:0", "rule": {"name": "sgd"}, "max_passes": 1}}`, "ssp:0"},
		{`{"app": "lr", "data": {"train": "x"}, "placement": "parsa", "config": {"machines": 2, "consistency": "bsp", "rule": {"name": "sgd"}, "max_passes": 0}}`, "config.max_passes"},
	} {
		_, err := train.ReadJob(strings.NewReader(c.in), "job.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "job.json") {
			t.Errorf("%s: want an error naming job.json and %q, got %v", c.in, c.want, err)
		}
	}
}

// TestDecodeOptions: options the job does not set keep the defaults;
// unknown ones are named.
func TestDecodeOptions(t *testing.T) {
	type opts struct {
		Rank    int     `json:"rank"`
		HoldOut float64 `json:"holdout"`
	}
	job := train.DefaultJob()
	job.App = "mf"
	o := opts{Rank: 16, HoldOut: 0.1}
	if err := job.DecodeOptions(&o); err != nil || o.Rank != 16 {
		t.Fatalf("no options: %+v %v", o, err)
	}
	job.Options = json.RawMessage(`{"rank": 4}`)
	if err := job.DecodeOptions(&o); err != nil || o.Rank != 4 || o.HoldOut != 0.1 {
		t.Fatalf("rank 4: %+v %v", o, err)
	}
	job.Options = json.RawMessage(`{"rnak": 4}`)
	if err := job.DecodeOptions(&o); err == nil || !strings.Contains(err.Error(), "rnak") || !strings.Contains(err.Error(), "mf options") {
		t.Fatalf("a misspelt option: %v", err)
	}
}

// FuzzReadJob: ReadJob never panics, and a job it accepts is valid and
// reads back the same after WriteJob.
func FuzzReadJob(f *testing.F) {
	// A reader that allocated what its input claims would die of out
	// of memory under the cap: a failing input.
	memcap.Cap(f, 1<<30)
	var buf bytes.Buffer
	train.WriteJob(&buf, fullJob(f))
	f.Add(buf.String())
	f.Add(`{"app": "lr", "data": {"train": "x"}}`)
	f.Add(`{"app": "lr", "data": {"train": "x"}, "config": {"consistency": "ssp:3", "bandwidth_matrix": {"k": 1, "rates": [0]}}}`)
	f.Add(`{"options": [1, 2]}`)
	f.Fuzz(func(t *testing.T, in string) {
		job, err := train.ReadJob(strings.NewReader(in), "fuzz.json")
		if err != nil {
			return
		}
		if err := job.Validate(); err != nil {
			t.Fatalf("accepted an invalid job: %v", err)
		}
		var out bytes.Buffer
		if err := train.WriteJob(&out, job); err != nil {
			t.Fatalf("write an accepted job: %v", err)
		}
		back, err := train.ReadJob(&out, "back.json")
		if err != nil {
			t.Fatalf("read back: %v\n%s", err, out.String())
		}
		var a, b bytes.Buffer
		train.WriteJob(&a, job)
		train.WriteJob(&b, back)
		if a.String() != b.String() {
			t.Fatalf("read back differs:\n%s\n%s", a.String(), b.String())
		}
	})
}
