package proto

import (
	"slices"
	"testing"
)

// TestJobDigest checks that the digest of a job ignores its insignificant
// white space and nothing else: the kind and every value count.
func TestJobDigest(t *testing.T) {
	d := JobDigest("train", []byte(`{"a": 1, "b": "x y"}`))
	for _, c := range []struct {
		kind, job string
		same      bool
	}{
		{"train", "{\"a\":1,\n\t\"b\":\"x y\"}", true},
		{"train", `{"a": 1, "b": "x  y"}`, false},
		{"train", `{"a": 2, "b": "x y"}`, false},
		{"parsa", `{"a": 1, "b": "x y"}`, false},
	} {
		if got := JobDigest(c.kind, []byte(c.job)); (got == d) != c.same {
			t.Errorf("JobDigest(%s, %s) = %.12s, want the same as %.12s: %v", c.kind, c.job, got, d, c.same)
		}
	}
}

// TestJobFields checks the digests of a job's fields: one for each value
// that is no object with fields (nested objects by their paths, arrays
// whole, empty objects), the same for the same value spelled otherwise,
// and JobFieldsDiffer naming what differs and what only one side has.
func TestJobFields(t *testing.T) {
	a := JobFields([]byte(`{"a": 1, "b": {"c": "x", "d": {"e": [1, 2]}}, "f": {}}`))
	var paths []string
	for p := range a {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if want := []string{"a", "b.c", "b.d.e", "f"}; !slices.Equal(paths, want) {
		t.Fatalf("paths %q, want %q", paths, want)
	}
	for _, c := range []struct {
		job    string
		differ []string
	}{
		{"{\"f\":{},\n\"b\": {\"d\": {\"e\": [1,2]}, \"c\": \"x\"}, \"a\": 1}", nil},
		{`{"a": 2, "b": {"c": "x", "d": {"e": [2, 1]}}, "f": {}}`, []string{"a", "b.d.e"}},
		{`{"a": 1, "b": {"c": "x", "d": {"e": [1, 2]}}, "g": 3}`, []string{"f", "g"}},
		{`{"a": 1, "b": {"c": "x", "d": {"e": [1, 2], "h": null}}, "f": {}}`, []string{"b.d.h"}},
	} {
		if got := JobFieldsDiffer(JobFields([]byte(c.job)), a); !slices.Equal(got, c.differ) {
			t.Errorf("%s: %q differ, want %q", c.job, got, c.differ)
		}
	}
	if f := JobFields([]byte(`[1]`)); f != nil {
		t.Errorf("an array: fields %v, want none", f)
	}
}
