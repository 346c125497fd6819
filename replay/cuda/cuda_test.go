package cuda

// Tests that need no GPU: error naming, loading without a driver, the
// embedded PTX's text, argument packing, and the closed-context paths.

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestErrorText(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestCheckNamesFromTable(t *testing.T) {
	var d *Driver // no driver loaded: names come from the table
	if err := d.check("cuInit", 0); err != nil {
		t.Fatalf("check(0) = %v, want nil", err)
	}
	cases := []struct {
		code int32
		want string
	}{
		{2, "cuX: CUDA_ERROR_OUT_OF_MEMORY (2)"},
		{100, "cuX: CUDA_ERROR_NO_DEVICE (100)"},
		{201, "cuX: CUDA_ERROR_INVALID_CONTEXT (201)"},
		{218, "cuX: CUDA_ERROR_INVALID_PTX (218)"},
		{700, "cuX: CUDA_ERROR_ILLEGAL_ADDRESS (700)"},
		{999, "cuX: CUDA_ERROR_UNKNOWN (999)"},
		{12345, "cuX: CUDA_ERROR_UNKNOWN_CODE (12345)"},
	}
	for _, c := range cases {
		err := d.check("cuX", c.code)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("check(%d) = %T, want *Error", c.code, err)
		}
		if e.Code != int(c.code) || err.Error() != c.want {
			t.Errorf("check(%d) = %q (code %d), want %q", c.code, err, e.Code, c.want)
		}
	}
}

func TestErrorIs(t *testing.T) {
	var d *Driver
	if err := d.check("cuInit", 100); !errors.Is(err, ErrNoDevice) || errors.Is(err, ErrOutOfMemory) {
		t.Errorf("code 100: Is(ErrNoDevice)=%v Is(ErrOutOfMemory)=%v", errors.Is(err, ErrNoDevice), errors.Is(err, ErrOutOfMemory))
	}
	if err := d.check("cuMemAlloc_v2", 2); !errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrNoDevice) {
		t.Errorf("code 2: Is(ErrOutOfMemory)=%v", errors.Is(err, ErrOutOfMemory))
	}
	if err := d.check("cuMemAlloc_v2", 1); errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrNoCUDA) {
		t.Errorf("code 1 matches a sentinel: %v", err)
	}
}

func TestOpenMissingLibrary(t *testing.T) {
	d, err := openLib("libcuda-traceaudit-missing.so.1")
	if d != nil || !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("openLib(missing) = %v, %v; want an ErrNoCUDA error", d, err)
	}
	if !strings.HasPrefix(err.Error(), "libcuda.so.1 not found: this machine has no NVIDIA driver") {
		t.Errorf("message %q", err)
	}
}

// TestOpenHere checks Open on the machine running the tests: on one without
// the NVIDIA driver (a developer's or CI's) it must fail with ErrNoCUDA.
func TestOpenHere(t *testing.T) {
	d, err := Open()
	switch {
	case err == nil:
		t.Skipf("CUDA %s with %d device(s) here: nothing to check", d.VersionString(), d.DeviceCount())
	case errors.Is(err, ErrNoDevice):
		t.Skipf("driver present, no device: %v", err)
	case !errors.Is(err, ErrNoCUDA):
		t.Fatalf("Open() = %v, want an ErrNoCUDA error", err)
	}
	t.Logf("Open: %v", err)
	if d2, err2 := Open(); d2 != nil || err2 != err {
		t.Errorf("second Open = %v, %v; want the first call's error again", d2, err2)
	}
}

