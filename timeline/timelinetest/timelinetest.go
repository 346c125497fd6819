// Package timelinetest builds synthetic timelines for tests, in a few lines
// per scenario:
//
//	b := timelinetest.New()
//	main := b.Thread(1, 1, "python")
//	s7 := b.Stream(0, 7)
//	b.Range(main, "ProfilerStep#1", 0, 10*timelinetest.Ms)
//	b.Launch(main, s7, "gemm", 100, 110, 200, 5000) // call [100,110), kernel [200,5000)
//	tl := b.Build(t)
//
// Times are nanoseconds; Us and Ms help write them.
package timelinetest

import (
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

// Time units in nanoseconds.
const (
	Us int64 = 1_000
	Ms int64 = 1_000_000
)

// Builder wraps timeline.Builder with helpers that keep correlation ids
// unique.
type Builder struct {
	B    *timeline.Builder
	corr int64
	pids map[timeline.TrackID]int64
}

// New returns an empty builder.
func New() *Builder {
	b := &Builder{B: timeline.NewBuilder(timeline.Source{Path: "synthetic", Format: "synthetic"}), pids: map[timeline.TrackID]int64{}}
	b.B.Observed = timeline.Observed{GPU: true, APICalls: true, OSCalls: true, NVTX: true, MemoryKinds: true, CanOSCalls: true, CanNVTX: true}
	return b
}

// Thread declares host thread (pid, tid).
func (b *Builder) Thread(pid, tid int64, name string) timeline.TrackID {
	t := b.B.HostTrack(pid, tid)
	b.pids[t] = pid
	if name != "" {
		b.B.SetThreadName(pid, tid, name)
	}
	return t
}

// Stream declares GPU stream (device, stream).
func (b *Builder) Stream(device, stream int64) timeline.TrackID { return b.B.GPUTrack(device, stream) }

// Range adds a host range; its kind is derived from the name (steps,
// DataLoader), else NVTX.
func (b *Builder) Range(t timeline.TrackID, name string, start, end int64) {
	b.B.Add(timeline.Event{Kind: timeline.KindRange, Range: timeline.ClassifyRange(name, timeline.RangeNVTX),
		Name: b.B.Intern(name), Track: t, Start: start, End: end})
}

// API adds a host API call that launched nothing.
func (b *Builder) API(t timeline.TrackID, name string, start, end int64) {
	b.B.Add(timeline.Event{Kind: timeline.KindAPI, Name: b.B.Intern(name), Track: t, Start: start, End: end, Proc: b.proc(t)})
}

// OS adds an OS runtime call.
func (b *Builder) OS(t timeline.TrackID, name string, start, end int64) {
	b.B.Add(timeline.Event{Kind: timeline.KindOS, Name: b.B.Intern(name), Track: t, Start: start, End: end})
}

// Op adds a host operator.
func (b *Builder) Op(t timeline.TrackID, name string, start, end int64) {
	b.B.Add(timeline.Event{Kind: timeline.KindOp, Name: b.B.Intern(name), Track: t, Start: start, End: end})
}

// Launch adds a cudaLaunchKernel call on host thread h over [cs, ce) and the
// kernel it launched on stream s over [ks, ke).
func (b *Builder) Launch(h, s timeline.TrackID, kernel string, cs, ce, ks, ke int64) {
	c := b.next()
	p := b.proc(h)
	b.B.Add(timeline.Event{Kind: timeline.KindAPI, Name: b.B.Intern("cudaLaunchKernel"), Track: h, Start: cs, End: ce, Corr: c, Proc: p})
	b.B.Add(timeline.Event{Kind: timeline.KindKernel, Name: b.B.Intern(kernel), Track: s, Start: ks, End: ke, Corr: c, Proc: p})
}

// Collective adds a cudaLaunchKernel call on host thread h over [cs, ce)
// and the NCCL kernel it launched on stream s over [ks, ke), recorded as
// collective c (its Event is set by Build).
func (b *Builder) Collective(h, s timeline.TrackID, c timeline.Collective, cs, ce, ks, ke int64) {
	corr := b.next()
	p := b.proc(h)
	kernel := "ncclDevKernel_" + c.Op + "_RING_LL"
	b.B.Add(timeline.Event{Kind: timeline.KindAPI, Name: b.B.Intern("cudaLaunchKernel"), Track: h, Start: cs, End: ce, Corr: corr, Proc: p})
	b.B.AddCollective(timeline.Event{Kind: timeline.KindKernel, Name: b.B.Intern(kernel), Track: s, Start: ks, End: ke, Corr: corr, Proc: p}, c)
}

// Copy describes a memcpy for Memcpy.
type Copy struct {
	Dir      timeline.CopyKind
	Src, Dst timeline.MemKind
	Bytes    int64
	// API is the call's name (default cudaMemcpyAsync).
	API string
}

// Pageable is a pageable host-to-device copy of n bytes.
func Pageable(n int64) Copy {
	return Copy{Dir: timeline.CopyHtoD, Src: timeline.MemPageable, Dst: timeline.MemDevice, Bytes: n}
}

// Pinned is a pinned host-to-device copy of n bytes.
func Pinned(n int64) Copy {
	return Copy{Dir: timeline.CopyHtoD, Src: timeline.MemPinned, Dst: timeline.MemDevice, Bytes: n}
}

// Memcpy adds a copy call on h over [cs, ce) and the copy on s over [gs, ge).
func (b *Builder) Memcpy(h, s timeline.TrackID, c Copy, cs, ce, gs, ge int64) {
	corr := b.next()
	p := b.proc(h)
	api := c.API
	if api == "" {
		api = "cudaMemcpyAsync"
	}
	b.B.Add(timeline.Event{Kind: timeline.KindAPI, Name: b.B.Intern(api), Track: h, Start: cs, End: ce, Corr: corr, Proc: p})
	b.B.Add(timeline.Event{Kind: timeline.KindMemcpy, Name: b.B.Intern("Memcpy " + c.Dir.String()), Track: s,
		Start: gs, End: ge, Corr: corr, Proc: p, Copy: c.Dir, Src: c.Src, Dst: c.Dst, Bytes: c.Bytes})
}

// Build builds and validates the timeline, failing the test on error.
func (b *Builder) Build(t testing.TB) *timeline.Timeline {
	t.Helper()
	tl, err := b.B.Build()
	if err != nil {
		t.Fatalf("synthetic timeline: %v", err)
	}
	return tl
}

func (b *Builder) next() int64 { b.corr++; return b.corr }

// proc scopes correlation ids by the host thread's process.
func (b *Builder) proc(h timeline.TrackID) uint32 { return uint32(b.pids[h]) }
