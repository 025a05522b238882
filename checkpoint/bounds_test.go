package checkpoint

import (
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"colo/kv"
)

// TestSnapshotClaimsMoreThanItHolds: a snapshot whose header declares
// more keys, lengths or values than the file holds is refused before any
// of them is allocated.
func TestSnapshotClaimsMoreThanItHolds(t *testing.T) {
	good := EncodeSnapshot(Snapshot{Server: 1, Width: 1, Batch: kv.Batch{Keys: []uint64{3, 9}, Vals: []float32{1, 2}}})
	if _, err := DecodeSnapshot(good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		n, l, v uint64
	}{
		{"2^40 keys", 1 << 40, 0, 1 << 40},
		{"2^61 values", 2, 0, 1 << 61},
		{"a key more", 3, 0, 2},
	} {
		b := append([]byte(nil), good...)
		le := binary.LittleEndian
		le.PutUint64(b[20:], c.n)
		le.PutUint64(b[28:], c.l)
		le.PutUint64(b[36:], c.v)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeSnapshot(b)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "the file is truncated or altered") {
			t.Errorf("%s: %v", c.name, err)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 64<<10 {
			t.Errorf("%s: refusing allocated %d bytes", c.name, a)
		}
	}
}
