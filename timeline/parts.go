package timeline

import (
	"runtime"
	"slices"
	"sync"
)

// numParts is the number of parts Build and Validate cut n events into,
// to work on them at once: one per CPU (at most 8) from 2^16 events on,
// else one.
func numParts(n int) int {
	if forceParts > 0 {
		return forceParts
	}
	if n < 1<<16 {
		return 1
	}
	return min(max(runtime.GOMAXPROCS(0), 1), 8)
}

// forceParts, when positive, is the number of parts for any n (tests
// compare parts with one pass in order).
var forceParts = 0

// inParts calls f(p, lo, hi) for each of parts equal parts [lo, hi) of
// [0, n), on a goroutine each when there are several.
func inParts(n, parts int, f func(p, lo, hi int)) {
	if parts == 1 {
		f(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(p, n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
}

// scan is Build's first pass over events [lo, hi): it classifies API
// calls, flags communication kernels (by name) and counts the events of
// each declared track; invalid reports an event on an undeclared track.
func (b *Builder) scan(lo, hi int) (counts []int, invalid bool) {
	nn := len(b.names)
	counts = make([]int, len(b.tracks))
	classes := make([]APIClass, nn)
	known := make([]uint8, nn) // per name: 0 unknown, 1 classified or comm, 2 not comm
	for i := lo; i < hi; i++ {
		e := &b.events[i]
		if t := e.Track; int(t) < len(counts) {
			counts[t]++
		} else {
			invalid = true
		}
		if int(e.Name) >= nn {
			continue
		}
		switch {
		case e.Kind == KindKernel:
			if known[e.Name] == 0 {
				known[e.Name] = 2
				if IsCommKernel(b.names[e.Name]) {
					known[e.Name] = 1
				}
			}
			if known[e.Name] == 1 {
				e.Flags |= FlagComm
			}
		case e.Kind == KindAPI && e.API == APIOther:
			if known[e.Name] == 0 {
				classes[e.Name] = ClassifyAPI(b.names[e.Name])
				known[e.Name] = 1
			}
			e.API = classes[e.Name]
		}
	}
	return counts, invalid
}

// sortedInParts is isSorted, in parts at once.
func sortedInParts(ev []Event, parts int) bool {
	ok := make([]bool, parts)
	inParts(len(ev), parts, func(p, lo, hi int) { ok[p] = isSorted(ev[max(lo-1, 0):hi]) })
	return !slices.Contains(ok, false)
}

// indexTracks fills the tracks' event indexes (each of its final length)
// and resets every event's Link, in parts at once: counts[p][t] is the
// number of events of track t in part p of the events (as inParts cuts
// them into len(counts) parts).
func indexTracks(ev []Event, tracks []Track, counts [][]int) {
	inParts(len(ev), len(counts), func(p, lo, hi int) {
		at := make([]int, len(tracks)) // next slot of each track
		for q := range p {
			for t, k := range counts[q][:len(tracks)] {
				at[t] += k
			}
		}
		for i := lo; i < hi; i++ {
			e := &ev[i]
			e.Link = -1
			if t := int(e.Track); t < len(tracks) {
				tracks[t].Events[at[t]] = int32(i)
				at[t]++
			}
		}
	})
}

// markGraphWorkInParts is markGraphWork in parts at once: it writes only
// GPU work's flags and reads only API calls' names.
func markGraphWorkInParts(ev []Event, names []string, parts int) {
	inParts(len(ev), parts, func(_, lo, hi int) { markGraphWork(ev[lo:hi], ev, names) })
}
