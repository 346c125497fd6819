package cuda

import (
	"fmt"
	"sync/atomic"
)

// object is what every driver object of a Context holds (Stream, Event,
// Module, Graph and GraphExec embed it): the context, the driver's handle
// (a CUstream, CUevent, ...), and whether it has been destroyed.
type object struct {
	c    *Context
	h    uintptr
	dead atomic.Bool
}

func (o *object) base() *object { return o }

// recorded is a driver object that its Context records from its creation
// to its Destroy (a Module's Unload) or the Context's Close.
type recorded interface {
	comparable
	base() *object
}

// kind is one kind of recorded object: how errors name it and its end,
// its registry in the Context, and the driver call that ends its handle.
type kind[T recorded] struct {
	what, ended string // "graph exec", "destroyed"
	call        string // the driver call's name, as errors give it
	registry    func(c *Context) map[T]struct{}
	end         func(d *Driver, h uintptr) int32
}

// The kinds of recorded objects.
var (
	execKind = kind[*GraphExec]{"graph exec", "destroyed", "cuGraphExecDestroy",
		func(c *Context) map[*GraphExec]struct{} { return c.execs },
		func(d *Driver, h uintptr) int32 { return d.cuGraphExecDestroy(h) }}
	graphKind = kind[*Graph]{"graph", "destroyed", "cuGraphDestroy",
		func(c *Context) map[*Graph]struct{} { return c.graphs },
		func(d *Driver, h uintptr) int32 { return d.cuGraphDestroy(h) }}
	eventKind = kind[*Event]{"event", "destroyed", "cuEventDestroy_v2",
		func(c *Context) map[*Event]struct{} { return c.events },
		func(d *Driver, h uintptr) int32 { return d.cuEventDestroy(h) }}
	streamKind = kind[*Stream]{"stream", "destroyed", "cuStreamDestroy_v2",
		func(c *Context) map[*Stream]struct{} { return c.streams },
		func(d *Driver, h uintptr) int32 { return d.cuStreamDestroy(h) }}
	moduleKind = kind[*Module]{"module", "unloaded", "cuModuleUnload",
		func(c *Context) map[*Module]struct{} { return c.modules },
		func(d *Driver, h uintptr) int32 { return d.cuModuleUnload(h) }}
)

// record adds x, just created, to its context's registry.
func (k kind[T]) record(x T) {
	c := x.base().c
	c.mu.Lock()
	k.registry(c)[x] = struct{}{}
	c.mu.Unlock()
}

// release is every Destroy (and Module.Unload): it marks x dead (an error
// when x is nil or dead already), takes it out of its context's registry
// (ErrClosed when Close took it first) and ends its handle.
func (k kind[T]) release(x T) error {
	var none T
	if x == none || !x.base().dead.CompareAndSwap(false, true) {
		return fmt.Errorf("cuda: %s is nil or %s already", k.what, k.ended)
	}
	o := x.base()
	c := o.c
	c.mu.Lock()
	reg := k.registry(c)
	_, ok := reg[x]
	delete(reg, x)
	c.mu.Unlock()
	if !ok {
		return ErrClosed // Close took it
	}
	return c.run(func() error { return c.d.check(k.call, k.end(c.d, o.h)) })
}

// releaseAll marks every object of set dead and ends its handle, passing
// each call's result to add; Close calls it with the context current.
func (k kind[T]) releaseAll(d *Driver, set map[T]struct{}, add func(call string, r int32)) {
	for x := range set {
		o := x.base()
		o.dead.Store(true)
		add(k.call, k.end(d, o.h))
	}
}
