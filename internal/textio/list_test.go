package textio

import (
	"slices"
	"testing"
)

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"": nil, " , ,": nil, "a": {"a"}, "a, b,,c ": {"a", "b", "c"},
	} {
		if got := SplitList(in); !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseInts(t *testing.T) {
	if got, err := ParseInts("64, 32,16"); err != nil || !slices.Equal(got, []int{64, 32, 16}) {
		t.Errorf("ParseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "8,-1", "x", "1.5"} {
		if _, err := ParseInts(bad); err == nil || err.Error() != `"`+bad+`": want positive integers separated by commas` {
			t.Errorf("ParseInts(%q) error %v", bad, err)
		}
	}
}
