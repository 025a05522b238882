package launch

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestDecodeJobTypeErrors checks that a value of the wrong type in a job
// is refused naming the field by its path in the file (without the Go
// names of embedded structs, which encoding/json puts in) and the JSON
// value wanted, not by Go's struct field and type.
func TestDecodeJobTypeErrors(t *testing.T) {
	type rule struct {
		LR float64 `json:"lr"`
	}
	type config struct {
		MaxPasses int      `json:"max_passes"`
		Rule      rule     `json:"rule"`
		Verbose   bool     `json:"verbose"`
		Files     []string `json:"files"`
		Route     []byte   `json:"route"`
	}
	type inner struct {
		App    string `json:"app"`
		Config config `json:"config"`
	}
	type job struct { // as train/deploy.Job embeds a train.Job
		inner
		Width int `json:"width"`
	}
	for _, c := range []struct{ in, want string }{
		{`{"config": {"max_passes": "3"}}`, "job of kind k: config.max_passes: a JSON string, want an integer (int)"},
		{`{"config": {"rule": {"lr": "fast"}}}`, "job of kind k: config.rule.lr: a JSON string, want a number"},
		{`{"config": {"rule": 0.5}}`, "job of kind k: config.rule: a JSON number, want an object"},
		{`{"config": {"verbose": 1}}`, "job of kind k: config.verbose: a JSON number, want true or false"},
		{`{"config": {"files": "a.svm"}}`, "job of kind k: config.files: a JSON string, want an array"},
		{`{"config": {"route": 7}}`, "job of kind k: config.route: a JSON number, want a string (base64)"},
		{`{"app": 1}`, "job of kind k: app: a JSON number, want a string"},
		{`{"width": 2.5}`, "job of kind k: width: a JSON number 2.5, want an integer (int)"},
		{`[1]`, "job of kind k: the job: a JSON array, want an object"},
		{`{"config": {"max_pases": 3}}`, `job of kind k: json: unknown field "max_pases"`},
	} {
		var j job
		if err := DecodeJob("k", json.RawMessage(c.in), &j); err == nil || err.Error() != c.want {
			t.Errorf("DecodeJob(%s) = %v, want %q", c.in, err, c.want)
		}
	}
	if err := JobFileError("", errors.New("e")); err.Error() != "e" {
		t.Errorf("JobFileError without a file: %v", err)
	}
	if err := JobFileError("j.json", errors.New("e")); err.Error() != "--job-file j.json: e" {
		t.Errorf("JobFileError: %v", err)
	}
}
