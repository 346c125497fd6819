package chrome

import (
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// Kineto categories, both generations (2021 names first).
const (
	catOp = iota + 1
	catAnnotation
	catAPI
	catDriver
	catKernel
	catMemcpy
	catMemset
	catSync
	catSkip // known, and not read: GPU-side annotations, profiler spans, memory instants
)

// category maps a category name; 0 means unknown. old reports a 2021 name.
func category(cat string) (c int, old bool) {
	switch cat {
	case "cpu_op", "python_function":
		return catOp, false
	case "Operator":
		return catOp, true
	case "user_annotation":
		return catAnnotation, false
	case "cuda_runtime":
		return catAPI, false
	case "Runtime":
		return catAPI, true
	case "cuda_driver":
		return catDriver, false
	case "kernel":
		return catKernel, false
	case "Kernel":
		return catKernel, true
	case "gpu_memcpy":
		return catMemcpy, false
	case "Memcpy":
		return catMemcpy, true
	case "gpu_memset":
		return catMemset, false
	case "Memset":
		return catMemset, true
	case "cuda_sync":
		return catSync, false
	case "gpu_user_annotation", "Trace", "overhead", "cpu_instant_event":
		return catSkip, false
	}
	return 0, false
}

// mapEvent maps the fields of event idx (in w.f, lexed from w.b) to a
// timeline event, a thread name, or nothing.
func (w *worker) mapEvent(idx int) error {
	f := &w.f
	ph, err := w.str(f.ph, idx, "ph")
	if err != nil {
		return err
	}
	cat, err := w.str(f.cat, idx, "cat")
	if err != nil {
		return err
	}
	name, err := w.str(f.name, idx, "name")
	if err != nil {
		return err
	}
	if f.ts.kind != kNone && f.ts.kind != kNumber {
		return w.fieldErr(idx, "ts", "want a number, got %s", f.ts.typeName())
	}
	if f.dur.kind != kNone && f.dur.kind != kNumber {
		return w.fieldErr(idx, "dur", "want a number, got %s", f.dur.typeName())
	}
	if f.args.kind != kNone && f.args.kind != kNull && f.args.kind != kObject {
		return w.fieldErr(idx, "args", "want an object, got %s", f.args.typeName())
	}
	switch ph {
	case "X":
		return w.complete(idx, cat, name)
	case "i", "I":
		return w.instant(idx, cat, name)
	case "M":
		return w.metadata(idx, name)
	}
	return nil // flows (s, t, f), counters and the rest
}

// complete maps an X event.
func (w *worker) complete(idx int, cat, name string) error {
	f := &w.f
	c, old := category(cat)
	switch c {
	case 0:
		if w.res.unknown == nil {
			w.res.unknown = map[string]*int{}
		}
		// cat views the input buffer: look it up, but store only a copy
		// (a map assignment would store the view as the key).
		n := w.res.unknown[cat]
		if n == nil {
			n = new(int)
			w.res.unknown[strings.Clone(cat)] = n
		}
		*n++
		return nil
	case catSkip:
		return nil
	}
	if old {
		w.res.seen.oldCategories = true
	} else {
		w.res.seen.newCategories = true
	}
	pid, numeric, err := w.id(f.pid, idx, "pid")
	if err != nil {
		return err
	}
	if !numeric {
		return nil // profiler spans on "Spans", "Traces", ""
	}
	tid, numeric, err := w.id(f.tid, idx, "tid")
	if err != nil {
		return err
	}
	if !numeric {
		return w.fieldErr(idx, "tid", "want a numeric thread or stream id, got %s", quoteText(f.tid.text(w.b)))
	}
	start, err := w.micros(f.ts, idx, "ts")
	if err != nil {
		return err
	}
	var dur int64
	if f.dur.kind != kNone {
		if dur, err = w.micros(f.dur, idx, "dur"); err != nil {
			return err
		}
		if dur < 0 {
			return w.fieldErr(idx, "dur", "negative duration %s", f.dur.raw(w.b))
		}
	}
	if start+dur > timeline.MaxTime {
		return w.fieldErr(idx, "dur", "event ends beyond 2^62 ns")
	}
	local, gid := w.name(name)
	info := w.nameInfo(gid)
	e := timeline.Event{Start: start, End: start + dur, Name: timeline.NameID(local)}
	s := &w.res.seen
	switch c {
	case catOp:
		e.Kind = timeline.KindOp
		if info.rng == timeline.RangeStep || info.rng == timeline.RangeDataLoader {
			e.Kind, e.Range = timeline.KindRange, info.rng
		}
		if cat != "python_function" {
			s.hostOps = true
		}
	case catAnnotation:
		e.Kind, e.Range = timeline.KindRange, timeline.RangeAnnotation
		if info.rng != timeline.RangeOther {
			e.Range = info.rng
		}
		s.annotations = true
	case catAPI, catDriver:
		e.Kind = timeline.KindAPI
		if c == catDriver {
			e.Flags |= timeline.FlagDriver
		}
		s.api = true
	case catKernel:
		e.Kind = timeline.KindKernel
	case catMemcpy:
		e.Kind, e.Copy, e.Src, e.Dst = timeline.KindMemcpy, info.copyKind, info.src, info.dst
		if isHostTag(info.src) || isHostTag(info.dst) {
			s.memKinds = true
		}
	case catMemset:
		e.Kind, e.Dst = timeline.KindMemset, info.dst
	case catSync:
		e.Kind = timeline.KindGPUSync
	}
	if e.Range == timeline.RangeDataLoader {
		s.dataLoader = true
	}
	if e.Kind.OnGPU() {
		e.Track = timeline.TrackID(w.track(trackKey{gpu: true, a: pid, b: tid}))
		if e.Kind.IsGPUWork() {
			s.gpu = true
		}
	} else {
		e.Track = timeline.TrackID(w.track(trackKey{a: pid, b: tid}))
	}
	if w.shapes && e.Kind == timeline.KindOp {
		w.readShape(idx, &e)
	}
	if c != catOp && c != catAnnotation {
		if err := w.readArgs(idx, &e, info.hipCopy); err != nil {
			return err
		}
		if c == catKernel && info.comm && e.Corr != 0 {
			if err := w.readCollective(idx, e.Corr); err != nil {
				return err
			}
		}
	}
	w.res.events = append(w.res.events, e)
	return nil
}

// readShape records operator e's "Input Dims", if it has them, in the
// chunk's shapes, its text spaced as PyTorch prints input_shapes.
func (w *worker) readShape(idx int, e *timeline.Event) {
	var dims []byte
	err := w.eachArg(idx, func(key []byte, v value) bool {
		if view(key) == "Input Dims" {
			if v.kind == kArray {
				dims = v.raw(w.b)
			}
			return false
		}
		return true
	})
	if err != nil || dims == nil {
		return // shapes are optional: a malformed args object loses them alone
	}
	text := spaceDims(dims)
	if w.shapeOf == nil {
		w.shapeOf = map[string]string{}
	}
	if s, ok := w.shapeOf[text]; ok {
		text = s
	} else {
		w.shapeOf[text] = text
	}
	w.res.shapes = append(w.res.shapes, opShape{start: e.Start, end: e.End, track: int32(e.Track), name: int32(e.Name), shape: text})
}

// spaceDims writes a JSON array of shapes as PyTorch prints input_shapes:
// no white space but one after each comma, and a list of tensors (a
// TensorList input, whose shapes Kineto writes as a list of lists) as "[]".
func spaceDims(raw []byte) string {
	out := make([]byte, 0, len(raw)+len(raw)/4)
	depth, elem := 0, 0 // elem: where the current input's text starts in out
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[':
			depth++
			if depth == 2 {
				elem = len(out)
			}
			if depth == 3 {
				// A list of shapes: the input prints as "[]".
				out = append(out[:elem], '[')
				continue
			}
		case ']':
			depth--
			if depth >= 2 {
				continue
			}
		case ',':
			if depth >= 3 {
				continue
			}
			if depth == 2 && len(out) > elem && out[elem] == '[' && elem+1 == len(out) {
				continue // inside a list of shapes, between two of them
			}
			out = append(out, ',', ' ')
			continue
		default:
			if depth >= 3 {
				continue
			}
		}
		out = append(out, c)
	}
	return string(out)
}

