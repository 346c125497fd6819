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
const MinBytes = 2 << 20

// Make returns make([]T, n, capacity), asking for huge pages when its
// memory spans MinBytes or more. T must hold no pointers (the memory is
// only advised, never managed outside Go's heap, but the advice is meant
// for bulk data). A large slice starts on a 2 MB boundary and its capacity
// reaches the next one (it may exceed capacity by up to 2 MB), so that
// all of it lies in whole huge pages: a part outside them would be
// faulted in 4 kB at a time. The allocation is up to 4 MB larger than the
// slice; the part outside it is never touched.
func Make[T any](n, capacity int) []T {
	capacity = max(n, capacity)
	var zero T
	size := unsafe.Sizeof(zero)
	if size == 0 || size > huge || uintptr(capacity)*size < MinBytes {
		return make([]T, n, capacity)
	}
	all := make([]T, 0, capacity+int(2*huge/size)+2)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(all)))
	start := (base + huge - 1) &^ (huge - 1)
	i := int((start - base + size - 1) / size) // the first element in the first whole page
	end := (base + uintptr(i+capacity)*size + huge - 1) &^ (huge - 1)
	j := min(int((end-base)/size), cap(all))
	advise(unsafe.Add(unsafe.Pointer(unsafe.SliceData(all)), start-base), end-start)
	return all[i : i+n : j]
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

// Releaser returns the memory of a large slice to the system as the slice
// is consumed from its start, for data that is read once, in order, and
// copied elsewhere (the chunks of a reader being merged into a timeline):
// the pages released are the first the copy's new pages reuse, so the two
// are not both resident at their full size.
type Releaser struct {
	p    unsafe.Pointer // the slice's first element (keeps it alive)
	size uintptr        // bytes per element
	n    int            // elements in the slice
	done uintptr        // bytes from p already released
}

// NewReleaser returns a Releaser for s.
func NewReleaser[T any](s []T) *Releaser {
	var zero T
	return &Releaser{p: unsafe.Pointer(unsafe.SliceData(s)), size: unsafe.Sizeof(zero), n: len(s)}
}

// Release declares that elements [0, n) of the slice will never be read
// again and releases the whole 2 MB pages among them not yet released.
// Reading them afterwards gives zeros or the old contents, depending on
// the system. Calls with a growing n cost little: a page is released
// once.
func (r *Releaser) Release(n int) {
	if r == nil || r.p == nil {
		return
	}
	n = min(n, r.n)
	base := uintptr(r.p)
	lo := max((base+huge-1)&^(huge-1), base+r.done)
	hi := (base + uintptr(n)*r.size) &^ (huge - 1)
	if hi <= lo {
		return
	}
	release(unsafe.Add(r.p, lo-base), hi-lo)
	r.done = hi - base
}
