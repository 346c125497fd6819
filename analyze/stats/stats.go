// Package stats summarises a timeline: how much GPU work of each kind it
// holds, how busy the GPUs were, how many bytes were copied and from which
// kind of host memory, and what the host threads recorded. It backs
// `traceaudit stats`; its JSON form is a public contract (design.md).
package stats

import (
	"cmp"
	"slices"

	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// Stats is the `traceaudit stats --format json` object. Fields may be added,
// never renamed.
type Stats struct {
	File   string `json:"file"`
	Format string `json:"format"`
	GPU    GPU    `json:"gpu"`
	// MemcpyBytes is the bytes copied, by direction and host memory kind.
	MemcpyBytes MemcpyBytes `json:"memcpy_bytes"`
	Host        Host        `json:"host"`
	// Devices is the number of GPUs with GPU work (kernels, copies, memsets).
	Devices int `json:"devices"`
	// Streams is the number of (device, stream) pairs with GPU work.
	Streams int `json:"streams"`
	// Events is the number of events in the timeline, of every kind.
	Events int `json:"events"`

	// Detail feeds the text summary; it is not part of the JSON contract.
	Detail Detail `json:"-"`
}

// GPU counts GPU work.
type GPU struct {
	// Kernels counts kernel executions; whole CUDA graph executions
	// (nsys CUPTI_ACTIVITY_KIND_GRAPH_TRACE) are not kernels, though they
	// count in BusyNS.
	Kernels int `json:"kernels"`
	Memcpys int `json:"memcpys"`
	Memsets int `json:"memsets"`
	// BusyNS is the length of the union of all kernel, memcpy and memset
	// intervals on all devices and streams, in nanoseconds.
	BusyNS int64 `json:"busy_ns"`
	// SpanNS runs from the first GPU work's start to the last one's end.
	SpanNS int64 `json:"span_ns"`
}

// MemcpyBytes splits copied bytes by direction and memory kind.
type MemcpyBytes struct {
	HtoDPageable int64 `json:"htod_pageable"`
	HtoDPinned   int64 `json:"htod_pinned"`
	// HtoDOther is host-to-device bytes from any other or unknown host
	// memory kind (ROCm traces do not say pageable or pinned).
	HtoDOther int64 `json:"htod_other"`
	DtoH      int64 `json:"dtoh"`
	DtoD      int64 `json:"dtod"`
	// Other is HtoH, PtoP, unified-memory, array and unknown copies.
	Other int64 `json:"other"`
}

// Host counts host-side events.
type Host struct {
	APICalls int `json:"api_calls"`
	Ranges   int `json:"ranges"`
	OSCalls  int `json:"os_calls"`
	// Threads is the number of host threads with events.
	Threads int `json:"threads"`
}

// Detail holds figures for the human-readable summary.
type Detail struct {
	Version string
	// WindowNS spans all events.
	WindowNS int64
	// KernelNS, MemcpyNS and MemsetNS are summed durations.
	KernelNS, MemcpyNS, MemsetNS int64
	// ComputeBusyNS is the union of kernel intervals alone.
	ComputeBusyNS int64
	Copies        []CopyGroup
	TopAPI        []NameTime
	TopOS         []NameTime
	TopKernels    []NameTime
	Ops           int
	// GraphExecs counts whole CUDA graph executions (nsys
	// CUPTI_ACTIVITY_KIND_GRAPH_TRACE); they are not counted as kernels.
	GraphExecs  int
	Observed    timeline.Observed
	DeviceNames []string
}

// CopyGroup aggregates copies of one direction and memory-kind pair.
type CopyGroup struct {
	Copy     timeline.CopyKind
	Src, Dst timeline.MemKind
	Count    int
	Bytes    int64
	// DurNS is the summed GPU time of the copies.
	DurNS int64
}

func (g CopyGroup) key() int { return int(g.Copy)<<16 | int(g.Src)<<8 | int(g.Dst) }

// NameTime is a name with a count and summed duration.
type NameTime struct {
	Name  string
	Count int
	DurNS int64
}

// Compute summarises tl. Cost: O(n log n) in the number of events.
func Compute(tl *timeline.Timeline) *Stats {
	s := &Stats{File: tl.Source.Path, Format: tl.Source.Format, Events: len(tl.Events)}
	d := &s.Detail
	d.Version, d.Observed = tl.Source.Version, tl.Observed
	ws, we := tl.Span()
	d.WindowNS = we - ws

	// Events are in start order, so the busy sets are measured as they
	// come (ivl.Sweep) instead of built; per-name and per-track tallies are
	// slices, not maps (one lookup per event).
	var work, kernels ivl.Sweep
	streams := make([]bool, len(tl.Tracks))
	devices := map[int64]bool{}
	copies := map[[3]uint8]*CopyGroup{}
	api, osc, kern := make([]*NameTime, tl.NumNames()), make([]*NameTime, tl.NumNames()), make([]*NameTime, tl.NumNames())
	add := func(m []*NameTime, e *timeline.Event) {
		if int(e.Name) >= len(m) {
			return // not an interned name: Validate refuses such timelines
		}
		nt := m[e.Name]
		if nt == nil {
			nt = &NameTime{Name: timeline.BaseAPIName(tl.Name(e.Name))}
			m[e.Name] = nt
		}
		nt.Count++
		nt.DurNS += e.Dur()
	}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind.IsGPUWork() {
			work.Add(ivl.Interval{Start: e.Start, End: e.End})
			if !streams[e.Track] {
				streams[e.Track] = true
				devices[tl.Tracks[e.Track].Device] = true
			}
		}
		switch e.Kind {
		case timeline.KindKernel:
			kernels.Add(ivl.Interval{Start: e.Start, End: e.End})
			if e.Has(timeline.FlagGraphExec) {
				// A whole-graph execution: busy time, not a kernel (its
				// kernels are not listed one by one).
				d.GraphExecs++
				break
			}
			s.GPU.Kernels++
			d.KernelNS += e.Dur()
			add(kern, e)
		case timeline.KindMemcpy:
			s.GPU.Memcpys++
			d.MemcpyNS += e.Dur()
			s.MemcpyBytes.add(e)
			k := [3]uint8{uint8(e.Copy), uint8(e.Src), uint8(e.Dst)}
			g := copies[k]
			if g == nil {
				g = &CopyGroup{Copy: e.Copy, Src: e.Src, Dst: e.Dst}
				copies[k] = g
			}
			g.Count++
			g.Bytes += e.Bytes
			g.DurNS += e.Dur()
		case timeline.KindMemset:
			s.GPU.Memsets++
			d.MemsetNS += e.Dur()
		case timeline.KindAPI:
			s.Host.APICalls++
			add(api, e)
		case timeline.KindRange:
			s.Host.Ranges++
		case timeline.KindOS:
			s.Host.OSCalls++
			add(osc, e)
		case timeline.KindOp:
			d.Ops++
		}
	}
	s.GPU.BusyNS = work.Len()
	if lo, hi, ok := work.Bounds(); ok {
		s.GPU.SpanNS = hi - lo
	}
	d.ComputeBusyNS = kernels.Len()
	for i := range tl.Tracks {
		if tl.Tracks[i].Kind == timeline.TrackHost {
			s.Host.Threads++
		}
	}
	s.Devices = len(devices)
	for _, on := range streams {
		if on {
			s.Streams++
		}
	}
	for _, g := range copies {
		d.Copies = append(d.Copies, *g)
	}
	slices.SortFunc(d.Copies, func(a, b CopyGroup) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.key(), b.key())
	})
	d.TopAPI, d.TopOS, d.TopKernels = top(api, 5), top(osc, 5), top(kern, 5)
	for _, dev := range tl.Devices {
		if dev.Name != "" {
			d.DeviceNames = append(d.DeviceNames, dev.Name)
		}
	}
	return s
}

func (m *MemcpyBytes) add(e *timeline.Event) {
	switch e.Copy {
	case timeline.CopyHtoD:
		switch e.Src {
		case timeline.MemPageable:
			m.HtoDPageable += e.Bytes
		case timeline.MemPinned:
			m.HtoDPinned += e.Bytes
		default:
			m.HtoDOther += e.Bytes
		}
	case timeline.CopyDtoH:
		m.DtoH += e.Bytes
	case timeline.CopyDtoD:
		m.DtoD += e.Bytes
	default:
		m.Other += e.Bytes
	}
}

// top returns the n entries with the longest summed time, ties by name.
func top(m []*NameTime, n int) []NameTime {
	var out []NameTime
	for _, v := range m {
		if v != nil {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b NameTime) int {
		if c := cmp.Compare(b.DurNS, a.DurNS); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
