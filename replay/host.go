package replay

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// burn keeps the calling goroutine's CPU busy for d: real host work of the
// observed length (integer arithmetic, checking the clock every few µs).
func burn(d time.Duration) {
	if d <= 0 {
		return
	}
	burnUntil(time.Now().Add(d))
}

// burnUntil keeps the CPU busy until the clock reaches end.
func burnUntil(end time.Time) {
	x := uint64(88172645463325252)
	for time.Now().Before(end) {
		for range 256 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	sink.Store(x) // keeps the work from being optimised away
}

var sink atomic.Uint64

// moveChunk is the largest single memmove of fill: Go's runtime copies 1
// MiB or more with non-temporal stores, which bypass the cache, where
// PyTorch's elementwise CPU kernels write through it.
const moveChunk = 256 << 10

// fill writes every byte of b: on a fresh mapping this also faults its
// pages in, as writing a new tensor does.
func fill(b []byte, seed byte) {
	if len(b) == 0 {
		return
	}
	for i := 0; i < len(b) && i < 4096; i++ {
		b[i] = seed + byte(i)
	}
	n := min(4096, len(b))
	for ; n < len(b) && n < moveChunk; n *= 2 {
		copy(b[n:], b[:n])
	}
	for off := n; off < len(b); off += n {
		copy(b[off:], b[:n])
	}
}

// build does the memory traffic of making one batch buffer the way a
// PyTorch data pipeline does, with elementwise loops as its CPU kernels
// run: every byte of dst written (the samples, or a new tensor filled; on
// a fresh mapping with its page faults), then one pass that reads every
// word and writes it back changed (collating, or an elementwise op over
// the batch). Every byte ends as seed+5 for seeds below 251 (above, a
// word's bytes carry into each other).
//
// The loops store 32 bytes at a time where the machine has AVX2, as
// PyTorch's vectorised CPU kernels do, so that a batch costs as long to
// build here, in fresh pages or warm ones, as it does in PyTorch.
func build(dst []byte, seed byte) {
	head, w, tail := words(dst)
	for i := range head {
		head[i] = seed
	}
	fillWords(w, uint64(seed)*0x0101010101010101)
	for i := range tail {
		tail[i] = seed
	}
	for i := range head {
		head[i] += 5
	}
	addWords(w, 0x0505050505050505)
	for i := range tail {
		tail[i] += 5
	}
}

// words splits b into the bytes before its first 8-byte boundary, the
// 8-byte words from there, and the bytes after the last whole word.
func words(b []byte) (head []byte, w []uint64, tail []byte) {
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 7)
	if off >= len(b) || (len(b)-off)/8 == 0 {
		return b, nil, nil
	}
	n := (len(b) - off) / 8
	return b[:off], unsafe.Slice((*uint64)(unsafe.Pointer(&b[off])), n), b[off+8*n:]
}

// vecChunk is how many words one call of a vector loop writes: 256 KiB,
// so that a long build returns to Go, where the scheduler can preempt it
// (it cannot stop an assembly function), every 0.2 ms or less (a 64 MiB
// fill into fresh pages takes 22 to 42 ms: about 0.09 to 0.16 ms a chunk).
const vecChunk = 32 << 10

// vecPart is how many leading words of w the vector loops take: whole
// groups of 16 words, none where the machine has no vector loops.
func vecPart(w []uint64) int {
	if !vecWords {
		return 0
	}
	return len(w) &^ 15
}

// fillWords stores v into every word of w: 32-byte vector stores where the
// machine has them (vecWords), four word stores a loop otherwise and for
// the last words.
func fillWords(w []uint64, v uint64) {
	n := vecPart(w)
	for i := 0; i < n; i += vecChunk {
		fillVec(&w[i], min(vecChunk, n-i), v)
	}
	i := n
	for ; i+4 <= len(w); i += 4 {
		s := w[i : i+4 : i+4]
		s[0], s[1], s[2], s[3] = v, v, v, v
	}
	for ; i < len(w); i++ {
		w[i] = v
	}
}

// addWords adds d to every word of w, as fillWords writes them.
func addWords(w []uint64, d uint64) {
	n := vecPart(w)
	for i := 0; i < n; i += vecChunk {
		addVec(&w[i], min(vecChunk, n-i), d)
	}
	i := n
	for ; i+4 <= len(w); i += 4 {
		s := w[i : i+4 : i+4]
		s[0] += d
		s[1] += d
		s[2] += d
		s[3] += d
	}
	for ; i < len(w); i++ {
		w[i] += d
	}
}

// parallelCopy copies src into dst with up to n goroutines, as PyTorch's
// CPU copy_ splits a large tensor over its intra-op threads (pin_memory()
// on the main thread does so; the DataLoader's pin thread runs with one
// thread).
func parallelCopy(dst, src []byte, n int) {
	const minChunk = 4 << 20
	n = min(n, len(src)/minChunk)
	if n <= 1 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	chunk := (len(src) + n - 1) / n
	for lo := 0; lo < len(src); lo += chunk {
		hi := min(lo+chunk, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// copyThreads is how many threads a main-thread pin_memory() copy uses:
// PyTorch's intra-op pool, one thread per core up to 8 here (a memory copy
// gains little beyond).
func copyThreads() int { return min(runtime.NumCPU(), 8) }

// mapping is a real mapping released with a real munmap: anonymous and
// private, as glibc makes for a large allocation, or a view of shared
// memory (a memfd mapped MAP_SHARED), as a batch that a DataLoader worker
// process hands over arrives in.
type mapping struct{ b []byte }

func newMapping(n int64) (*mapping, error) {
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", n, err)
	}
	return &mapping{b: b}, nil
}

// shm is a shared-memory segment (a memfd) of n bytes, as a DataLoader
// worker allocates for each batch it sends.
type shm struct {
	fd int
	n  int64
}

func newShm(n int64) (*shm, error) {
	fd, err := unix.MemfdCreate("traceaudit-batch", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, n); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ftruncate %d bytes: %w", n, err)
	}
	return &shm{fd: fd, n: n}, nil
}

// writeShm builds one batch into s through a view of its own, which it
// releases: a DataLoader worker's write of a batch into shared memory.
func writeShm(s *shm, seed byte) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	build(v.b, seed)
	if err := v.unmap(); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

// view maps the segment MAP_SHARED: a fresh view whose pages fault in when
// first touched, as in the process that receives a worker's batch.
func (s *shm) view() (*mapping, error) {
	b, err := unix.Mmap(s.fd, 0, int(s.n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes of shared memory: %w", s.n, err)
	}
	return &mapping{b: b}, nil
}

// close closes the segment's descriptor; its memory lives on while a view
// maps it, and is freed with the last munmap.
func (s *shm) close() {
	if s != nil && s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

func (m *mapping) unmap() error {
	if m == nil || m.b == nil {
		return nil
	}
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}
