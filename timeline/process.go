package timeline

import (
	"cmp"
	"slices"
)

// GPUProcess is an OS process that ran GPU work, as one input recorded it.
type GPUProcess struct {
	// PID is the process id (0 where the input has one process per file).
	PID int64
	// Devices are the GPUs it ran work on, ascending.
	Devices []int64
}

// GPUProcesses lists the processes that own GPU work (kernels, copies,
// memsets), ordered by their lowest device, then by pid. An input with one
// process per file (Chrome traces) gives one entry. Cost: O(n).
func (tl *Timeline) GPUProcesses() []GPUProcess {
	devs := map[uint32]map[int64]bool{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if !e.Kind.IsGPUWork() {
			continue
		}
		d := devs[e.Proc]
		if d == nil {
			d = map[int64]bool{}
			devs[e.Proc] = d
		}
		d[tl.Tracks[e.Track].Device] = true
	}
	out := make([]GPUProcess, 0, len(devs))
	for pid, d := range devs {
		p := GPUProcess{PID: int64(pid)}
		for dev := range d {
			p.Devices = append(p.Devices, dev)
		}
		slices.Sort(p.Devices)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b GPUProcess) int {
		if c := cmp.Compare(a.Devices[0], b.Devices[0]); c != 0 {
			return c
		}
		return cmp.Compare(a.PID, b.PID)
	})
	return out
}

// ForProcess returns the timeline of one process: the events of its host
// threads and the GPU work it owns (Event.Proc), with links, tracks,
// devices and collectives renumbered. Names are shared with tl, which
// stays valid. Cost: O(n).
func (tl *Timeline) ForProcess(pid int64) *Timeline {
	keep := func(e *Event) bool {
		t := &tl.Tracks[e.Track]
		if t.Kind == TrackHost {
			return t.PID == pid
		}
		return int64(e.Proc) == pid
	}
	newIdx := make([]int32, len(tl.Events))
	n := 0
	for i := range tl.Events {
		newIdx[i] = -1
		if keep(&tl.Events[i]) {
			newIdx[i] = int32(n)
			n++
		}
	}
	trackMap := make([]TrackID, len(tl.Tracks))
	var tracks []Track
	for ti := range tl.Tracks {
		t := &tl.Tracks[ti]
		used := 0
		for _, i := range t.Events {
			if newIdx[i] >= 0 {
				used++
			}
		}
		if used == 0 {
			continue
		}
		nt := *t
		nt.Events = make([]int32, 0, used)
		for _, i := range t.Events {
			if j := newIdx[i]; j >= 0 {
				nt.Events = append(nt.Events, j)
			}
		}
		trackMap[ti] = TrackID(len(tracks))
		tracks = append(tracks, nt)
	}
	events := make([]Event, 0, n)
	devs := map[int64]bool{}
	for i := range tl.Events {
		if newIdx[i] < 0 {
			continue
		}
		e := tl.Events[i]
		e.Track = trackMap[e.Track]
		if e.Link >= 0 {
			e.Link = newIdx[e.Link] // -1 when the linked event is another process's
		}
		if tracks[e.Track].Kind == TrackGPU {
			devs[tracks[e.Track].Device] = true
		}
		events = append(events, e)
	}
	var devices []Device
	for _, d := range tl.Devices {
		if devs[d.ID] {
			devices = append(devices, d)
		}
	}
	var colls []Collective
	for _, c := range tl.Collectives {
		if j := newIdx[c.Event]; j >= 0 {
			c.Event = j
			colls = append(colls, c)
		}
	}
	return &Timeline{
		Source:      tl.Source,
		Events:      events,
		Tracks:      tracks,
		Devices:     devices,
		Observed:    tl.Observed,
		Collectives: colls,
		Dist:        tl.Dist,
		names:       tl.names,
	}
}
