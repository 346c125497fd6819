package plot

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// maxHostLanes and maxGPULanes bound the timeline's lanes: the main
// thread and the threads that launch GPU work, and the busiest streams.
const (
	maxHostLanes = 4
	maxGPULanes  = 8
)

// lane is one row of the timeline: a host thread or a GPU stream.
type lane struct {
	Track timeline.TrackID
	// Label is the short name on the Y axis ("main thread (python3)",
	// "gpu0/stream7").
	Label string
	GPU   bool
}

// category is what an event on a lane is doing; categories are drawn in
// this order, so later ones lie on top.
type category int

const (
	catHostMisc category = iota
	catData
	catAPIMisc
	catLaunch
	catCopyCall
	catSyncCall
	catOSCall
	catMemset
	catCopyMisc
	catPinned
	catPageable
	catKernel
	numCats
)

// catInfo is a category's legend text and colour; Call marks host calls,
// drawn at half the lane's height over the ranges they run in.
var catInfo = [numCats]struct {
	Label string
	Color color.NRGBA
	Call  bool
}{
	catHostMisc: {"other host ranges and ops", colHostMisc, false},
	catData:     {"data loading (host)", colData, false},
	catAPIMisc:  {"other CUDA call", colAPIMisc, true},
	catLaunch:   {"kernel launch call", colLaunch, true},
	catCopyCall: {"copy call (cudaMemcpy*)", colCopy, true},
	catSyncCall: {"sync call (*Synchronize)", colSync, true},
	catOSCall:   {"munmap / OS memory call", colOS, true},
	catMemset:   {"memset (GPU)", colMemset, false},
	catCopyMisc: {"other copy (GPU)", colCopyMisc, false},
	catPinned:   {"pinned copy (GPU)", colPinned, false},
	catPageable: {"pageable copy (GPU)", colCopy, false},
	catKernel:   {"kernel (GPU)", colCompute, false},
}

// legendOrder lists host categories, then GPU ones.
var legendOrder = []category{catData, catHostMisc, catLaunch, catCopyCall, catSyncCall, catOSCall, catAPIMisc,
	catKernel, catPageable, catPinned, catCopyMisc, catMemset}

// dataCfg classifies data-loading ranges on threads other than the main
// one (the main thread's come from the index, built with the user's
// --data-range).
var dataCfg = analyze.DefaultConfig()

// classify says what event e is doing, or false when the timeline does
// not draw it (step ranges, markers, GPU sync records, waits such as poll).
func classify(tl *timeline.Timeline, e *timeline.Event) (category, bool) {
	switch e.Kind {
	case timeline.KindKernel:
		return catKernel, true
	case timeline.KindMemset:
		return catMemset, true
	case timeline.KindMemcpy:
		switch {
		case index.HostCopy(e) && index.PageableSide(e):
			return catPageable, true
		case index.HostCopy(e) && index.PinnedSide(e):
			return catPinned, true
		}
		return catCopyMisc, true
	case timeline.KindAPI:
		switch {
		case e.API == timeline.APILaunch:
			return catLaunch, true
		case e.API.IsCopy():
			return catCopyCall, true
		case e.API == timeline.APISync:
			return catSyncCall, true
		}
		return catAPIMisc, true
	case timeline.KindOS:
		return catOSCall, index.IsMemoryOSCall(tl.Name(e.Name))
	case timeline.KindRange:
		if e.Range == timeline.RangeStep {
			return 0, false
		}
		if index.IsDataRange(tl, e, dataCfg) {
			return catData, true
		}
		return catHostMisc, true
	case timeline.KindOp:
		return catHostMisc, true
	}
	return 0, false
}

