package launch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/ps/update"
)

// A Kind is one distributed workload that a cluster of processes runs:
// training, distributed Parsa, decentralised training, the smoke job. Its
// job travels in an Envelope; every process of the cluster, whoever
// started it (Cluster, mpirun, srun, dmlc-submit, Kubernetes), reads the
// same envelope (colo node --job-file) and asks the kind named in it what
// to do: the scheduler how to configure itself, every other node what to
// open and run. Kinds are values the caller passes in (Kinds); there is
// no registry.
type Kind interface {
	// Name is the kind's name in the envelope: "train", "parsa", ….
	Name() string
	// Scheduler configures the scheduler of job: its numbers of servers,
	// workers and evaluators, its key space, width, routing table and
	// consistency model. cfg holds the defaults and the command line's
	// timing (heartbeat, timeouts); a kind leaves what it does not set.
	// It sets the job's Digest too (sched.Config.JobDigest and
	// JobFields), by which the scheduler refuses a member whose job is
	// another.
	Scheduler(job json.RawMessage, cfg *sched.Config) error
	// Open opens the member at of job before it joins: it reads what the
	// member needs (its data, its placement) and returns what runs on its
	// node, with the job's Digest (Member.JobDigest and JobFields).
	// Errors name the field or file at fault.
	Open(ctx context.Context, job json.RawMessage, at Position) (*Member, error)
}

// Position is where a member sits in its cluster: its role, its rank (-1
// for any) and whether it replaces a failed member of a running job
// (colo node --recover).
type Position struct {
	Role    proto.Role
	Rank    int
	Recover bool
	// Servers and Workers are the cluster's numbers as the command line
	// gives them (0: not given).
	Servers, Workers int
	// Host is the address the node advertises and Token the cluster's
	// token, for a kind whose members open links of their own.
	Host, Token string
}

// Member is what a Kind opens for one node of its cluster.
type Member struct {
	// Rule is the update rule of the node's server (nil: sum).
	Rule update.Rule
	// JobDigest, when set, is the proto.JobDigest of the member's job
	// and JobFields its fields' (a Digest's): RunNode gives them to the
	// node, whose scheduler refuses it if its own job is another, naming
	// the fields that differ (a kind sets them on both sides, see
	// sched.Config.JobDigest and JobDigest in this package).
	JobDigest string
	JobFields map[string]string
	// Rates are the emulated rates of the node's links (zero: unlimited).
	Rates node.Rates
	// Run runs the job on the node's worker once it has joined and
	// returns the member's report (JSON-encoded into the Report envelope;
	// nil for none); it may add the kind's part to the node's summary
	// (NodeSummary.Smoke, Train, Lines). Nil runs nothing: the node serves
	// and waits for the end.
	Run func(ctx context.Context, n *node.Node, sum *NodeSummary) (report any, err error)
	// Report, when set, returns the report of a member without Run (a
	// server's), given its summary once the cluster has ended.
	Report func(sum *NodeSummary) any
	// After, when set, is called once the cluster has ended without
	// error, before the report is written (the placement of distributed
	// Parsa's worker 0 goes out then).
	After func() error
}

// Kinds are the kinds a process knows, looked up by name.
type Kinds []Kind

// Lookup returns the kind named name, or an error listing the known ones.
func (ks Kinds) Lookup(name string) (Kind, error) {
	var names []string
	for _, k := range ks {
		if k.Name() == name {
			return k, nil
		}
		names = append(names, k.Name())
	}
	return nil, fmt.Errorf("kind %q: want %s", name, strings.Join(names, ", "))
}

// Envelope is a job as every process of a cluster reads it:
// {"kind": "train", "job": {…}}. The job is the kind's own value.
type Envelope struct {
	Kind string          `json:"kind"`
	Job  json.RawMessage `json:"job"`
}

// NewEnvelope wraps job, marshalled, in an envelope of kind.
func NewEnvelope(kind string, job any) (Envelope, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return Envelope{}, fmt.Errorf("job of kind %s: %w", kind, err)
	}
	return Envelope{Kind: kind, Job: b}, nil
}

// maxEnvelope bounds the size of a job file.
const maxEnvelope = 1 << 30

// ReadEnvelope reads the envelope in r; name names it in errors. An
// unknown field, a missing kind or job, or trailing data is refused.
func ReadEnvelope(r io.Reader, name string) (Envelope, error) {
	var e Envelope
	dec := json.NewDecoder(io.LimitReader(r, maxEnvelope))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("%s: %w", name, err)
	}
	if dec.More() {
		return e, fmt.Errorf("%s: data after the job's envelope", name)
	}
	switch {
	case e.Kind == "":
		return e, fmt.Errorf(`%s: no "kind": want {"kind": KIND, "job": {…}}`, name)
	case len(e.Job) == 0 || bytes.Equal(e.Job, []byte("null")):
		return e, fmt.Errorf(`%s: no "job": want {"kind": %q, "job": {…}}`, name, e.Kind)
	}
	return e, nil
}

