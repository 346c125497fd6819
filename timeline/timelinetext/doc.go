// Package timelinetext reads and writes a timeline as line-oriented text,
// for tests (txtar files under analyze/passes/*/testdata) and for dumping a
// real trace's timeline to make test cases from it.
//
// One line declares one thing; blank lines and text after '#' (outside a
// string) are ignored. Times are decimal numbers with an optional unit (ns,
// us, ms, s; bare numbers are nanoseconds): "0", "250us", "4.2ms". An END
// is a time or "+DURATION"; without one the event is an instant. Sizes take
// B, KiB, MiB, GiB, kB, MB or GB: "64MiB". Names are Go-quoted strings.
//
//	source path="run.sqlite" format="nsys-sqlite" version="2025.3"   # optional
//	observed gpu api os nvtx ops annotations dataloader memkinds can-os can-nvtx can-annotations
//	device 0 "NVIDIA H200" sms=132 mem=141GiB
//	track host/1/1 "python"        # declares a track (in this order), naming a thread
//	dist rank=0 world=2 backend="nccl"   # the job the trace belongs to
//	origin 1732812345000000000     # later times are relative to this one
//
//	KIND TRACK START [END] ["NAME"] [key=value | flag]...
//
//	range  host/1/1 0 +10ms "ProfilerStep#1"                 # kind= from the name: step, dataloader, else nvtx
//	api    host/1/1 1ms +10us "cudaLaunchKernel" corr=7     # class= from the name
//	kernel gpu0/stream7 1.1ms +4ms "gemm" corr=7
//	memcpy gpu0/stream7 5ms +2ms corr=8 dir=HtoD src=pageable dst=device bytes=64MiB
//	os     host/1/1 9ms +300us "munmap"
//
// Kinds are timeline.Kind's names: kernel, memcpy, memset, gpu-sync, api,
// os, range, op, marker. Tracks are host/PID/TID or gpuDEV/streamID. Keys:
// corr, proc (scopes corr; default 0), bytes, dir (HtoD, DtoH, DtoD, HtoH,
// PtoP, unified, array), src and dst (pageable, pinned, device, managed,
// array, host), class (an API class: launch, memcpy, memcpy-async, memset,
// sync, alloc, stream-wait, other), kind (a range kind: nvtx, annotation,
// step, dataloader, other). Flags: driver, graph, open. A kernel that is a
// collective says so with coll="allreduce" and optionally group="0",
// ranks=N, dtype="Float", seq=N; its bytes= is then the message size
// (kernels named nccl* are communication by their name alone).
//
// Two shorthands write an API call and the GPU work it launched, linked by
// a fresh correlation id unless corr= is given:
//
//	launch host/1/1 1ms +10us gpu0/stream7 1.1ms +4ms "gemm" [api="cuLaunchKernel"] [graph]
//	copy   host/1/1 5ms +2ms gpu0/stream7 5ms +2ms dir=HtoD src=pageable dst=device bytes=64MiB [api="cudaMemcpy"]
//
// (the call defaults to cudaLaunchKernel and cudaMemcpyAsync; a copy's name
// to "Memcpy <dir>").
//
// A repeat block writes its lines N times, each time EVERY later (blocks
// nest; directives stay outside them):
//
//	repeat 4 10ms
//	range host/1/1 0 +10ms "ProfilerStep#1"
//	launch host/1/1 0 +5us gpu0/stream7 2ms +8ms "gemm"
//	end
//
// Without an observed line, what the input observed is derived from the
// events: GPU work, API calls, OS calls (and that OS calls can be traced),
// NVTX ranges, annotations, DataLoader spans, host ops, and memory kinds
// when a copy names one. Write an observed line to say otherwise (a trace
// whose profiler cannot record OS calls, an export without NVTX).
//
// Decode builds the timeline with timeline.Builder, so events may come in
// any order, API calls link to GPU work by (proc, corr), and the result is
// validated. Encode writes a timeline that Decode reads back equal.
package timelinetext
