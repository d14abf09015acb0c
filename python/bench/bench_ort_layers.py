"""Per convolution of a model, inside the network: ONNX Runtime's node time against
convfind's plan.execute, and what convfind's Find measured for the same key (a
benchmark, not a test).

ONNX Runtime's times come from its profiler (SessionOptions.enable_profiling) on a plain
session at its default optimization level; convfind's from plan.execute called in the
network's order on the network's own activations, with the plans (and decisions) of a
convfind.onnxruntime.InferenceSession of the same model.  The two alternate in rounds.
`find_ms` is Find's median for the chosen algorithm, measured with the layer run again
and again: a layer much slower in the network than under Find points at what Find's
timing does not see (weights and activations no longer in cache).

    PYTHONPATH=build/python/package:python/tests python3 python/bench/bench_ort_layers.py \\
        --model resnet50 --batch 1 --rounds 10
"""

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import convfind  # noqa: E402
import models  # noqa: E402
from bench_ort import SETTLE_S, SIZES, convfind_session, segments_of, values  # noqa: E402
from convfind.onnx._graph import convolutions  # noqa: E402


def run_timed(segments, inputs, times):
    """Segment.run, timing each plan.execute into times[step index]; the outputs go
    where a session's segment writes them (kept arrays, residuals in place)."""
    first = 0
    for seg in segments:
        def timed(k, plan, x, z, y, first=first):
            t0 = time.perf_counter()
            out = plan.execute(x, z=z, out=y)
            times[first + k].append(time.perf_counter() - t0)
            return out
        seg.run([inputs[n] for n in seg.inputs], timed)
        first += len(seg.steps)


def find_ms(state, plan):
    """Find's median for the plan's algorithm under the plan's key."""
    results = state.context.find(plan.input_shape, state.w.shape, b=state.b is not None,
                                 z=plan.has_residual or None, weights="constant",
                                 **state.kwargs)
    return next((r.median_ms for r in results if r.algorithm == plan.algorithm), float("nan"))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet50", choices=list(SIZES))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--policy", default="hybrid")
    parser.add_argument("--db", default=":memory:")
    args = parser.parse_args()
    ctx = convfind.Context(threads=args.threads, policy=args.policy, db=args.db)
    model = models.MODELS[args.model]()
    x = np.random.default_rng(0).standard_normal((args.batch, 3) + SIZES[args.model])
    feed = {"input": x.astype(np.float32)}
    with tempfile.TemporaryDirectory(prefix="convfind_bench_") as profile_dir:
        node_times, ours, cf_times = measure(model, feed, args, ctx, profile_dir)
    names = [n for s in ours.segments for n in s]
    _, convs, _ = convolutions(model, resolve=False)
    # ONNX Runtime names a fused node after one of the nodes it replaced (+ "_nchwc").
    groups = {c.name: [c.node.name] + [n.name for n in c.fused] for c in convs}

    def ort_ms(conv):
        for name in groups[conv]:
            for key in (name, name + "_nchwc"):
                if key in node_times:
                    return statistics.median(node_times[key][-2 * args.rounds:]) / 1e3
        return float("nan")

    states = [step[0] for s in segments_of(ours) for step in s.steps]
    print(f"{args.model} N={args.batch}, {args.threads} threads, {args.rounds} rounds x 2, "
          f"convfind {convfind.__version__}, onnxruntime {ort.__version__}")
    print(f"{'conv':10s} {'ort_ms':>7s} {'cf_ms':>7s} {'cf/ort':>6s} {'find_ms':>7s}  "
          "algorithm  problem")
    total = [0.0, 0.0, 0.0]
    for name, state, t in zip(names, states, cf_times):
        (plan,) = state.plans.values()
        o, c, f = ort_ms(name), statistics.median(t) * 1e3, find_ms(state, plan)
        total = [total[0] + o, total[1] + c, total[2] + f]
        print(f"{name:10s} {o:7.3f} {c:7.3f} {c / o:6.2f} {f:7.3f}  {plan.algorithm} "
              f"({plan.source})  {plan.describe()}")
    print(f"{'total':10s} {total[0]:7.2f} {total[1]:7.2f} {total[1] / total[0]:6.2f} "
          f"{total[2]:7.2f}")


def measure(model, feed, args, ctx, profile_dir):
    """(ONNX Runtime's node times in us by node name, the convfind session, convfind's
    plan.execute times in s per convolution), rounds alternating the two."""
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(profile_dir, "ort")
    plain = ort.InferenceSession(model.SerializeToString(), so,
                                 providers=["CPUExecutionProvider"])
    ours = convfind_session(model, args.threads, ctx)
    ours.run(None, feed)  # plans (and tunes) every convolution
    segments = segments_of(ours)
    inputs = values(model, {n for s in segments for n in s.inputs}, feed)
    cf_times = [[] for s in ours.segments for _ in s]
    for _ in range(2):
        plain.run(None, feed)
        run_timed(segments, inputs, [[] for _ in cf_times])
    for _ in range(args.rounds):
        time.sleep(SETTLE_S)
        for _ in range(2):
            plain.run(None, feed)
        time.sleep(SETTLE_S)
        for _ in range(2):
            run_timed(segments, inputs, cf_times)
    node_times = collections.defaultdict(list)
    with open(plain.end_profiling()) as f:
        for e in json.load(f):
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                node_times[e["name"][:-len("_kernel_time")]].append(e["dur"])
    return node_times, ours, cf_times


if __name__ == "__main__":
    main()
