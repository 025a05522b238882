package server

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the machines colo
// runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole 2 MiB pages inside vals
// with transparent huge pages (madvise MADV_HUGEPAGE; honoured when
// /sys/kernel/mm/transparent_hugepage/enabled is always or madvise). A
// sparse push adds into keys scattered over the store, one page each on 4
// KiB pages, so most of its additions miss the TLB: on 2 MiB pages a
// store of 2^24 values is 32 pages. The advice changes no value; an
// error (an old kernel, a refused range) leaves the pages as they are.
func adviseHuge(vals []float32) {
	if len(vals)*4 < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(vals)))
	end := p + uintptr(len(vals))*4
	a, e := (p+hugePage-1)&^(hugePage-1), end&^(hugePage-1)
	if e <= a {
		return
	}
	first := (a - p) / 4 // a value's address is 4-aligned, and so are a and e
	syscall.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(&vals[first])), e-a), syscall.MADV_HUGEPAGE)
}
