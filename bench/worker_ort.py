#!/usr/bin/env python3
"""worker_ort.py - ONNX Runtime's CPU provider as a benchmark worker (docs/benchmarks.md).

    worker_ort.py --threads T [--warmups W] [--min-reps R] [--min-ms MS]

The same line protocol as the C workers (bench/worker_main.c): "prep ID PROBLEM",
"time ID", "drop ID", "quit"; the first line is "ready NAME<TAB>SETTINGS".

How ONNX Runtime is run, at its fastest and without Python's cost counted against it:
- One model per layer holding K identical Conv (or ConvTranspose) nodes that all read
  the one input X, with the weights (and bias) as initializers and the activation as the
  next node (ONNX Runtime fuses it).  One Run executes the layer K times back to back;
  the time per layer is the Run's time / K.  K is chosen at preparation so that the
  per-Run cost outside the kernels (the Python call and the session's Run set-up,
  measured at start on a one-element model) is at most 1% of the layer's time.  Common
  subexpression elimination is disabled so the K nodes stay K.  All K outputs are bound
  (IOBinding) to one preallocated buffer, as a layer's output buffer is reused in the
  other contenders.
- Two variants, the faster kept per layer: all graph optimizations (ORT_ENABLE_ALL:
  MLAS's NCHWc layout, whose input reorder is shared by the K nodes and whose output
  reorder is timed) and ORT_ENABLE_EXTENDED (NCHW, no reorder).
- intra_op_num_threads=T, inter_op_num_threads=1, sequential execution, intra-op
  spinning allowed (its default and fastest).
A program, not a test: nothing here asserts a timing.
"""
import argparse
import math
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import suite_format as sf

MAX_COPIES = 64
MAX_OUTPUT_BYTES = 256 << 20
ACT_NODES = {"relu": "Relu", "leaky_relu": "LeakyRelu", "clip": "Clip", "sigmoid": "Sigmoid",
             "tanh": "Tanh", "hard_sigmoid": "HardSigmoid"}
LEVELS = (("nchwc", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
          ("nchw", ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED))


def layer_model(lay, copies, rng):
    """The ONNX model of `copies` copies of the layer, all reading X."""
    wshape = ((lay.c, lay.k // lay.group) if lay.op == "convT"
              else (lay.k, lay.c // lay.group)) + lay.kern
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, wshape).astype(np.float32), "W")]
    ins = ["X", "W"]
    if lay.bias:
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, lay.k).astype(np.float32), "B"))
        ins.append("B")
    attrs = dict(group=lay.group, kernel_shape=list(lay.kern), pads=list(lay.pads),
                 strides=list(lay.stride), dilations=list(lay.dil))
    if lay.op == "convT":
        attrs["output_padding"] = list(lay.opad)
    act_attrs, act_ins = {}, []
    if lay.act == "leaky_relu":
        act_attrs = dict(alpha=lay.alpha)
    elif lay.act == "hard_sigmoid":
        act_attrs = dict(alpha=lay.alpha, beta=lay.beta)
    elif lay.act == "clip":
        inits += [numpy_helper.from_array(np.array(lay.alpha, np.float32), "lo"),
                  numpy_helper.from_array(np.array(lay.beta, np.float32), "hi")]
        act_ins = ["lo", "hi"]
    nodes, outs = [], []
    yshape = [lay.n, lay.k, *lay.out_spatial()]
    for i in range(copies):
        y = f"Y{i}"
        conv_out = y if lay.act == "none" else f"C{i}"
        nodes.append(helper.make_node("ConvTranspose" if lay.op == "convT" else "Conv", ins,
                                      [conv_out], **attrs))
        if lay.act != "none":
            nodes.append(helper.make_node(ACT_NODES[lay.act], [conv_out, *act_ins], [y],
                                          **act_attrs))
        outs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, yshape))
    graph = helper.make_graph(
        nodes, "layer",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [lay.n, lay.c, *lay.x])],
        outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


class Prepared:
    """A session of the layer's model with its input and every output bound."""

    def __init__(self, lay, copies, level, threads, x, y):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = level
        so.add_session_config_entry("session.intra_op.allow_spinning", "1")
        so.log_severity_level = 3
        self.copies = copies
        self.sess = ort.InferenceSession(
            layer_model(lay, copies, np.random.default_rng(7)), so,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["CommonSubexpressionElimination"])
        self.bind = self.sess.io_binding()
        self.x, self.y = x, y  # kept alive while bound
        self.bind.bind_ortvalue_input("X", x)
        for i in range(copies):
            self.bind.bind_ortvalue_output(f"Y{i}", y)

    def run(self):
        self.sess.run_with_iobinding(self.bind)


