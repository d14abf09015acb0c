"""Per-call cost of Plan.execute from Python (a benchmark, not a test).

Times plan.execute(x, out=y) on a problem so small that the convolution itself costs
well under a microsecond, next to a Python no-op call with the same arguments (the
floor any Python API pays), and prints median and minimum per call.  The target is
<= 5 us per call (docs/python.md).

    PYTHONPATH=build/python/package python3 python/bench/bench_execute_overhead.py
"""

import statistics
import time

import numpy as np

import convfind


def per_call_us(fn, calls=20000, rounds=7):
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples), min(samples)


def main():
    ctx = convfind.Context(threads=1, policy="heuristic", db=":memory:")
    x = np.ones((1, 1, 1, 1), np.float32)
    w = np.ones((1, 1, 1, 1), np.float32)
    plan = ctx.plan(x.shape, w)
    y = np.empty(plan.output_shape, np.float32)

    def noop(x, out=None):
        return out

    rows = [
        ("python no-op call (floor)", lambda: noop(x, out=y)),
        ("plan.execute(x, out=y)", lambda: plan.execute(x, out=y)),
        ("plan.execute(x) (allocates y)", lambda: plan.execute(x)),
        ("ctx.conv(x, w) (plans per call)", lambda: ctx.conv(x, w)),
    ]
    print(f"convfind {convfind.__version__}, 1x1x1x1 conv, algorithm {plan.algorithm}, "
          "1 thread")
    for label, fn in rows:
        median, best = per_call_us(fn, calls=2000 if "conv(" in label else 20000)
        print(f"{label:34s} median {median:7.2f} us   min {best:7.2f} us")


if __name__ == "__main__":
    main()