func isHostTag(m timeline.MemKind) bool { return m == timeline.MemPageable || m == timeline.MemPinned }

// readArgs reads the correlation id and the size of a copy or memset,
// stopping once it has them.
func (w *worker) readArgs(idx int, e *timeline.Event, hipCopy bool) error {
	var err error
	var size int64
	wantBytes := e.Kind == timeline.KindMemcpy || e.Kind == timeline.KindMemset
	haveCorr, haveBytes, haveSize := false, !wantBytes, !hipCopy
	lerr := w.eachArg(idx, func(key []byte, v value) bool {
		switch view(key) {
		case "correlation":
			e.Corr, err = w.intArg(v, idx, "correlation")
			haveCorr = true
		case "bytes":
			if wantBytes {
				if e.Bytes, err = w.intArg(v, idx, "bytes"); err == nil && e.Bytes < 0 {
					err = w.fieldErr(idx, "args.bytes", "negative size %d", e.Bytes)
				}
				haveBytes = true
			}
		case "size":
			if hipCopy {
				size, err = w.intArg(v, idx, "size")
				haveSize = true
			}
		}
		return err == nil && !(haveCorr && haveBytes && haveSize)
	})
	if lerr != nil {
		return lerr
	}
	if err == nil && hipCopy && size > 0 && e.Corr != 0 {
		w.res.sizes = append(w.res.sizes, corrSize{e.Corr, size})
	}
	return err
}

