package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"colo/ps/proto"
	"colo/transport"
)

// Digest is what the processes of a cluster must agree on about their
// job: the proto.JobDigest of the job as decoded, without the fields
// each host may set for itself, and the digest of each of its fields,
// by which the scheduler names the fields of a member's job that are not
// its own. A kind sets it on both sides: on the scheduler
// (sched.Config.JobDigest and JobFields) and on every member it opens
// (Member.JobDigest and JobFields).
type Digest struct {
	// Sum is the job's proto.JobDigest.
	Sum string
	// Fields are the proto.JobFields of the job: a short digest of
	// each of its values, by the path of its field as the job file
	// spells it ("config.rule.lr").
	Fields map[string]string
}

// JobDigest returns the Digest of job, a kind's job as decoded (its
// defaults filled, so that two files that spell one job differently
// agree), leaving out the fields at the paths in local: those that each
// host may set for itself, such as the paths of files that a host may
// mount elsewhere, spill directories and memory budgets. A path names a
// field as the job file spells it, its parts joined by dots
// ("data.load.memory_budget"); the fields of an embedded struct without
// a JSON name are its holder's, as encoding/json has them. A field
// omitted from the JSON (omitempty) is left out anyway. A path that names
// no field of job's type is an error, as is a job that does not marshal
// to a JSON object.
//
// The digest is the same for the same values however they were spelled:
// maps and objects with their keys sorted, numbers by their value (16,
// 16.0 and 1.6e1 in an application's raw options, which keep numbers as
// written, are one number), those raw options compacted and sorted too.
func JobDigest(kind string, job any, local ...string) (Digest, error) {
	for _, p := range local {
		if err := checkPath(reflect.TypeOf(job), p); err != nil {
			return Digest{}, fmt.Errorf("launch: job of kind %s: the host's field %q: %w", kind, p, err)
		}
	}
	b, err := json.Marshal(job)
	if err != nil {
		return Digest{}, fmt.Errorf("launch: job of kind %s: %w", kind, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers as written: no round trip through float64
	var v any
	if err := dec.Decode(&v); err != nil {
		return Digest{}, fmt.Errorf("launch: job of kind %s: %w", kind, err)
	}
	obj, ok := canonNumbers(v).(map[string]any)
	if !ok {
		return Digest{}, fmt.Errorf("launch: job of kind %s: a JSON %T, want an object", kind, v)
	}
	for _, p := range local {
		leaveOut(obj, strings.Split(p, "."))
	}
	canon, err := json.Marshal(obj) // its keys sorted
	if err != nil {
		return Digest{}, fmt.Errorf("launch: job of kind %s: %w", kind, err)
	}
	return Digest{Sum: proto.JobDigest(kind, canon), Fields: proto.JobFields(canon)}, nil
}

// DigestRate returns a job's link rate as JobDigest should take it: its
// value in bytes a second (transport.ParseRate), not as written, so that
// 100mbit, 0.1gbit and 12.5mbps are one job; nil for no limit, so that
// an empty rate, 0 and unlimited are one job too (a field of the rate as
// a *float64 with omitempty leaves it out). A kind digests a copy of its
// job with the rate in the place of the string (an outer field of the
// same JSON name, which encoding/json takes). A rate that does not parse
// is ParseRate's error, for the kind to wrap with the field's name.
func DigestRate(rate string) (*float64, error) {
	if rate == "" {
		return nil, nil
	}
	r, err := transport.ParseRate(rate)
	if err != nil || r == 0 {
		return nil, err
	}
	return &r, nil
}

// canonNumbers returns v, a decoded JSON value, with each of its numbers
// spelled one way for its value (canonNumber).
func canonNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonNumbers(e)
		}
	case json.Number:
		return canonNumber(x)
	}
	return v
}

// canonNumber spells n one way for its value: an integer of 64 bits
// exactly, any other number as its float64, in decimal when that is a
// whole number of 64 bits, shortest otherwise; a number beyond float64
// as written.
func canonNumber(n json.Number) json.Number {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.Number(strconv.FormatInt(i, 10))
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return json.Number(strconv.FormatUint(u, 10))
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return n
	case f == math.Trunc(f) && math.Abs(f) < 1<<63:
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// leaveOut deletes the value at path from obj, if it is there, and the
// objects on the path that it leaves empty.
func leaveOut(obj map[string]any, path []string) {
	if len(path) == 1 {
		delete(obj, path[0])
		return
	}
	next, ok := obj[path[0]].(map[string]any)
	if !ok {
		return
	}
	leaveOut(next, path[1:])
	if len(next) == 0 {
		delete(obj, path[0])
	}
}

// checkPath checks that path names a field of t, as far as t's type
// says: past a map, an interface or raw JSON (an application's
// options) any name may follow.
func checkPath(t reflect.Type, path string) error {
	for _, name := range strings.Split(path, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := jsonField(t, name)
		if !ok {
			return fmt.Errorf("%s has no field %q", t, name)
		}
		t = f.Type
	}
	return nil
}

// jsonField returns the field of struct t that encoding/json names name,
// looking into the embedded structs it flattens.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for _, sf := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		if sf.Anonymous && tag == "" && sf.Type.Kind() == reflect.Struct {
			continue // flattened: its fields are visible on their own
		}
		if tag == name || tag == "" && sf.Name == name {
			return sf, true
		}
	}
	return reflect.StructField{}, false
}
