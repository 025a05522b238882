package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestFollow: the lines written before and while Follow runs, and a last
// one without its newline, reach w once each, prefixed, once stop is
// closed; a file that never appears writes nothing.
func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker-0.log")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { Follow(path, "[worker 0] ", &out, &mu, stop); close(done) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("three\nfour")
	f.Close()
	close(stop)
	<-done
	if got, want := out.String(), "[worker 0] one\n[worker 0] two\n[worker 0] three\n[worker 0] four\n"; got != want {
		t.Errorf("followed %q, want %q", got, want)
	}
	var none bytes.Buffer
	stop = make(chan struct{})
	close(stop)
	Follow(filepath.Join(t.TempDir(), "absent.log"), "x ", &none, &mu, stop)
	if none.Len() != 0 {
		t.Errorf("an absent file wrote %q", none.String())
	}
}
