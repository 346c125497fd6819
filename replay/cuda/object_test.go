package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// fakeContext is a Context over a driver whose calls only log themselves:
// destroy calls as "call(handle)", failing for handle 99.
func fakeContext(log *[]string) *Context {
	ended := func(call string) func(uintptr) int32 {
		return func(h uintptr) int32 {
			*log = append(*log, fmt.Sprintf("%s(%d)", call, h))
			if h == 99 {
				return 1 // CUDA_ERROR_INVALID_VALUE
			}
			return 0
		}
	}
	d := &Driver{
		cuCtxSetCurrent:           func(uintptr) int32 { return 0 },
		cuCtxSynchronize:          func() int32 { *log = append(*log, "sync"); return 0 },
		cuDevicePrimaryCtxRelease: func(int32) int32 { *log = append(*log, "release"); return 0 },
		cuMemFree:                 func(uint64) int32 { return 0 },
		cuMemFreeHost:             func(unsafe.Pointer) int32 { return 0 },
		cuGraphExecDestroy:        ended("exec"),
		cuGraphDestroy:            ended("graph"),
		cuEventDestroy:            ended("event"),
		cuStreamDestroy:           ended("stream"),
		cuModuleUnload:            ended("module"),
	}
	return &Context{d: d, quit: make(chan struct{}),
		device: map[DevicePtr]int{}, host: map[unsafe.Pointer]int{},
		streams: map[*Stream]struct{}{}, events: map[*Event]struct{}{}, modules: map[*Module]struct{}{},
		graphs: map[*Graph]struct{}{}, execs: map[*GraphExec]struct{}{}}
}

// TestDestroyAndClose: Destroy ends one object with its own call, once; a
// second Destroy or a nil object is an error naming the kind; Close ends
// what is left, executable graphs first and modules last, marks it dead,
// and joins the calls' errors.
func TestDestroyAndClose(t *testing.T) {
	var log []string
	c := fakeContext(&log)
	s1, s2 := &Stream{object{c: c, h: 1}}, &Stream{object{c: c, h: 2}}
	e := &Event{object{c: c, h: 3}}
	m := &Module{object{c: c, h: 99}}
	g := &Graph{object{c: c, h: 5}}
	x := &GraphExec{object{c: c, h: 6}}
	streamKind.record(s1)
	streamKind.record(s2)
	eventKind.record(e)
	moduleKind.record(m)
	graphKind.record(g)
	execKind.record(x)

	if err := s1.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Destroy(); err == nil || err.Error() != "cuda: stream is nil or destroyed already" {
		t.Errorf("second Destroy: %v", err)
	}
	if err := (*Module)(nil).Unload(); err == nil || err.Error() != "cuda: module is nil or unloaded already" {
		t.Errorf("nil Unload: %v", err)
	}
	if _, ok := c.streams[s1]; ok || len(c.streams) != 1 {
		t.Errorf("registry after Destroy: %v", c.streams)
	}

	err := c.Close()
	var ce *Error
	if !errors.As(err, &ce) || ce.Call != "cuModuleUnload" {
		t.Errorf("Close: %v, want the failed cuModuleUnload", err)
	}
	if got, want := strings.Join(log, " "), "stream(1) sync exec(6) graph(5) event(3) stream(2) module(99) release"; got != want {
		t.Errorf("calls %s\nwant  %s", got, want)
	}
	for _, o := range []*object{&s2.object, &e.object, &m.object, &g.object, &x.object} {
		if !o.dead.Load() {
			t.Errorf("handle %d not dead after Close", o.h)
		}
	}
	if err := x.Destroy(); err == nil || err.Error() != "cuda: graph exec is nil or destroyed already" {
		t.Errorf("Destroy after Close: %v", err)
	}
}
