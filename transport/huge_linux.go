package transport

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the machines colo
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// makePooled returns an array of length n and capacity c of elements of
// elem bytes for the Pool. One of at least two huge pages starts on a
// 2 MiB boundary and is advised to transparent huge pages (madvise
// MADV_HUGEPAGE, then MADV_COLLAPSE for the pages Go touched already),
// as the server's store is: the kernel's copy of a 4 MiB dense push into
// it, and the server's sum out of it, then walk two pages instead of a
// thousand. It takes up to 2 MiB more than c elements; the advice is
// best effort (on a kernel without THP or MADV_COLLAPSE, or with THP
// off, the pages stay as they are).
func makePooled[T any](n, c, elem int) []T {
	if c*elem < 2*hugePage {
		return make([]T, n, c)
	}
	a := make([]T, c+hugePage/elem)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	skip := int(((p+hugePage-1)&^(hugePage-1) - p) / uintptr(elem))
	a = a[skip : skip+n : skip+c]
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), (c*elem)&^(hugePage-1))
	if unix.Madvise(b, unix.MADV_HUGEPAGE) == nil {
		unix.Madvise(b, unix.MADV_COLLAPSE)
	}
	return a
}
