package server

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"colo/internal/workload"
	"colo/ps/route"
	"colo/ps/update"
)

// hugeKB returns the kilobytes of transparent huge pages of the
// mappings of this process that overlap [p, p+n), from /proc/self/smaps.
func hugeKB(t *testing.T, p, n uintptr) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	kb, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		var a, e uintptr
		if fields := strings.Fields(l); len(fields) > 0 && strings.Contains(fields[0], "-") {
			if _, err := fmt.Sscanf(fields[0], "%x-%x", &a, &e); err == nil {
				in = a < p+n && e > p
				continue
			}
		}
		var v int
		if in && strings.HasPrefix(l, "AnonHugePages:") {
			fmt.Sscanf(strings.TrimPrefix(l, "AnonHugePages:"), "%d", &v)
			kb += v
		}
	}
	return kb
}

// TestStoreOnHugePagesAfterReuse checks that a store's values are on huge
// pages when Go gives it memory that an earlier array touched (and Go
// clears before reuse, 4 KiB page by page): each of several stores in a
// row, each after an array of another size was written and dropped, as
// colo bench kv's clusters follow one another in one process. Without
// the collapse, the first such store of this test had none of its 32 MiB
// on huge pages, the later ones 12–30 MiB.
func TestStoreOnHugePagesAfterReuse(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages are off")
	}
	if !collapses() {
		t.Skip("the kernel has no MADV_COLLAPSE (Linux 6.1)")
	}
	tb, err := route.Uniform(2, workload.SparseSpace)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		junk := make([]float32, 3<<20+i*77777)
		for j := 0; j < len(junk); j += 1024 {
			junk[j]++
		}
		junk = nil
		runtime.GC()
		s := NewStore(tb.Index(i%2), 1, update.Sum{})
		if s.huge != nil {
			t.Skipf("store %d: %v (no huge pages to be had)", i, s.huge)
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s.vals)))
		n := uintptr(len(s.vals)) * 4
		if p%hugePage != 0 {
			t.Fatalf("store %d: values at %#x, not on a 2 MiB boundary", i, p)
		}
		// The whole 2 MiB pages of the values: every value but those
		// of a last page that the values do not fill.
		want := int(n&^(hugePage-1)) / 1024
		if got := hugeKB(t, p, n); got < want {
			t.Errorf("store %d: %d KiB of its values on huge pages, want %d", i, got, want)
		}
		runtime.KeepAlive(s)
	}
}

// TestHugeFloats checks hugeFloats: n zeroed values, on a 2 MiB boundary
// when they span two huge pages or more, and an append that keeps the
// values before it.
func TestHugeFloats(t *testing.T) {
	for _, n := range []int{0, 1, 1000, hugePage/4 - 1, hugePage / 2, hugePage/2 + 3, 5 << 20} {
		a := hugeFloats(n)
		if len(a) != n {
			t.Fatalf("n %d: length %d", n, len(a))
		}
		for i, v := range a {
			if v != 0 {
				t.Fatalf("n %d: value %d is %v", n, i, v)
			}
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(a))); n*4 >= 2*hugePage && p%hugePage != 0 {
			t.Fatalf("n %d: at %#x, not on a 2 MiB boundary", n, p)
		}
		for i := range a {
			a[i] = float32(i)
		}
		a = append(a, make([]float32, 3)...)
		for i, v := range a {
			want := float32(0) // appended
			if i < n {
				want = float32(i)
			}
			if v != want {
				t.Fatalf("n %d: value %d is %v after an append, want %v", n, i, v, want)
			}
		}
	}
}