func TestVersionString(t *testing.T) {
	for v, want := range map[int]string{13000: "13.0", 12080: "12.8", 11040: "11.4"} {
		if got := (&Driver{version: v}).VersionString(); got != want {
			t.Errorf("VersionString(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestSpinPTX checks the embedded kernel's text: header, entry, parameters,
// the timer, and that every register used is declared (ptxas is not at
// hand here, so this catches the usual slips of hand-written PTX).
func TestSpinPTX(t *testing.T) {
	for _, want := range []string{
		".version 7.0", ".target sm_50", ".address_size 64",
		".visible .entry spin(", ".param .u64 spin_ns", ".param .u64 spin_out",
		"[spin_ns]", "[spin_out]", "%globaltimer", "st.global.u32", "ret;",
	} {
		if !strings.Contains(spinPTX, want) {
			t.Errorf("spin.ptx lacks %q", want)
		}
	}
	checkPTX(t, spinPTX)
}

// TestSpinBlocks: kernels shorter than ShortSpin run one block, longer
// ones the full grid.
func TestSpinBlocks(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint32
	}{{0, 1}, {930 * time.Nanosecond, 1}, {ShortSpin - 1, 1}, {ShortSpin, 264}, {time.Millisecond, 264}} {
		if got := spinBlocks(264, c.d); got != c.want {
			t.Errorf("spinBlocks(264, %v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// checkPTX checks braces, declared registers and branch labels of PTX text.
func checkPTX(t *testing.T, src string) {
	t.Helper()
	var code []string
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		code = append(code, line)
	}
	body := strings.Join(code, "\n")
	if strings.Count(body, "{") != strings.Count(body, "}") || strings.Count(body, "(") != strings.Count(body, ")") {
		t.Errorf("unbalanced braces or parentheses")
	}
	declared := map[string]bool{}
	for _, special := range []string{"tid", "ntid", "ctaid", "nctaid", "globaltimer", "clock", "clock64", "laneid", "smid"} {
		declared[special] = true
	}
	decl := regexp.MustCompile(`\.reg\s+\.\w+\s+([^;]+);`)
	for _, m := range decl.FindAllStringSubmatch(body, -1) {
		for _, name := range strings.Split(m[1], ",") {
			declared[strings.TrimPrefix(strings.TrimSpace(name), "%")] = true
		}
	}
	for _, m := range regexp.MustCompile(`%([A-Za-z_]\w*)`).FindAllStringSubmatch(decl.ReplaceAllString(body, ""), -1) {
		if !declared[m[1]] {
			t.Errorf("register %%%s is used but not declared", m[1])
		}
	}
	labels := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*([A-Za-z_$]\w*):`).FindAllStringSubmatch(body, -1) {
		labels[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`\bbra(?:\.uni)?\s+([A-Za-z_$]\w*)`).FindAllStringSubmatch(body, -1) {
		if !labels[m[1]] {
			t.Errorf("branch to undefined label %s", m[1])
		}
	}
}

func TestFillPTX(t *testing.T) { checkPTX(t, fillPTX) }

func TestPackArgs(t *testing.T) {
	slots, err := packArgs([]any{DevicePtr(0x7f0000001000), uint64(1 << 40), int64(-1), uint32(7), int32(-2), float32(1.5), 2.5, uintptr(9)})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{0x7f0000001000, 1 << 40, math.MaxUint64, 7, 0xfffffffe, uint64(math.Float32bits(1.5)), math.Float64bits(2.5), 9}
	for i := range want {
		if slots[i] != want[i] {
			t.Errorf("slot %d = %#x, want %#x", i, slots[i], want[i])
		}
	}
	// A 4-byte argument must read back from its slot's first 4 bytes.
	if got := *(*int32)(unsafe.Pointer(&slots[4])); got != -2 {
		t.Errorf("int32 slot reads back %d", got)
	}
	for _, bad := range []any{1, uint(1), "x", int16(1), []byte{1}} {
		if _, err := packArgs([]any{bad}); err == nil {
			t.Errorf("packArgs(%T) accepted", bad)
		}
	}
}

func TestDim3Norm(t *testing.T) {
	if got := (Dim3{X: 4}).norm(); got != (Dim3{4, 1, 1}) {
		t.Errorf("norm = %v", got)
	}
	if got := (Dim3{}).norm(); got != (Dim3{1, 1, 1}) {
		t.Errorf("norm = %v", got)
	}
}

func TestCStrings(t *testing.T) {
	b := []byte("NVIDIA H200\x00junk")
	if got := cBuffer(b); got != "NVIDIA H200" {
		t.Errorf("cBuffer = %q", got)
	}
	if got := goString(&b[0]); got != "NVIDIA H200" {
		t.Errorf("goString = %q", got)
	}
	if goString(nil) != "" || cBuffer([]byte("ab")) != "ab" {
		t.Error("edge cases")
	}
}

// TestClosedContext checks that a closed context refuses work before it
// touches the driver (there is none here).
func TestClosedContext(t *testing.T) {
	c := &Context{quit: make(chan struct{})}
	c.closed.Store(true)
	if _, err := c.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc: %v", err)
	}
	if err := c.Free(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Free: %v", err)
	}
	if _, err := c.AllocHost(1); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocHost: %v", err)
	}
	if err := c.Do(func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Alloc(0); err == nil || errors.Is(err, ErrClosed) {
		t.Errorf("Alloc(0) = %v, want a size error", err)
	}
}

func TestStreamHandles(t *testing.T) {
	c, other := &Context{}, &Context{}
	if h, err := c.streamHandle(nil); h != 0 || err != nil {
		t.Errorf("nil stream: %d, %v", h, err)
	}
	s := &Stream{object{c: c, h: 42}}
	if h, err := c.streamHandle(s); h != 42 || err != nil {
		t.Errorf("own stream: %d, %v", h, err)
	}
	if _, err := other.streamHandle(s); err == nil {
		t.Error("another context's stream accepted")
	}
	s.dead.Store(true)
	if _, err := c.streamHandle(s); err == nil {
		t.Error("destroyed stream accepted")
	}
	if _, err := c.eventHandle(nil); err == nil {
		t.Error("nil event accepted")
	}
}