def median_ms(prep, warmups, min_reps, min_seconds):
    """The timing protocol of bench/bench_timing.c, per layer execution."""
    for _ in range(warmups):
        prep.run()
    times = []
    start = time.perf_counter()
    while len(times) < 1000 and (len(times) < min_reps or
                                 time.perf_counter() - start < min_seconds):
        t0 = time.perf_counter()
        prep.run()
        times.append((time.perf_counter() - t0) * 1e3 / prep.copies)
    return statistics.median(times)


class Worker:
    def __init__(self, args):
        self.threads = args.threads
        self.timing = (args.warmups, args.min_reps, args.min_ms * 1e-3)
        self.prepared = {}
        tiny = sf.Layer(name="tiny", count=1, op="conv", n=1, c=1, k=1, group=1, x=(1, 1),
                        kern=(1, 1), stride=(1, 1), dil=(1, 1), pads=(0, 0, 0, 0), opad=(0, 0))
        p = self.make(tiny, 1, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        self.overhead_ms = median_ms(p, 20, 200, 0.05)

    def make(self, lay, copies, level):
        rng = np.random.default_rng(11)
        x = ort.OrtValue.ortvalue_from_numpy(
            rng.uniform(-1, 1, (lay.n, lay.c, *lay.x)).astype(np.float32))
        y = ort.OrtValue.ortvalue_from_numpy(
            np.empty((lay.n, lay.k, *lay.out_spatial()), np.float32))
        return Prepared(lay, copies, level, self.threads, x, y)

    def settings(self):
        return (f"ONNX Runtime {ort.__version__} CPUExecutionProvider (MLAS), "
                f"{self.threads} intra-op threads, sequential, spinning allowed, faster of "
                f"ORT_ENABLE_ALL (NCHWc; output reorder timed) and ORT_ENABLE_EXTENDED "
                f"(NCHW) per layer, bias and activation as ONNX nodes it fuses, K copies of "
                f"the layer per Run: the per-Run cost outside the kernels "
                f"({self.overhead_ms * 1e3:.1f} us, Python call + Run set-up) is at most 1% "
                f"of a layer's time; no ISA limit (ONNX Runtime has no setting for it)")

    def prep(self, lid, text):
        lay = sf.Layer.from_wire(text)
        best = None
        for vname, level in LEVELS:
            one = self.make(lay, 1, level)
            t1 = median_ms(one, 2, 5, 0.02)
            kernel_ms = max(t1 - self.overhead_ms, 1e-6)
            copies = min(MAX_COPIES, max(1, math.ceil(self.overhead_ms / (0.01 * kernel_ms))),
                         max(1, MAX_OUTPUT_BYTES // (4 * lay.y_elems())))
            p = self.make(lay, copies, level) if copies > 1 else one
            ms = median_ms(p, 2, 5, 0.02)
            if best is None or ms < best[0]:
                best = (ms, p, f"{vname}:K={copies}")
        self.prepared[lid] = best[1]
        return f"ok {lid} {best[2]}"

    def handle(self, line):
        verb, _, rest = line.partition(" ")
        lid_text, _, text = rest.partition(" ")
        lid = int(lid_text) if lid_text.isdigit() else None
        if verb == "prep" and lid is not None:
            try:
                return self.prep(lid, text)
            except Exception as e:  # ONNX Runtime cannot run it: say why, go on
                return f"na {lid} {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if verb == "time" and lid is not None:
            p = self.prepared.get(lid)
            return f"ms {lid} {median_ms(p, *self.timing):.6f}" if p else f"na {lid} not prepared"
        if verb == "drop" and lid is not None:
            self.prepared.pop(lid, None)
            return f"dropped {lid}"
        return f"error unknown or malformed request '{line}'"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--warmups", type=int, default=2)
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--min-ms", type=float, default=50.0)
    w = Worker(ap.parse_args())
    print(f"ready onnxruntime\t{w.settings()}", flush=True)
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            break
        if line:
            print(w.handle(line), flush=True)


if __name__ == "__main__":
    main()
