package replay

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

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

// moveChunk is the largest single memmove of fill and build. Go's runtime
// copies 1 MiB or more with non-temporal stores, which bypass the cache,
// where PyTorch's elementwise CPU kernels write through it: on the H200
// box of the calibration (a Xeon with 300 MiB of L3), writing a warm 64
// MiB buffer took 7.0 ms in one copy and 3.4 ms in 256 KiB copies, as
// long as torch's fill_ of it (3.4 ms).
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
// PyTorch data pipeline does: every byte of dst written (the samples, or
// a new tensor filled; on a fresh mapping with its page faults), then one
// pass that reads it all and writes it all again (collating, or an
// elementwise op over the batch), in cache-sized moves.
//
// Measured on the calibration's H200 box, 64 MiB in one thread: torch's
// fill_ then add_ took 7.3 ms on a reused tensor and 47.0 ms on a new one;
// this build 8.8 ms into warm memory and about 48 ms into a fresh mapping.
// With torch.set_num_threads(1), as the munmap pair runs, run 10 measured
// 16.3 and 45.3 ms for torch, 8.8 and 54.6 ms for this build: the replay's
// fresh pages cost it 1.6 times what they cost PyTorch, and its warm pass
// is 1.9 times as fast as single-threaded PyTorch's, so reuse-buffers
// overstates that pair's gain (README, calibration run 10).
// The build it replaces wrote the samples into separate scratch memory and
// copied them into dst in one move: 17.3 ms warm (the munmap pair's
// reuse-buffers step replayed 1.65-1.80x the real fixed step, its data
// phase 14-15 ms against the real loop's 4-5 ms).
func build(dst []byte, seed byte) {
	fill(dst, seed)
	h := len(dst) / 2
	moveChunked(dst[h:], dst[:h])
	moveChunked(dst[:h], dst[h:2*h])
}

// moveChunked copies src into dst (the same length) in moves of at most
// moveChunk bytes.
func moveChunked(dst, src []byte) {
	for off := 0; off < len(src); off += moveChunk {
		end := min(off+moveChunk, len(src))
		copy(dst[off:end], src[off:end])
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
