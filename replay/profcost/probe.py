"""traceaudit's probe of torch.profiler's host cost on this machine.

Times two loops of small PyTorch ops, without the profiler and under
torch.profiler (CPU and CUDA activities, its defaults otherwise), in
interleaved rounds, and counts the host events the profiler records for
them (CPU operators and CUDA runtime/driver calls, the events traceaudit
counts on a trace's main thread). Prints one JSON line: the profiler's
cost per recorded event in each round, in ns.

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

    def timed(f):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        f(ops)
        torch.cuda.synchronize()
        return time.perf_counter_ns() - t0

    def events(f):
        with torch.profiler.profile(activities=acts) as p:
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
        host = ("cpu_op", "cuda_runtime", "cuda_driver")
        return sum(1 for e in doc.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in host)

    for f in loops:
        f(ops)  # warm: allocator, kernels, the first profile's setup
    counts = [events(f) for f in loops]
    per_round = []
    for _ in range(rounds):
        extra = 0
        for f in loops:
            plain = timed(f)
            with torch.profiler.profile(activities=acts):
                f(200)  # the profiler's own warm-up, not timed
                prof = timed(f)
            extra += prof - plain
        per_round.append(extra / max(sum(counts), 1))
    print(json.dumps({"torch": torch.__version__, "ops": ops, "events": sum(counts),
                      "event_ns_rounds": [round(x) for x in per_round]}))


if __name__ == "__main__":
    main()
