"""End-to-end latency of models rewritten by convfind.onnxruntime against plain ONNX
Runtime, in the same run (a benchmark, not a test).

For each model and batch size: a plain ONNX Runtime session and a
convfind.onnxruntime.InferenceSession, both on `--threads` threads, timed in interleaved
rounds (plain, convfind, plain, ...) so that drifts of the machine hit both, each block
of runs starting once the previous contender's threads are idle; prints the
median latency of each and the ratio, and, timed in the same rounds, the convfind
session's segments run directly on the same activations without ONNX Runtime ("convs
alone": what the session costs beyond that is ONNX Runtime's other nodes and the
custom-operator path).  Then the cost of one custom-operator call: a
model of one 1x1x1x1 convolution, rewritten and plain, whose difference is what the
Python custom-op path adds per convolution.  The convfind context tunes with policy
`--policy` into the find database at `--db` (default: in memory) before timing.

    PYTHONPATH=build/python/package:python/tests python3 python/bench/bench_ort.py \\
        --models resnet50 mobilenet_v2 unet_small --batch 1 8 --rounds 5
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import convfind  # noqa: E402
import convfind.onnxruntime as cfort  # noqa: E402
import models  # noqa: E402
from convfind.onnxruntime import _kernel  # noqa: E402

SIZES = {"resnet50": (224, 224), "mobilenet_v2": (224, 224), "unet_small": (256, 256)}

# ONNX Runtime's intra-op threads spin for about 50 ms after a run returns (measured here
# as process CPU time while idle: 0.9 cores over the first 50 ms, 0.4 over 100 ms): a
# contender started at once shares the cores with them (a convfind session's ResNet-50 run
# took 82 ms right after a plain run, 52 ms 200 ms after one).  Each block of runs waits
# this long first.
SETTLE_S = 0.2


def plain_session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def convfind_session(model, threads, ctx):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return cfort.InferenceSession(model, so, context=ctx)


def segments_of(session):
    """The Segment objects of a convfind.onnxruntime.InferenceSession, in graph order."""
    ids = [a.s.decode() for n in session.model.graph.node for a in n.attribute
           if n.op_type.startswith("ConvfindSegment_") and a.name == "node"]
    return [_kernel._nodes[i] for i in ids]


def values(model, names, feed):
    """The values `names` (graph inputs among them) of a plain ONNX Runtime run."""
    wanted = [n for n in names if n not in feed]
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                              for n in wanted)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = dict(zip([o.name for o in model.graph.output], sess.run(None, feed)))
    return {n: feed[n] if n in feed else out[n] for n in names}


def time_runs(run, runs):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        out.append(time.perf_counter() - t0)
    return out


def compare(label, model, feed, args, ctx):
    plain, ours = plain_session(model, args.threads), convfind_session(model, args.threads, ctx)
    segments = segments_of(ours)
    inputs = values(model, {n for s in segments for n in s.inputs}, feed)
    contenders = [lambda: plain.run(None, feed), lambda: ours.run(None, feed),
                  lambda: [s.run([inputs[n] for n in s.inputs]) for s in segments]]
    for run in contenders:  # warm-up; convfind plans (and tunes) here
        time_runs(run, 2)
    times = [[] for _ in contenders]
    for _ in range(args.rounds):
        for run, t in zip(contenders, times):
            time.sleep(SETTLE_S)
            t += time_runs(run, args.runs)
    mp, mc, ma = (statistics.median(t) * 1e3 for t in times)
    print(f"{label:20s} ort {mp:8.3f} ms   convfind {mc:8.3f} ms   ratio {mc / mp:5.2f}   "
          f"convs alone {ma:8.3f} ms")


def one_conv_model():
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["y"])], "one",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 1])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5, help="runs per round and session")
    parser.add_argument("--policy", default="hybrid")
    parser.add_argument("--db", default=":memory:")
    args = parser.parse_args()
    ctx = convfind.Context(threads=args.threads, policy=args.policy, db=args.db)
    print(f"convfind {convfind.__version__}, onnxruntime {ort.__version__}, "
          f"{args.threads} threads, policy {args.policy}, {args.rounds} rounds x {args.runs} runs")
    rng = np.random.default_rng(0)
    for name in args.models:
        model = models.MODELS[name]()
        for n in args.batch:
            x = rng.standard_normal((n, 3) + SIZES[name]).astype(np.float32)
            compare(f"{name} N={n}", model, {"input": x}, args, ctx)
    feed = {"input": np.ones((1, 1, 1, 1), np.float32)}
    plain, ours = plain_session(one_conv_model(), 1), convfind_session(one_conv_model(), 1, ctx)
    tp, tc = [], []
    for _ in range(args.rounds):
        time.sleep(SETTLE_S)
        tp += time_runs(lambda: plain.run(None, feed), 200)
        time.sleep(SETTLE_S)
        tc += time_runs(lambda: ours.run(None, feed), 200)
    mp, mc = statistics.median(tp) * 1e6, statistics.median(tc) * 1e6
    print(f"one 1x1x1x1 conv: ort {mp:.1f} us, convfind custom op {mc:.1f} us: "
          f"{mc - mp:.1f} us per custom-op call")
    print(f"context: {ctx.stats()}")


if __name__ == "__main__":
    main()
