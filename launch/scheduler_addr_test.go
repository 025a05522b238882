package launch

import (
	"strings"
	"testing"
)

// TestResolveSchedulerAddr checks that a scheduler address of the wrong
// form is refused naming --scheduler and what it wanted, for every role
// (a node derived its --host from it and blamed --host), and that the
// forms colo uses pass.
func TestResolveSchedulerAddr(t *testing.T) {
	for _, tc := range []struct {
		role, addr, want string
	}{
		{"machine", "127.0.0.1", `--scheduler "127.0.0.1": missing port in address: want HOST:PORT`},
		{"scheduler", "127.0.0.1", `--scheduler "127.0.0.1": missing port in address: want HOST:PORT`},
		{"worker", "127.0.0.1:70700", `--scheduler "127.0.0.1:70700": port "70700" is not a number from 0 to 65535`},
		{"server", "node01:http", `--scheduler "node01:http": port "http" is not a number`},
		{"machine", "127.0.0.1:", `--scheduler "127.0.0.1:": port "" is not a number`},
		{"machine", "[::1:7070", `--scheduler "[::1:7070": missing ']' in address`},
		{"machine", "127.0.0.1:7070", ""},
		{"scheduler", ":7070", ""},
		{"scheduler", "127.0.0.1:0", ""},
	} {
		n := newNodeFlagSet(t, "--role", tc.role, "--scheduler", tc.addr, "--num-servers", "1", "--num-workers", "1")
		err := n.resolve(nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s --scheduler %s: %v", tc.role, tc.addr, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s --scheduler %s: %v, want an error starting %q", tc.role, tc.addr, err, tc.want)
		}
	}
}
