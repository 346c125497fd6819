package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const huge = 2 << 20

// advise marks the 2 MB-aligned pages inside [p, p+size) MADV_HUGEPAGE.
// Errors (huge pages disabled, an old kernel) leave the memory as it is.
func advise(p unsafe.Pointer, size uintptr) {
	lo := (uintptr(p) + huge - 1) &^ (huge - 1)
	hi := (uintptr(p) + size) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, lo-uintptr(p))), hi-lo), unix.MADV_HUGEPAGE)
}

// release gives the pages of [p, p+size) (whole 2 MB pages) back to the
// kernel: they read as zeros afterwards. Errors leave them as they are.
func release(p unsafe.Pointer, size uintptr) {
	_ = unix.Madvise(unsafe.Slice((*byte)(p), size), unix.MADV_DONTNEED)
}
