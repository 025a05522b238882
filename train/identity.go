package train

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
)

// Identity is what identifies a job for its checkpoints: every setting
// that changes the trained model, each named as the command line spells
// it (--lr, --features) and its value as text. A checkpoint's MANIFEST
// holds its job's identity (Identity.String), and a job resumes from it
// only when every field both name has the same value (CompareIdentity).
//
// The fields known before the data is loaded (JobIdentity: the
// application, the machines, the update rule and its hyper-parameters,
// the batch, the seed, the application's options and the data's
// checksum) let a resume be refused before the data is read; a
// deployment adds what the loaded data and the placement decide
// (Deployment.Identity: the placement's checksum, the keys, their width,
// the samples and the batches of a pass).
type Identity []Field

// Field is one setting of an Identity.
type Field struct{ Name, Value string }

// fixed are the fields a resume can never change, not even one the user
// forces (Checkpoint.Override): they decide the layout of the
// checkpoint's files (the machines, the rule's state, the keys, the
// batches). The others change the result only (a rate, a transform, the
// data's values).
var fixed = []string{"--app", "--machines", "--servers", "--updater", "--batch", "placement", "width", "keys", "samples", "batches"}

// Overridable reports whether a resume the user forces may change f.
func (f Field) Overridable() bool { return !slices.Contains(fixed, f.Name) }

// optionsApart are application options that do not change the trained
// model: files whose content the data's checksum covers, and settings of
// the evaluation alone.
var optionsApart = []string{"labels", "test_labels", "eval_negatives"}

// JobIdentity returns the fields of job's identity known before its data
// is loaded. The data's field is there when job.Data.Checksum is set.
func JobIdentity(job Job) Identity {
	c, r := job.Config, job.Config.Rule
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	id := Identity{
		{Name: "--app", Value: job.App},
		{Name: "--machines", Value: strconv.Itoa(c.Machines)},
		{Name: "--servers", Value: strconv.Itoa(c.Servers)},
		{Name: "--consistency", Value: c.Clock.Name()},
		{Name: "--updater", Value: r.Name},
		{Name: "--lr", Value: num(r.LR)},
		{Name: "--l1", Value: num(r.L1)},
		{Name: "--l2", Value: num(r.L2)},
		{Name: "rule.beta", Value: num(r.Beta)},
		{Name: "rule.eps", Value: num(r.Eps)},
		{Name: "rule.momentum", Value: num(r.Momentum)},
		{Name: "rule.beta1", Value: num(r.Beta1)},
		{Name: "rule.beta2", Value: num(r.Beta2)},
		{Name: "--async-step", Value: cmp.Or(r.AsyncStep, "none")},
		{Name: "--batch", Value: strconv.Itoa(c.Batch)},
		{Name: "--seed", Value: strconv.FormatUint(c.Seed, 10)},
	}
	var opts map[string]json.RawMessage
	if json.Unmarshal(job.Options, &opts) == nil {
		names := make([]string, 0, len(opts))
		for name := range opts {
			if !slices.Contains(optionsApart, name) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			v := string(opts[name])
			var s string
			if json.Unmarshal(opts[name], &s) == nil {
				v = s
			}
			id = append(id, Field{Name: "--" + strings.ReplaceAll(name, "_", "-"), Value: v})
		}
	}
	if job.Data.Checksum != "" {
		id = append(id, Field{Name: "data", Value: job.Data.Checksum})
	}
	return id
}

// Identity returns the identity of the job of d: JobIdentity, then the
// placement by a checksum of where it puts every sample and key (a
// deployment of processes writes it to a directory of its own each
// time), the keys and their width, the samples and the batches of a
// pass.
func (d *Deployment) Identity() Identity {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for _, a := range [][]int32{d.Placement.Data, d.Placement.Param} {
		for _, x := range a {
			h.Write(binary.LittleEndian.AppendUint32(nil, uint32(x)))
		}
	}
	return append(JobIdentity(d.Job),
		Field{Name: "placement", Value: fmt.Sprintf("%08x", h.Sum32())},
		Field{Name: "width", Value: strconv.Itoa(d.App.Width())},
		Field{Name: "keys", Value: strconv.Itoa(d.App.NumKeys())},
		Field{Name: "samples", Value: strconv.Itoa(d.App.NumSamples())},
		Field{Name: "batches", Value: strconv.Itoa(d.Schedule.Batches)})
}

// String writes id as a MANIFEST holds it: a line "name value" per
// field.
func (id Identity) String() string {
	var b strings.Builder
	for i, f := range id {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.Name + " " + strings.ReplaceAll(f.Value, "\n", `\n`))
	}
	return b.String()
}

// ParseIdentity reads an identity String wrote; ok is false for the
// identities of earlier versions (one line of words).
func ParseIdentity(s string) (id Identity, ok bool) {
	if !strings.HasPrefix(s, "--app ") {
		return nil, false
	}
	for line := range strings.SplitSeq(s, "\n") {
		name, value, found := strings.Cut(line, " ")
		if !found {
			return nil, false
		}
		id = append(id, Field{Name: name, Value: value})
	}
	return id, true
}

// Mismatch is a field whose value differs between a checkpoint and the
// job that would resume from it.
type Mismatch struct {
	Field, Checkpoint, Now string
	Overridable            bool
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: checkpoint %s, now %s", m.Field, m.Checkpoint, m.Now)
}

// Diff returns the fields that saved (a checkpoint's identity) and id
// both name with different values, in id's order.
func (id Identity) Diff(saved Identity) []Mismatch {
	old := make(map[string]string, len(saved))
	for _, f := range saved {
		old[f.Name] = f.Value
	}
	var out []Mismatch
	for _, f := range id {
		if v, ok := old[f.Name]; ok && v != f.Value {
			out = append(out, Mismatch{Field: f.Name, Checkpoint: v, Now: f.Value, Overridable: f.Overridable()})
		}
	}
	return out
}

// CompareIdentity checks that the checkpoint whose MANIFEST is manifest,
// of the job identified by saved, may be resumed by the job identified by
// id. A field that differs is refused, unless override is set and every
// such field is Overridable: the differences are then returned as a
// warning. A checkpoint of an earlier version, whose identity cannot be
// read field by field, is refused unless override is set. Errors name the
// MANIFEST, each field and both values.
func CompareIdentity(manifest, saved string, id Identity, override bool) (warning string, err error) {
	old, ok := ParseIdentity(saved)
	if !ok {
		if override {
			return fmt.Sprintf("%s identifies its job in an earlier format (%q): resumed without comparing the settings", manifest, saved), nil
		}
		return "", fmt.Errorf("%s is a checkpoint of another job, or of an earlier version whose settings cannot be compared: %q (--resume-override resumes from it anyway)", manifest, saved)
	}
	diff := id.Diff(old)
	if len(diff) == 0 {
		return "", nil
	}
	words := make([]string, len(diff))
	hard := false
	for i, m := range diff {
		words[i] = m.String()
		hard = hard || !m.Overridable
	}
	list := strings.Join(words, "; ")
	switch {
	case hard:
		return "", fmt.Errorf("%s is a checkpoint of another job: %s", manifest, list)
	case !override:
		return "", fmt.Errorf("%s is a checkpoint of another job: %s (--resume-override resumes from it with the new values)", manifest, list)
	}
	return fmt.Sprintf("%s: resuming with changed settings: %s", manifest, list), nil
}
