package main

import (
	"strings"
	"testing"
)

// TestProcessBound checks that every command that starts processes on
// this host refuses more than launch.MaxProcesses before it starts one
// or reads its input, naming the flag.
func TestProcessBound(t *testing.T) {
	missing := "/nonexistent/x.svm"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"launch machines", []string{"launch", "--machines", "100000"}, "launch: --machines 100000: 100000 processes on this host, at most 4096 (launch.MaxProcesses)"},
		{"launch apart", []string{"launch", "--servers", "3000", "--workers", "3000"}, "launch: --servers 3000 and --workers 3000: 6000 processes on this host, at most 4096"},
		{"run", []string{"run", "--machines", "100000", "--", "python3", "train.py"}, "--machines 100000: 100000 processes on this host, at most 4096"},
		{"run apart", []string{"run", "--machines", "4000", "--servers", "100", "--", "python3", "train.py"}, "--machines 4000 and --servers 100: 4100 processes"},
		{"train processes", []string{"train", missing, "--processes", "--machines", "100000"}, "--machines 100000: 100000 processes on this host, at most 4096"},
		{"train processes apart", []string{"train", missing, "--app", "mlp", "--labels", missing, "--processes", "--machines", "4000", "--servers", "200"}, "--machines 4000 and --servers 200: 4200 processes"},
		{"partition processes", []string{"partition", missing, "-k", "2", "--processes", "100000", "-o", t.TempDir()}, "--processes 100000: 100000 processes on this host, at most 4096"},
		{"decentralised processes", []string{"train", "--mode", "decentralised", missing, "--labels", missing, "--processes", "--machines", "100000"}, "--machines 100000: 100000 processes on this host, at most 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := colo(t, tc.args...)
			if code != 2 || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d (want 2), output %q, want it to contain %q", code, out+errOut, tc.want)
			}
		})
	}
}
