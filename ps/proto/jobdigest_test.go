package proto

import "testing"

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
