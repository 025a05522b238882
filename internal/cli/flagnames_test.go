package cli

import "testing"

// TestFlagNamesJobFile checks that the fields of a job file keep the
// names the file gives them: an error after "--job-file F: " is the
// file's (colo node refuses flags that describe a job beside it), while
// a field before it is still said as its flag.
func TestFlagNamesJobFile(t *testing.T) {
	f := New("node", "colo node", "")
	f.Int("max-passes", 200, "")
	f.Int("machines", 4, "")
	for _, c := range []struct{ in, want string }{
		{"config.max_passes 0: want at least 1", "--max-passes 0: want at least 1"},
		{"--job-file j.json: job of kind train: config.max_passes: a JSON string, want an integer (int)",
			"--job-file j.json: job of kind train: config.max_passes: a JSON string, want an integer (int)"},
		{"Machines 0, at least 1; --job-file j.json: config.max_passes 0",
			"--machines 0, at least 1; --job-file j.json: config.max_passes 0"},
	} {
		if got := f.FlagNames(c.in, nil); got != c.want {
			t.Errorf("FlagNames(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