// pickLanes chooses the timeline's lanes for [lo, hi): the main thread,
// host threads holding the worst finding's evidence, then the threads that
// launched most GPU work in the window (at most maxHostLanes host lanes);
// then the GPU streams of the analysed devices with work in the window,
// busiest first (at most maxGPULanes), shown by device and stream. hidden
// counts the streams left out.
func pickLanes(ix *index.Index, worst *analyze.Finding, lo, hi int64) (lanes []lane, hidden int) {
	tl := ix.TL
	launches := map[timeline.TrackID]int{}
	busy := map[timeline.TrackID]int64{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Start >= hi {
			break
		}
		if e.End <= lo {
			continue
		}
		switch {
		case e.Kind.IsGPUWork() && ix.OnDevices(e):
			busy[e.Track] += min(e.End, hi) - max(e.Start, lo)
		case e.Kind == timeline.KindAPI && e.Link >= 0 && tl.Events[e.Link].Kind.IsGPUWork():
			launches[e.Track]++
		}
	}
	var host []timeline.TrackID
	addHost := func(t timeline.TrackID) {
		if len(host) < maxHostLanes && !slices.Contains(host, t) && tl.Tracks[t].Kind == timeline.TrackHost {
			host = append(host, t)
		}
	}
	if ix.HasMain {
		addHost(ix.Main)
	}
	if worst != nil {
		for _, ev := range worst.Evidence {
			if ev.EndNS > lo && ev.StartNS < hi {
				if t, ok := trackByLabel(tl, ev.Track); ok {
					addHost(t)
				}
			}
		}
	}
	for _, t := range sortedKeys(launches, func(a, b timeline.TrackID) int { return cmp.Compare(launches[b], launches[a]) }) {
		addHost(t)
	}
	gpu := sortedKeys(busy, func(a, b timeline.TrackID) int { return cmp.Compare(busy[b], busy[a]) })
	if len(gpu) > maxGPULanes {
		hidden = len(gpu) - maxGPULanes
		gpu = gpu[:maxGPULanes]
	}
	slices.SortFunc(gpu, func(a, b timeline.TrackID) int {
		ta, tb := &tl.Tracks[a], &tl.Tracks[b]
		return cmp.Or(cmp.Compare(ta.Device, tb.Device), cmp.Compare(ta.Stream, tb.Stream))
	})
	pids := map[int64]bool{}
	for _, t := range host {
		pids[tl.Tracks[t].PID] = true
	}
	for _, t := range host {
		lanes = append(lanes, lane{Track: t, Label: hostLabel(ix, t, len(pids) > 1)})
	}
	for _, t := range gpu {
		lanes = append(lanes, lane{Track: t, Label: tl.Tracks[t].Label(), GPU: true})
	}
	return lanes, hidden
}

// sortedKeys returns m's keys sorted by less, ties by track id, so that
// lane order never depends on map order.
func sortedKeys[V any](m map[timeline.TrackID]V, less func(a, b timeline.TrackID) int) []timeline.TrackID {
	keys := make([]timeline.TrackID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b timeline.TrackID) int { return cmp.Or(less(a, b), cmp.Compare(a, b)) })
	return keys
}

// trackByLabel finds the track whose Label is label (evidence names
// tracks by label).
func trackByLabel(tl *timeline.Timeline, label string) (timeline.TrackID, bool) {
	for i := range tl.Tracks {
		if tl.Tracks[i].Label() == label {
			return timeline.TrackID(i), true
		}
	}
	return 0, false
}

// hostLabel is a host lane's short name: "main thread (python3)",
// "thread 692 (pt_autograd_0)"; withPID prefixes the process id.
func hostLabel(ix *index.Index, t timeline.TrackID, withPID bool) string {
	tr := &ix.TL.Tracks[t]
	s := fmt.Sprintf("thread %d", tr.TID)
	if ix.IsMain(t) {
		s = "main thread"
	}
	if withPID {
		s = fmt.Sprintf("pid %d %s", tr.PID, s)
	}
	if tr.Name != "" {
		name := tr.Name
		if r := []rune(name); len(r) > 18 {
			name = string(r[:17]) + "…"
		}
		s += " (" + name + ")"
	}
	return s
}

// laneEvents returns, per category, the merged intervals of track t's
// events inside [lo, hi): intervals closer than tol (about a pixel) are
// merged into one, so thousands of tiny events become a few rectangles.
func laneEvents(ix *index.Index, t timeline.TrackID, lo, hi, tol int64) [numCats][]ivl.Interval {
	tl := ix.TL
	var raw [numCats][]ivl.Interval
	for _, i := range tl.Tracks[t].Events {
		e := &tl.Events[i]
		if e.End <= lo || e.Start >= hi {
			continue
		}
		c, ok := classify(tl, e)
		if !ok {
			continue
		}
		raw[c] = append(raw[c], ivl.Interval{Start: max(e.Start, lo), End: max(min(e.End, hi), e.Start+1)})
	}
	if ix.IsMain(t) {
		raw[catData] = append(raw[catData], ix.MainData.Clip(lo, hi)...)
	}
	var out [numCats][]ivl.Interval
	for c := range raw {
		out[c] = mergeClose(raw[c], tol)
	}
	return out
}

// mergeClose unions ivs, also joining intervals less than tol apart.
func mergeClose(ivs []ivl.Interval, tol int64) []ivl.Interval {
	if len(ivs) == 0 {
		return nil
	}
	slices.SortFunc(ivs, func(a, b ivl.Interval) int { return cmp.Compare(a.Start, b.Start) })
	out := []ivl.Interval{ivs[0]}
	for _, iv := range ivs[1:] {
		last := &out[len(out)-1]
		if iv.Start-last.End < tol {
			last.End = max(last.End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}
