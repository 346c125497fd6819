package cuda

import (
	"errors"
	"fmt"
	"time"
)

// StreamFlags are cuStreamCreate's flags.
type StreamFlags uint32

const (
	// StreamDefault (CU_STREAM_DEFAULT) makes a stream that synchronises
	// with the legacy default stream (the nil *Stream): work on one waits
	// for work queued earlier on the other.
	StreamDefault StreamFlags = 0
	// StreamNonBlocking (CU_STREAM_NON_BLOCKING) makes a stream that runs
	// independently of the legacy default stream.
	StreamNonBlocking StreamFlags = 1
)

// EventFlags are cuEventCreate's flags.
type EventFlags uint32

const (
	// EventDefault (CU_EVENT_DEFAULT) records timing; Synchronize spins.
	EventDefault EventFlags = 0
	// EventBlockingSync (CU_EVENT_BLOCKING_SYNC) makes Synchronize sleep
	// instead of spinning on a CPU core.
	EventBlockingSync EventFlags = 1
	// EventDisableTiming (CU_EVENT_DISABLE_TIMING) makes a lighter event
	// that Elapsed cannot use: for Stream.WaitEvent dependencies only.
	EventDisableTiming EventFlags = 2
)

// Stream is a CUDA stream (CUstream) of one Context: work queued on it runs
// in order, and may overlap work on other streams. The nil *Stream stands
// for the context's legacy default stream wherever a *Stream is taken.
type Stream struct{ object }

// Event is a CUDA event (CUevent) of one Context: a marker queued on a
// stream, whose completion can be waited for and timed.
type Event struct{ object }

var errForeign = errors.New("cuda: stream or event belongs to another context")

// streamHandle resolves s for a call on c: 0 for nil (the legacy default
// stream), an error for a destroyed stream or one of another context.
func (c *Context) streamHandle(s *Stream) (uintptr, error) {
	switch {
	case s == nil:
		return 0, nil
	case s.c != c:
		return 0, errForeign
	case c.closed.Load():
		return 0, ErrClosed
	case s.dead.Load():
		return 0, errors.New("cuda: stream is destroyed")
	}
	return s.h, nil
}

// eventHandle resolves e for a call on c.
func (c *Context) eventHandle(e *Event) (uintptr, error) {
	switch {
	case e == nil:
		return 0, errors.New("cuda: nil event")
	case e.c != c:
		return 0, errForeign
	case c.closed.Load():
		return 0, ErrClosed
	case e.dead.Load():
		return 0, errors.New("cuda: event is destroyed")
	}
	return e.h, nil
}

// NewStream creates a stream (cuStreamCreate). It lives until Destroy or
// the context's Close.
func (c *Context) NewStream(flags StreamFlags) (*Stream, error) {
	s := &Stream{object{c: c}}
	err := c.run(func() error { return c.d.check("cuStreamCreate", c.d.cuStreamCreate(&s.h, uint32(flags))) })
	if err != nil {
		return nil, err
	}
	streamKind.record(s)
	return s, nil
}

// Synchronize waits until all work queued on s has finished
// (cuStreamSynchronize), and returns the first error of that work. The nil
// *Stream has no Context to run on: use Context.Synchronize for it.
func (s *Stream) Synchronize() error {
	if s == nil {
		return errors.New("cuda: Synchronize on a nil *Stream: use Context.Synchronize")
	}
	c := s.c
	h, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	return c.run(func() error { return c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(h)) })
}

// WaitEvent makes work queued on s after this call wait until e has
// completed (cuStreamWaitEvent); the host does not wait. e is typically
// recorded on another stream.
func (s *Stream) WaitEvent(e *Event) error {
	if s == nil {
		return errors.New("cuda: WaitEvent on a nil *Stream")
	}
	c := s.c
	h, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	eh, err := c.eventHandle(e)
	if err != nil {
		return err
	}
	return c.run(func() error { return c.d.check("cuStreamWaitEvent", c.d.cuStreamWaitEvent(h, eh, 0)) })
}

// Destroy destroys s (cuStreamDestroy_v2); work already queued on it still
// runs. Destroying twice is an error.
func (s *Stream) Destroy() error {
	return streamKind.release(s)
}

// NewEvent creates an event (cuEventCreate) with EventDefault, so that it
// records timing. It lives until Destroy or the context's Close.
func (c *Context) NewEvent() (*Event, error) { return c.NewEventFlags(EventDefault) }

// NewEventFlags creates an event with the given flags.
func (c *Context) NewEventFlags(flags EventFlags) (*Event, error) {
	e := &Event{object{c: c}}
	err := c.run(func() error { return c.d.check("cuEventCreate", c.d.cuEventCreate(&e.h, uint32(flags))) })
	if err != nil {
		return nil, err
	}
	eventKind.record(e)
	return e, nil
}

// Record queues e on stream s (nil: the legacy default stream) with
// cuEventRecord: e completes when all work queued on s before it has.
func (e *Event) Record(s *Stream) error {
	if e == nil {
		return errors.New("cuda: Record on a nil *Event")
	}
	c := e.c
	eh, err := c.eventHandle(e)
	if err != nil {
		return err
	}
	sh, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	return c.run(func() error { return c.d.check("cuEventRecord", c.d.cuEventRecord(eh, sh)) })
}

// Synchronize waits until e has completed (cuEventSynchronize).
func (e *Event) Synchronize() error {
	if e == nil {
		return errors.New("cuda: Synchronize on a nil *Event")
	}
	c := e.c
	eh, err := c.eventHandle(e)
	if err != nil {
		return err
	}
	return c.run(func() error { return c.d.check("cuEventSynchronize", c.d.cuEventSynchronize(eh)) })
}

// Destroy destroys e (cuEventDestroy_v2). Destroying twice is an error.
func (e *Event) Destroy() error {
	return eventKind.release(e)
}

// ElapsedMs is the GPU time from start to end in milliseconds, with a
// resolution of about 0.5 µs (cuEventElapsedTime_v2, or cuEventElapsedTime
// on drivers before CUDA 12.8). Both events must have been recorded and
// completed (Synchronize on end first), and both made with timing enabled.
func (c *Context) ElapsedMs(start, end *Event) (float32, error) {
	sh, err := c.eventHandle(start)
	if err != nil {
		return 0, err
	}
	eh, err := c.eventHandle(end)
	if err != nil {
		return 0, err
	}
	var ms float32
	err = c.run(func() error { return c.d.check(c.d.elapsedName, c.d.cuEventElapsedTime(&ms, sh, eh)) })
	return ms, err
}

// Elapsed is ElapsedMs as a time.Duration (nanoseconds).
func (c *Context) Elapsed(start, end *Event) (time.Duration, error) {
	ms, err := c.ElapsedMs(start, end)
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// String describes the stream for logs: its handle, or "default".
func (s *Stream) String() string {
	if s == nil {
		return "stream(default)"
	}
	return fmt.Sprintf("stream(%#x)", s.h)
}
