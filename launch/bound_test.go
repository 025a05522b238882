package launch

import (
	"math"
	"strings"
	"testing"
)

// TestProcessBound checks the bound of a Cluster's members, and that the
// error names the fields, the count and the bound.
func TestProcessBound(t *testing.T) {
	env := Envelope{Kind: "smoke", Job: []byte(`{}`)}
	for _, tc := range []struct {
		name string
		c    Cluster
		want string // "" for none
	}{
		{"one machine", Cluster{Machines: 1}, ""},
		{"machines at the bound", Cluster{Machines: MaxProcesses}, ""},
		{"machines past the bound", Cluster{Machines: 100000}, "launch: Machines 100000: 100000 processes on this host, at most 4096 (launch.MaxProcesses)"},
		{"machines and an evaluator at the bound", Cluster{Machines: MaxProcesses - 1, Evaluators: 1}, ""},
		{"machines and an evaluator past it", Cluster{Machines: MaxProcesses, Evaluators: 1}, "launch: Machines 4096 and Evaluators 1: 4097 processes on this host, at most 4096"},
		{"apart at the bound", Cluster{Servers: 2048, Workers: 2048}, ""},
		{"apart past the bound together", Cluster{Servers: 2048, Workers: 2049}, "launch: Servers 2048 and Workers 2049: 4097 processes on this host"},
		{"servers past the bound", Cluster{Servers: 100000, Workers: 1}, "launch: Servers 100000 and Workers 1: 100001 processes"},
		{"no overflow", Cluster{Servers: math.MaxInt, Workers: math.MaxInt}, "processes on this host, at most 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Envelope = env
			err := tc.c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckProcesses(t *testing.T) {
	for _, tc := range []struct {
		what   string
		counts []int
		want   string
	}{
		{"--machines 8", []int{8}, ""},
		{"--machines 4096", []int{4096}, ""},
		{"--machines 100000", []int{100000}, "--machines 100000: 100000 processes on this host, at most 4096"},
		{"--servers 3000 and --workers 3000", []int{3000, 3000}, "--servers 3000 and --workers 3000: 6000 processes on this host, at most 4096"},
		{"--servers 0 and --workers 5000", []int{0, 5000}, "5000 processes"},
		{"negative counts count as none", []int{-5, 4096}, ""},
	} {
		err := CheckProcesses(tc.what, tc.counts...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckProcesses(%q, %v) = %v, want %q", tc.what, tc.counts, err, tc.want)
		}
	}
}
