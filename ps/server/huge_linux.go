package server

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the machines colo
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// populateMax is the largest array adviseHuge faults in whole (its
// memory is then the process's, used or not): a larger one (a key space
// far larger than the keys used) stays where its pages are first
// touched, and an EINVAL of MADV_COLLAPSE is not an error then.
const populateMax = 256 << 20

// collapses reports whether the running kernel knows MADV_COLLAPSE
// (Linux 6.1 and later): on an older one, whose EINVAL says so, nothing
// is faulted in for a collapse that cannot come.
var collapses = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || major == 6 && minor >= 1
})

// hugeFloats returns n zeroed float32 whose array starts on a 2 MiB
// boundary when it spans at least two huge pages (as a C program's
// posix_memalign(2 MiB) does), so that adviseHuge covers every value: Go
// aligns a large array to its 8 KiB pages only, and the values before
// the first and after the last whole huge page stayed on 4 KiB pages
// (up to 4 MiB of a store of 2^24, a TLB miss on each of a sparse
// push's keys there). The array is up to 2 MiB larger than n values; the
// values after n are the slice's capacity, which an append uses first.
func hugeFloats(n int) []float32 {
	if n*4 < 2*hugePage {
		return make([]float32, n)
	}
	a := make([]float32, n+hugePage/4)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	skip := int(((p+hugePage-1)&^(hugePage-1) - p) / 4) // p is 4-aligned
	return a[skip : skip+n]
}

// adviseHuge asks the kernel to back the whole 2 MiB pages inside vals
// with transparent huge pages (madvise MADV_HUGEPAGE; honoured when
// /sys/kernel/mm/transparent_hugepage/enabled is always or madvise). A
// sparse push adds into keys scattered over the store, one page each on 4
// KiB pages, so most of its additions miss the TLB: on 2 MiB pages a
// store of 2^24 values is 32 pages.
//
// The advice alone covers only the pages first touched after it, and Go
// may hand over an array whose pages it has touched already: memory
// that it took back from an earlier array and clears before reuse
// (page by page, 4 KiB pages when that range was never advised). Such
// an array is collapsed into huge pages at once (MADV_COLLAPSE, Linux
// 6.1 and later), its pages faulted in first when some are not there
// (up to populateMax): one copy of the array now, instead of a TLB miss
// on nearly every key of every push. The advice changes no value; an
// error (an old kernel, a refused range, no huge page free) leaves the
// pages as they are, and is returned for the tests: a store works on
// any pages.
func adviseHuge(vals []float32) error {
	if len(vals)*4 < 2*hugePage {
		return nil
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(vals)))
	end := p + uintptr(len(vals))*4
	a, e := (p+hugePage-1)&^(hugePage-1), end&^(hugePage-1)
	if e <= a {
		return nil
	}
	first := (a - p) / 4 // a value's address is 4-aligned, and so are a and e
	b := unsafe.Slice((*byte)(unsafe.Pointer(&vals[first])), e-a)
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		return fmt.Errorf("madvise MADV_HUGEPAGE: %w", err)
	}
	err := unix.Madvise(b, unix.MADV_COLLAPSE)
	if err == unix.EINVAL && len(b) <= populateMax && collapses() {
		// Pages not all there yet (or a kernel without MADV_COLLAPSE):
		// fault them all in, values unchanged (MADV_POPULATE_WRITE,
		// Linux 5.14), and collapse what did not come huge.
		if err = unix.Madvise(b, unix.MADV_POPULATE_WRITE); err == nil {
			err = unix.Madvise(b, unix.MADV_COLLAPSE)
		}
	}
	if err != nil && (err != unix.EINVAL || len(b) <= populateMax && collapses()) {
		return fmt.Errorf("madvise: %w", err)
	}
	return nil
}
