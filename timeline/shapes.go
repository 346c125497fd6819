package timeline

import (
	"cmp"
	"slices"
)

// OpShape is what the PyTorch profiler recorded of one operator's inputs
// (record_shapes=True: Kineto's "Input Dims"), for tables grouped by input
// shape as key_averages(group_by_input_shape=True) groups them.
type OpShape struct {
	// Event is the operator's index in Timeline.Events.
	Event int32
	// Shape is the input shapes as PyTorch prints them:
	// "[[64, 3, 32, 32], [32], []]". Not among the timeline's names, so
	// that reading shapes leaves the events as they are.
	Shape string
}

// pendingShape is an operator's shape before Build gives the operator its
// place in the sorted events.
type pendingShape struct {
	start, end int64
	track      TrackID
	name       NameID
	shape      string
}

// AddShape records the input shapes of operator e, which is or will be
// added with these Start, End, Track and Name.
func (b *Builder) AddShape(e *Event, shape string) {
	b.shapes = append(b.shapes, pendingShape{start: e.Start, end: e.End, track: e.Track, name: e.Name, shape: shape})
}

// placeShapes finds the sorted index of each pending shape's operator.
// Cost: a binary search each.
func placeShapes(ev []Event, pend []pendingShape) []OpShape {
	out := make([]OpShape, 0, len(pend))
	for _, p := range pend {
		if i, ok := placed(ev, p.start, func(e *Event) bool {
			return e.Kind == KindOp && e.End == p.end && e.Track == p.track && e.Name == p.name
		}); ok {
			out = append(out, OpShape{Event: i, Shape: p.shape})
		}
	}
	slices.SortFunc(out, func(x, y OpShape) int { return cmp.Compare(x.Event, y.Event) })
	return slices.CompactFunc(out, func(x, y OpShape) bool { return x.Event == y.Event })
}

// ShapeOf returns the input shapes recorded for event i, if any.
func (tl *Timeline) ShapeOf(i int32) (string, bool) {
	k, ok := slices.BinarySearchFunc(tl.Shapes, i, func(s OpShape, t int32) int { return cmp.Compare(s.Event, t) })
	if !ok {
		return "", false
	}
	return tl.Shapes[k].Shape, true
}
