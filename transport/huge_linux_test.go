package transport

import (
	"slices"
	"testing"
	"unsafe"
)

// TestPoolHugeArrays: a pooled array of two huge pages or more starts on
// a 2 MiB boundary, has its class's capacity and holds zeros, whatever
// its element size; a smaller one is an ordinary array of its class.
func TestPoolHugeArrays(t *testing.T) {
	var p Pool
	for _, n := range []int{1 << 20, 1<<20 + 1, 3 << 20, 5<<20 + 7} {
		v := get[float32](&p.f32, n, 4)
		if len(v) != n || cap(v) != classSize(classOf(n)) {
			t.Fatalf("%d float32: got %d/%d, want %d/%d", n, len(v), cap(v), n, classSize(classOf(n)))
		}
		if a := uintptr(unsafe.Pointer(unsafe.SliceData(v))); a%hugePage != 0 {
			t.Fatalf("%d float32 at %#x, want a 2 MiB boundary", n, a)
		}
		if i := slices.IndexFunc(v[:cap(v)], func(x float32) bool { return x != 0 }); i >= 0 {
			t.Fatalf("%d float32: value %d is %v, want zeros", n, i, v[i])
		}
		v[:cap(v)][cap(v)-1] = 1 // the whole capacity is the array's
		put(&p.f32, v, 4)
	}
	b := get[byte](&p.bytes, 4<<20, 1)
	if a := uintptr(unsafe.Pointer(unsafe.SliceData(b))); len(b) != 4<<20 || a%hugePage != 0 {
		t.Fatalf("4 MiB of bytes: %d at %#x, want a 2 MiB boundary", len(b), a)
	}
	small := get[float32](&p.f32, 1<<19, 4) // 2 MiB: one huge page, not aligned on purpose
	if len(small) != 1<<19 || cap(small) != classSize(classOf(1<<19)) {
		t.Fatalf("2 MiB of float32: got %d/%d", len(small), cap(small))
	}
}
