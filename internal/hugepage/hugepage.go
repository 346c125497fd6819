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

import (
	"reflect"
	"unsafe"
)

// MinBytes is the size from which Make asks for huge pages: smaller slices
// hold no aligned 2 MB page, or too few to matter.
const MinBytes = 2 << 20

// Make returns make([]T, n, capacity), asking for huge pages when its
// memory spans MinBytes or more. T must hold no pointers (the memory is
// only advised, never managed outside Go's heap, but the advice is meant
// for bulk data; a T with pointers gets an ordinary slice). A large slice
// starts on a 2 MB boundary and its capacity reaches just past the next
// one (it may exceed capacity by up to 2 MB), so that all of it lies in
// whole huge pages (a part outside them would be faulted in 4 kB at a
// time) and a Releaser can give back every page of it. The allocation is
// up to 2 MB larger than the slice; the part outside it is never touched.
func Make[T any](n, capacity int) []T {
	capacity = max(n, capacity)
	var zero T
	size := unsafe.Sizeof(zero)
	if size == 0 || size > huge || uintptr(capacity)*size < MinBytes || hasPointers(reflect.TypeFor[T]()) {
		return make([]T, n, capacity)
	}
	span := (uintptr(capacity)*size + huge - 1) &^ (huge - 1) // whole pages
	c := (span + size - 1) / size                             // the last page is inside the capacity
	raw := make([]byte, c*size+huge)
	p := unsafe.Pointer(unsafe.SliceData(raw))
	start := unsafe.Add(p, ((uintptr(p)+huge-1)&^(huge-1))-uintptr(p))
	advise(start, span)
	return unsafe.Slice((*T)(start), int(c))[:n]
}

// hasPointers reports whether values of t hold pointers (which the
// garbage collector must see, so t's slices cannot be carved from bytes).
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
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
	n    int            // the slice's capacity
	done uintptr        // bytes from p already released
}

// NewReleaser returns a Releaser for s. Only whole 2 MB pages inside s's
// capacity are ever released: all of a slice that Make returned.
func NewReleaser[T any](s []T) *Releaser {
	var zero T
	return &Releaser{p: unsafe.Pointer(unsafe.SliceData(s)), size: unsafe.Sizeof(zero), n: cap(s)}
}

// Release declares that elements [0, n) of the slice (n up to its
// capacity) will never be read or written again and releases the whole
// 2 MB pages among them not yet released.
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

// Free gives back the whole 2 MB pages of s's memory, up to its capacity,
// for a large temporary slice that will never be read or written again
// (no collection runs during an analysis, so its pages would stay
// resident to the end). The slice's memory itself stays allocated until
// the garbage collector frees it.
func Free[T any](s []T) { NewReleaser(s).Release(cap(s)) }