// instant maps an i event: a marker on a host thread, unless it is a
// memory-profiling instant or a profiler marker on a string pid.
func (w *worker) instant(idx int, cat, name string) error {
	f := &w.f
	if name == "[memory]" || cat == "cpu_instant_event" {
		return nil
	}
	pid, numeric, err := w.id(f.pid, idx, "pid")
	if err != nil || !numeric {
		return err
	}
	var tid int64
	if f.tid.kind != kNone {
		if tid, numeric, err = w.id(f.tid, idx, "tid"); err != nil {
			return err
		}
		if !numeric {
			return w.fieldErr(idx, "tid", "want a numeric thread id, got %s", quoteText(f.tid.text(w.b)))
		}
	}
	start, err := w.micros(f.ts, idx, "ts")
	if err != nil {
		return err
	}
	local, _ := w.name(name)
	w.res.events = append(w.res.events, timeline.Event{
		Kind: timeline.KindMarker, Start: start, End: start,
		Name: timeline.NameID(local), Track: timeline.TrackID(w.track(trackKey{a: pid, b: tid})),
	})
	return nil
}

// metadata records thread_name and process_name events; other metadata is
// not needed, as device and host events are told apart by category.
func (w *worker) metadata(idx int, name string) error {
	if (name != "thread_name" && name != "process_name") || w.f.args.kind != kObject {
		return nil
	}
	pid, ok1, err1 := w.id(w.f.pid, idx, "pid")
	tid, ok2, err2 := w.id(w.f.tid, idx, "tid")
	if err1 != nil || err2 != nil || !ok1 || !ok2 {
		return nil // metadata is optional: a bad row only loses a name
	}
	var label string
	err := w.eachArg(idx, func(key []byte, v value) bool {
		if view(key) == "name" && v.kind == kString {
			label = string(v.text(w.b))
			return false
		}
		return true
	})
	if err != nil || label == "" {
		return err
	}
	w.res.threads = append(w.res.threads, threadName{pid, tid, label, name == "process_name"})
	return nil
}
