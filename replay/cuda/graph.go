package cuda

import (
	"errors"
	"fmt"
)

// CUDA graphs through stream capture: the work a function queues on a
// stream is recorded into a graph (cuStreamBeginCapture_v2 /
// cuStreamEndCapture), instantiated once (cuGraphInstantiateWithFlags, the
// symbol cuda.h maps cuGraphInstantiate to since CUDA 12) and then launched
// with one call per replay (cuGraphLaunch), as torch.cuda.graphs and
// torch.compile(mode="reduce-overhead") do. The graph symbols are bound
// when the driver has them (CUDA 11.4 and later); without them Capture
// returns ErrNoGraphs.

// ErrNoGraphs reports a driver without the CUDA graph calls this package
// binds.
var ErrNoGraphs = errors.New("cuda: the driver lacks CUDA graph support (CUDA 11.4 or later)")

// captureModeRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED (cuda.h; global is
// 0, thread-local 1): no call is refused during capture, and the capture
// may end on another thread.
const captureModeRelaxed = 2

// Graph is a captured CUDA graph (CUgraph) of one Context.
type Graph struct{ object }

// GraphExec is an instantiated graph (CUgraphExec), ready to launch.
type GraphExec struct{ object }

// hasGraphs says whether the driver's graph calls are bound.
func (d *Driver) hasGraphs() bool {
	return d.cuStreamBeginCapture != nil && d.cuStreamEndCapture != nil && d.cuGraphInstantiate != nil &&
		d.cuGraphLaunch != nil && d.cuGraphExecDestroy != nil && d.cuGraphDestroy != nil
}

// Capture records into a graph the work that fn queues on the stream it is
// given: a fresh non-blocking stream in capture mode (relaxed, so that the
// calls fn makes, whatever thread they run on, are not refused). Nothing
// runs on the GPU during capture. fn must queue work only on that stream
// and must not synchronise. The graph lives until Destroy or Close.
func (c *Context) Capture(fn func(s *Stream) error) (*Graph, error) {
	if !c.d.hasGraphs() {
		return nil, ErrNoGraphs
	}
	s, err := c.NewStream(StreamNonBlocking)
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	g := &Graph{object{c: c}}
	err = c.run(func() error {
		// The goroutine stays on this OS thread from begin to end: the
		// calls fn makes lock it again (nested) and so run here too.
		if err := c.d.check("cuStreamBeginCapture_v2", c.d.cuStreamBeginCapture(s.h, captureModeRelaxed)); err != nil {
			return err
		}
		ferr := fn(s)
		eerr := c.d.check("cuStreamEndCapture", c.d.cuStreamEndCapture(s.h, &g.h))
		if ferr != nil || eerr != nil {
			if g.h != 0 {
				c.d.cuGraphDestroy(g.h)
			}
			return errors.Join(ferr, eerr)
		}
		if g.h == 0 {
			return errors.New("cuda: stream capture produced no graph")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("capturing a CUDA graph: %w", err)
	}
	graphKind.record(g)
	return g, nil
}

// Instantiate makes an executable graph of g (cuGraphInstantiateWithFlags,
// no flags). It lives until Destroy or the context's Close, and does not
// need g to stay alive.
func (g *Graph) Instantiate() (*GraphExec, error) {
	if g == nil || g.dead.Load() {
		return nil, errors.New("cuda: graph is nil or destroyed")
	}
	c := g.c
	x := &GraphExec{object{c: c}}
	err := c.run(func() error {
		return c.d.check("cuGraphInstantiateWithFlags", c.d.cuGraphInstantiate(&x.h, g.h, 0))
	})
	if err != nil {
		return nil, err
	}
	execKind.record(x)
	return x, nil
}

// Launch queues the whole graph on s (nil: the legacy default stream) with
// one cuGraphLaunch: its kernels run in capture order, back to back.
func (x *GraphExec) Launch(s *Stream) error {
	if x == nil || x.dead.Load() {
		return errors.New("cuda: graph exec is nil or destroyed")
	}
	c := x.c
	sh, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	return c.run(func() error { return c.d.check("cuGraphLaunch", c.d.cuGraphLaunch(x.h, sh)) })
}

// Destroy frees the graph (cuGraphDestroy). Destroying twice is an error.
func (g *Graph) Destroy() error {
	return graphKind.release(g)
}

// Destroy frees the executable graph (cuGraphExecDestroy); launches already
// queued still run. Destroying twice is an error.
func (x *GraphExec) Destroy() error {
	return execKind.release(x)
}
