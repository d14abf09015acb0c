#!/usr/bin/env python3
"""bench_ort.py - ONNX Runtime's CPU provider as a benchmark peer, one layer at a time.

    bench_ort.py CSV THREADS > times.csv

For every layer of a ../shared/bench CSV, builds a one-node Conv model (weights as an
initializer, NCHW fp32, no bias, as bench_cpu runs it), runs it with the CPU execution
provider, intra_op_num_threads=THREADS, inter_op_num_threads=1, all graph optimizations,
and prints "name,median_ms" after 3 warm-up runs and at least 10 runs / 0.2 s.
A program, not a test: nothing here asserts a timing.
"""
import csv
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def layer_model(row):
    n, c, h, w, k, r, s = (int(row[x]) for x in ("n", "c", "h", "w", "k", "r", "s"))
    g = int(row["group"])
    oh = (h + 2 * int(row["pad_h"]) - (r - 1) * int(row["dil_h"]) - 1) // int(row["stride_h"]) + 1
    ow = (w + 2 * int(row["pad_w"]) - (s - 1) * int(row["dil_w"]) - 1) // int(row["stride_w"]) + 1
    pads = [int(row["pad_h"]), int(row["pad_w"])] * 2
    rng = np.random.default_rng(7)
    wt = rng.uniform(-1, 1, size=(k, c // g, r, s)).astype(np.float32)
    node = helper.make_node(
        "Conv", ["X", "W"], ["Y"], group=g, kernel_shape=[r, s], pads=pads,
        strides=[int(row["stride_h"]), int(row["stride_w"])],
        dilations=[int(row["dil_h"]), int(row["dil_w"])])
    graph = helper.make_graph(
        [node], row["name"], [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, k, oh, ow])],
        initializer=[numpy_helper.from_array(wt, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    x = rng.uniform(-1, 1, size=(n, c, h, w)).astype(np.float32)
    return model.SerializeToString(), x


def median_ms(sess, x, min_reps=10, min_seconds=0.2):
    feed = {"X": x}
    for _ in range(3):
        sess.run(None, feed)
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
        if len(times) >= 1000:
            break
    return float(np.median(times))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bench_ort.py CSV THREADS")
    threads = int(sys.argv[2])
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        model, x = layer_model(row)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        print(f"{row['name']},{median_ms(sess, x):.4f}", flush=True)


if __name__ == "__main__":
    main()
