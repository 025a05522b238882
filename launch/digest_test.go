package launch

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"colo/ps/proto"
)

// digestInner and digestJob are a kind's job: an embedded struct without
// a JSON name, whose fields are its holder's, raw options and nested
// objects.
type digestInner struct {
	Data struct {
		Train  string `json:"train"`
		Memory int64  `json:"memory,omitempty"`
	} `json:"data"`
	LR float64 `json:"lr"`
}

type digestJob struct {
	digestInner
	Options json.RawMessage `json:"options,omitempty"`
	Out     string          `json:"out"`
	Seeds   []int           `json:"seeds"`
}

// TestJobDigest checks the digest of a decoded job: the fields at the
// host's paths left out (in an embedded struct, in raw options, one
// omitted), the same values spelled otherwise agreeing, every other
// field counted and named in its Fields.
func TestJobDigest(t *testing.T) {
	local := []string{"data.train", "data.memory", "out", "options.labels"}
	job := func(edit func(j *digestJob)) Digest {
		t.Helper()
		j := digestJob{Options: json.RawMessage(`{"labels": "/a/l", "hidden": [16], "act": "relu"}`), Out: "/a/out", Seeds: []int{1, 2}}
		j.Data.Train, j.LR = "/a/train", 0.1
		if edit != nil {
			edit(&j)
		}
		d, err := JobDigest("k", j, local...)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d0 := job(nil)
	if len(d0.Sum) != 64 {
		t.Fatalf("digest %q", d0.Sum)
	}
	fields := slices.Sorted(maps.Keys(d0.Fields))
	if want := []string{"lr", "options.act", "options.hidden", "seeds"}; !slices.Equal(fields, want) {
		t.Fatalf("fields %q, want %q", fields, want)
	}
	for _, c := range []struct {
		name   string
		edit   func(j *digestJob)
		differ []string
	}{
		{"other paths", func(j *digestJob) {
			j.Data.Train, j.Out = "/b/train", "/b/out"
			j.Options = json.RawMessage(`{"labels": "/b/l", "hidden": [16], "act": "relu"}`)
		}, nil},
		{"a memory budget", func(j *digestJob) { j.Data.Memory = 1 << 20 }, nil},
		{"options in another order, spaced", func(j *digestJob) {
			j.Options = json.RawMessage("{\"act\":\"relu\",\n \"hidden\": [ 16 ], \"labels\": \"/a/l\"}")
		}, nil},
		{"option numbers spelled otherwise", func(j *digestJob) {
			j.Options = json.RawMessage(`{"labels": "/a/l", "hidden": [1.6e1], "act": "relu"}`)
		}, nil},
		{"another lr", func(j *digestJob) { j.LR = 0.2 }, []string{"lr"}},
		{"another option", func(j *digestJob) {
			j.Options = json.RawMessage(`{"labels": "/a/l", "hidden": [32], "act": "relu"}`)
		}, []string{"options.hidden"}},
		{"an option more", func(j *digestJob) {
			j.Options = json.RawMessage(`{"labels": "/a/l", "hidden": [16], "act": "relu", "drop": 0.5}`)
		}, []string{"options.drop"}},
		{"an option less", func(j *digestJob) { j.Options = json.RawMessage(`{"labels": "/a/l", "hidden": [16]}`) }, []string{"options.act"}},
		{"other seeds", func(j *digestJob) { j.Seeds = []int{2, 1} }, []string{"seeds"}},
	} {
		d := job(c.edit)
		if (d.Sum == d0.Sum) != (len(c.differ) == 0) {
			t.Errorf("%s: digest %.12s, the base's %.12s: want the same %v", c.name, d.Sum, d0.Sum, len(c.differ) == 0)
		}
		if got := proto.JobFieldsDiffer(d.Fields, d0.Fields); !slices.Equal(got, c.differ) {
			t.Errorf("%s: fields %q differ, want %q", c.name, got, c.differ)
		}
	}
	if a, b := job(nil), job(nil); a.Sum != b.Sum {
		t.Errorf("one job, two digests: %.12s and %.12s", a.Sum, b.Sum)
	}
	// The kind counts.
	if d, err := JobDigest("other", digestJob{}, local...); err != nil || d.Sum == job(func(j *digestJob) { *j = digestJob{} }).Sum {
		t.Errorf("another kind: %.12s, %v: want another digest", d.Sum, err)
	}
}

// TestJobDigestRefusesBadPaths checks that a host's path that names no
// field of the job's type, and a job that is no JSON object, are errors
// naming them.
func TestJobDigestRefusesBadPaths(t *testing.T) {
	for _, c := range []struct {
		job   any
		local []string
		want  string
	}{
		{digestJob{}, []string{"data.trian"}, `launch: job of kind k: the host's field "data.trian": struct { Train string "json:\"train\""; Memory int64 "json:\"memory,omitempty\"" } has no field "trian"`},
		{digestJob{}, []string{"Out"}, `launch: job of kind k: the host's field "Out": launch.digestJob has no field "Out"`},
		{&digestJob{}, []string{"digestInner"}, `launch: job of kind k: the host's field "digestInner": launch.digestJob has no field "digestInner"`},
		{[]int{1}, nil, "launch: job of kind k: a JSON []interface {}, want an object"},
	} {
		_, err := JobDigest("k", c.job, c.local...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%T %q: %v\nwant %s", c.job, c.local, err, c.want)
		}
	}
	if _, err := JobDigest("k", &digestJob{}, "lr", "data.train", "options.anything.below"); err != nil {
		t.Errorf("good paths: %v", err)
	}
}
