package hugepage

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

func TestMake(t *testing.T) {
	type ev struct{ a, b, c int64 }
	s := Make[ev](3, 1<<20) // 24 MB
	if len(s) != 3 || cap(s) < 1<<20 {
		t.Fatalf("len %d cap %d", len(s), cap(s))
	}
	for i := range s[:cap(s)] {
		if s[:cap(s)][i] != (ev{}) {
			t.Fatalf("element %d not zero", i)
		}
	}
	s = s[:cap(s)]
	for i := range s {
		s[i].a = int64(i)
	}
	for i := range s {
		if s[i].a != int64(i) {
			t.Fatalf("element %d: %d", i, s[i].a)
		}
	}
	if small := Make[byte](0, 10); cap(small) != 10 {
		t.Fatalf("cap %d", cap(small))
	}
	// Where the kernel offers huge pages on request, the advice takes.
	if runtime.GOOS != "linux" {
		return
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Logf("transparent huge pages off here (%q): advice not checked", strings.TrimSpace(string(mode)))
		return
	}
	smaps, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Logf("no smaps_rollup: advice not checked")
		return
	}
	for _, line := range strings.Split(string(smaps), "\n") {
		if strings.HasPrefix(line, "AnonHugePages:") && strings.Fields(line)[1] == "0" {
			t.Logf("no huge pages in use after writing 24 MB (%s): the kernel had none free", line)
		}
	}
	runtime.KeepAlive(s)
}

func TestBytes(t *testing.T) {
	for _, n := range []int{0, 100, 2 << 20, 3<<20 + 5} {
		b := Bytes(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		if n >= 2<<20 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%(2<<20) != 0 {
			t.Errorf("Bytes(%d) not 2 MB aligned", n)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("Bytes(%d)[%d] = %d", n, i, b[i])
			}
			b[i] = byte(i)
		}
	}
}

// TestReleaser releases a slice's pages as it is consumed: elements past
// the released pages keep their values, and on Linux the released ones
// read as zeros (the pages went back to the kernel).
func TestReleaser(t *testing.T) {
	s := Make[int64](1<<23, 1<<23) // 64 MB
	for i := range s {
		s[i] = int64(i) + 1
	}
	r := NewReleaser(s)
	consumed := 0
	for _, n := range []int{10, 300_000, 300_001, 2_000_000, 4_000_000} {
		r.Release(n)
		consumed = n
	}
	perPage := huge / 8
	base := uintptr(unsafe.Pointer(&s[0]))
	first := int(((base+huge-1)&^(huge-1))-base) / 8 // first element of a whole page
	last := int(((base+uintptr(consumed)*8)&^(huge-1))-base) / 8
	if last-first < 2*perPage {
		t.Fatalf("only %d elements in whole pages", last-first)
	}
	for i := last; i < len(s); i++ {
		if s[i] != int64(i)+1 {
			t.Fatalf("element %d (not released) is %d", i, s[i])
		}
	}
	for i := 0; i < first; i++ {
		if s[i] != int64(i)+1 {
			t.Fatalf("element %d (before the first whole page) is %d", i, s[i])
		}
	}
	if runtime.GOOS == "linux" {
		for i := first; i < last; i += 997 {
			if s[i] != 0 {
				t.Fatalf("element %d (released) is %d", i, s[i])
			}
		}
	}
	var nilR *Releaser
	nilR.Release(5) // no-op
	runtime.KeepAlive(s)
}

// TestReleaserWhole checks that a large slice from Make starts on a huge
// page and that releasing it up to its capacity gives back all of it: the
// first and the last element read as zeros on Linux, and a small
// slice's neighbours are never touched.
func TestReleaserWhole(t *testing.T) {
	type ev struct{ a, b int64 }
	// 56 bytes, as timeline.Event: 2 MB is no whole number of them.
	type ev56 struct {
		a, b, c, d, e, f int64
		g                uint32
		h                [3]byte
	}
	if unsafe.Sizeof(ev56{}) != 56 {
		t.Fatalf("size %d", unsafe.Sizeof(ev56{}))
	}
	s := Make[ev56](0, 300_000) // 16.8 MB
	if uintptr(unsafe.Pointer(unsafe.SliceData(s)))%huge != 0 {
		t.Fatalf("large slice not on a 2 MB boundary")
	}
	if end := uintptr(cap(s)) * 56; end%huge >= 56 {
		t.Fatalf("capacity ends %d bytes into a page: its last page is not whole inside it", end%huge)
	}
	for i := 0; i < 250_000; i++ {
		s = append(s, ev56{a: int64(i) + 1, h: [3]byte{1, 2, 3}})
	}
	r := NewReleaser(s)
	r.Release(1000) // nothing whole yet
	if s[0].a != 1 {
		t.Fatalf("element 0 released early: %d", s[0].a)
	}
	r.Release(cap(s))
	if runtime.GOOS == "linux" {
		for _, i := range []int{0, 1, 37449, 37450, 200_000, 249_999} {
			if s[i] != (ev56{}) {
				t.Fatalf("element %d (released) is %+v", i, s[i])
			}
		}
	}
	// A small slice (ordinary memory) releases only whole pages inside
	// its capacity: none.
	small := Make[ev](100, 100)
	for i := range small {
		small[i].a = 7
	}
	NewReleaser(small).Release(100)
	for i := range small {
		if small[i].a != 7 {
			t.Fatalf("small element %d released", i)
		}
	}
	// A type with pointers gets an ordinary slice.
	p := Make[*int](0, 1<<20)
	if cap(p) != 1<<20 {
		t.Fatalf("pointer slice cap %d", cap(p))
	}
	runtime.KeepAlive(s)
}

// TestFree gives back all of a large slice from Make: on Linux its
// elements read as zeros afterwards.
func TestFree(t *testing.T) {
	s := Make[int64](1<<20, 1<<20) // 8 MB
	for i := range s {
		s[i] = int64(i) + 1
	}
	Free(s)
	if runtime.GOOS == "linux" {
		for i := 0; i < len(s); i += 4099 {
			if s[i] != 0 {
				t.Fatalf("element %d (freed) is %d", i, s[i])
			}
		}
	}
	Free([]int64(nil)) // no-op
	small := make([]int64, 10)
	small[9] = 3
	Free(small) // no whole page: untouched
	if small[9] != 3 {
		t.Fatal("small slice released")
	}
	runtime.KeepAlive(s)
}
