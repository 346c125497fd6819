// Package hugepage allocates large slices whose memory the kernel is asked
// to back with huge pages (2 MB on x86-64) where it can.
//
// Why: on the machines traceaudit is measured on (virtual machines, the
// kernel's transparent huge pages in "madvise" mode, which Go's heap does
// not use), the first write to each 4 kB page of fresh memory costs tens of
// microseconds, about 10 to 20 ms per MB: for a large trace, more than
// parsing it. A huge page takes one fault for 2 MB (measured: 128 MB
// written in 1.5 to 3.2 s with 4 kB pages, 0.8 to 1.4 s with huge pages
// when the memory is new to the machine, 0.02 s when it was used before).
//
// The advice is a hint: where huge pages are off (or on other systems) the
// memory is ordinary. Only the slices' contents are affected, never their
// meaning.
package hugepage

import "unsafe"

// MinBytes is the size from which Make asks for huge pages: smaller slices
// hold no aligned 2 MB page, or too few to matter.
const MinBytes = 4 << 20

// Make returns make([]T, n, capacity), asking for huge pages when its
// memory spans MinBytes or more. T must hold no pointers (the memory is
// only advised, never managed outside Go's heap, but the advice is meant
// for bulk data).
func Make[T any](n, capacity int) []T {
	s := make([]T, n, max(n, capacity))
	var zero T
	if size := uintptr(cap(s)) * unsafe.Sizeof(zero); size >= MinBytes {
		advise(unsafe.Pointer(unsafe.SliceData(s)), size)
	}
	return s
}

// Bytes returns a zeroed byte slice of length n. From 2 MB on, it starts
// on a 2 MB boundary, so that a buffer of 2 MB is exactly one huge page
// (the allocation is up to 2 MB larger; the part outside the slice is
// never touched).
func Bytes(n int) []byte {
	if n < 2<<20 {
		return make([]byte, n)
	}
	s := make([]byte, n+2<<20)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	off := int(((p + 2<<20 - 1) &^ (2<<20 - 1)) - p)
	s = s[off : off+n : off+n]
	advise(unsafe.Pointer(unsafe.SliceData(s)), uintptr(n+2<<20-1)&^(2<<20-1))
	return s
}