// ReadEnvelopeFile reads the envelope in the file at path.
// It must be a regular file (ReadJobFile).
func ReadEnvelopeFile(path string) (Envelope, error) {
	b, err := ReadJobFile(path)
	if err != nil {
		return Envelope{}, err
	}
	return ReadEnvelope(bytes.NewReader(b), path)
}

// WriteFile writes e to path, readable by its owner only (the job may
// name private files); an existing file is replaced.
func (e Envelope) WriteFile(path string) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// DecodeJob decodes the job of an envelope into v, refusing unknown
// fields and trailing data; errors name the kind and the field.
func DecodeJob(kind string, job json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(job))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := cmp.Or(jsonPath(reflect.TypeOf(v), te.Field), "the job")
			return fmt.Errorf("job of kind %s: %s: a JSON %s, want %s", kind, field, te.Value, jsonKind(te.Type))
		}
		return fmt.Errorf("job of kind %s: %w", kind, err)
	}
	if dec.More() {
		return fmt.Errorf("job of kind %s: data after the job", kind)
	}
	return nil
}

// jsonPath is the path of a field of t as encoding/json names it, without
// the Go names of the embedded structs it puts in ("Job.config.machines"
// of train/deploy's Job, which embeds a train.Job): the path as the file
// spells it.
func jsonPath(t reflect.Type, field string) string {
	var out []string
	for _, name := range strings.Split(field, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			if sf, ok := t.FieldByName(name); ok && sf.Anonymous && sf.Tag.Get("json") == "" {
				t = sf.Type
				continue // an embedded struct: its fields are its holder's
			}
			next := reflect.Type(nil)
			for _, sf := range reflect.VisibleFields(t) {
				if tag, _, _ := strings.Cut(sf.Tag.Get("json"), ","); tag == name || tag == "" && sf.Name == name {
					next = sf.Type
					break
				}
			}
			t = next
		case t.Kind() == reflect.Map || t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
			t = t.Elem()
		default:
			t = nil
		}
		out = append(out, name)
	}
	return strings.Join(out, ".")
}

// jsonKind says what JSON value decodes into t, for an error.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string (base64)"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer (" + t.Kind().String() + ")"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.String()
}

// JobFileError is err, an error of the job read from the job file at
// path (colo node --job-file), said as the file's: "--job-file PATH: …",
// its fields as the file spells them (cli.Flags.FlagNames leaves what
// follows "--job-file " alone). With no path (a job the flags
// described) it is err.
func JobFileError(path string, err error) error {
	if path == "" || err == nil {
		return err
	}
	return fmt.Errorf("--job-file %s: %w", path, err)
}

// Report is what a member of a cluster writes when its job ends (colo node
// --result), the one report of every kind: the node's summary and the
// kind's own report.
type Report struct {
	Kind string `json:"kind"`
	// Rank is the member's rank (its Position's; -1 when it took any).
	Rank int `json:"rank"`
	// Node is the node's summary: role, ids, start, counters.
	Node NodeSummary `json:"node"`
	// Report is the kind's report of the member (Member.Run's), absent
	// when it has none.
	Report json.RawMessage `json:"report,omitempty"`
}

// NewReport returns the report of a member of kind at rank, whose node's
// summary is sum and whose own report is report (nil: none).
func NewReport(kind string, rank int, sum *NodeSummary, report any) (*Report, error) {
	r := &Report{Kind: kind, Rank: rank, Node: *sum}
	if report != nil {
		b, err := json.Marshal(report)
		if err != nil {
			return nil, fmt.Errorf("report of kind %s: %w", kind, err)
		}
		r.Report = b
	}
	return r, nil
}

// reportLimit bounds the size of a member's report.
const reportLimit = 256 << 20

// ReadReportFile reads the report at path.
func ReadReportFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("no report: %w", err)
	}
	defer f.Close()
	var r Report
	if err := json.NewDecoder(io.LimitReader(f, reportLimit)).Decode(&r); err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return &r, nil
}

// Decode decodes the kind's report into v; a member without one is an
// error.
func (r *Report) Decode(v any) error {
	if len(r.Report) == 0 {
		return errors.New("the member wrote no report")
	}
	return json.Unmarshal(r.Report, v)
}
