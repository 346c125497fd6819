package replay

import (
	"fmt"
	"golang.org/x/sys/unix"
	"sync/atomic"
	"time"
)

// burn keeps the calling goroutine's CPU busy for d: real host work of the
// observed length (integer arithmetic, checking the clock every few µs).
func burn(d time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(d)
	x := uint64(88172645463325252)
	for {
		for range 256 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		if time.Now().After(end) {
			break
		}
	}
	sink.Store(x) // keeps the work from being optimised away
}

var sink atomic.Uint64

// fill writes every byte of b (a batch being produced): on a fresh mapping
// this also faults its pages in, as building a real batch does.
func fill(b []byte, seed byte) {
	if len(b) == 0 {
		return
	}
	for i := 0; i < len(b) && i < 4096; i++ {
		b[i] = seed + byte(i)
	}
	for n := min(4096, len(b)); n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// mapping is a real mapping released with a real munmap: anonymous and
// private, as glibc makes for a large allocation, or shared memory (a
// memfd mapped MAP_SHARED), as a batch that a DataLoader worker process
// hands over arrives in.
type mapping struct{ b []byte }

func newMapping(n int64, shared bool) (*mapping, error) {
	if !shared {
		b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return nil, fmt.Errorf("mmap %d bytes: %w", n, err)
		}
		return &mapping{b: b}, nil
	}
	fd, err := unix.MemfdCreate("traceaudit-batch", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd) // the mapping keeps the memory alive
	if err := unix.Ftruncate(fd, n); err != nil {
		return nil, fmt.Errorf("ftruncate %d bytes: %w", n, err)
	}
	b, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes of shared memory: %w", n, err)
	}
	return &mapping{b: b}, nil
}

func (m *mapping) unmap() error {
	if m == nil || m.b == nil {
		return nil
	}
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}
