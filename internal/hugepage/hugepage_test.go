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
