"""traceaudit's probe of torch.profiler's host cost on this machine.

Times two loops of small PyTorch ops on the host without the profiler,
first (a profiler session leaves part of its cost in the process after it
ends), then records them under torch.profiler (CPU and CUDA activities, its
defaults otherwise), each run in a range of its own, and reads back from
the exported trace how long each run looks there and how many host events
(CPU operators and CUDA runtime/driver calls, the events traceaudit counts
on a trace's main thread) it recorded. Prints one JSON line: per round,
(the run's length in the trace - its length without the profiler) / its
events, in ns: the profiler's cost per event as a trace shows it.

  gpu  elementwise ops on a 256x256 CUDA tensor, each one launch
  cpu  a sample made as a data pipeline makes it: torch.randn, then
       elementwise passes on the CPU tensor

Usage: python3 probe.py [OPS [ROUNDS]]
"""
import json
import os
import sys
import tempfile
import time


def main():
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    try:
        import torch
    except Exception as e:  # no torch: say so, traceaudit reports it
        print(json.dumps({"error": "cannot import torch: %s" % e}))
        return
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch %s sees no CUDA device" % torch.__version__}))
        return
    y = torch.ones(256, 256, device="cuda")

    def gpu(n):
        for k in range(n):
            if k % 2:
                y.mul_(1.0001)
            else:
                y.add_(0.0001)

    def cpu(n):
        for _ in range(max(n // 81, 1)):
            x = torch.randn(3, 64, 64)
            for _ in range(40):
                x.mul_(0.999).add_(0.001)

    loops = [gpu, cpu]
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]

    def host_ns(f):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        f(ops)
        t = time.perf_counter_ns() - t0
        torch.cuda.synchronize()
        return t

    # The loops without the profiler come first: a profiler session leaves
    # part of its cost in the process after it ends.
    for f in loops:
        f(ops)
    plain = {f.__name__: sorted(host_ns(f) for _ in range(rounds))[rounds // 2] for f in loops}
    with torch.profiler.profile(activities=acts) as p:
        for f in loops:
            f(200)  # the profiler's own warm-up
            for r in range(rounds):
                torch.cuda.synchronize()
                with torch.profiler.record_function("traceaudit-probe %s %d" % (f.__name__, r)):
                    f(ops)
                torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        p.export_chrome_trace(path)
        with open(path) as fh:
            doc = json.load(fh)
    finally:
        os.remove(path)
    # What the trace shows of each profiled run: its range's length, and
    # the host events recorded in it.
    runs, host = {}, []
    for e in doc.get("traceEvents", []):
        if e.get("ph") != "X":
            continue
        name = str(e.get("name", ""))
        if name.startswith("traceaudit-probe "):
            _, loop, r = name.split(" ")
            runs[(loop, int(r))] = [float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), 0]
        elif e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver"):
            host.append(float(e["ts"]))
    for t in host:
        for run in runs.values():
            if run[0] <= t < run[1]:
                run[2] += 1
                break
    per_round, events = [], 0
    for r in range(rounds):
        extra, n = 0.0, 0
        for f in loops:
            run = runs.get((f.__name__, r))
            if run is None:
                continue
            extra += (run[1] - run[0]) * 1000 - plain[f.__name__]
            n += run[2]
        if n > 0:
            per_round.append(extra / n)
            events = max(events, n)
    print(json.dumps({"torch": torch.__version__, "ops": ops, "events": events,
                      "plain_ns": plain, "event_ns_rounds": [round(x) for x in per_round]}))


if __name__ == "__main__":
    main()
