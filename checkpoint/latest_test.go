package checkpoint

import (
	"path/filepath"
	"testing"
)

// TestLatestMissingDir checks that a directory that does not exist is
// told apart from one that holds no checkpoint: a mistyped --resume
// directory, not checkpoints lost.
func TestLatestMissingDir(t *testing.T) {
	empty := t.TempDir()
	missing := filepath.Join(empty, "nope")
	for _, c := range []struct{ dir, want string }{
		{empty, "checkpoint: no checkpoint in " + empty},
		{missing, "checkpoint: no checkpoint in " + missing + ": there is no such directory"},
	} {
		if _, _, err := Latest(c.dir); err == nil || err.Error() != c.want {
			t.Errorf("Latest(%s) = %v, want %q", c.dir, err, c.want)
		}
	}
}
