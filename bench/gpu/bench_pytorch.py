#!/usr/bin/env python3
"""bench_pytorch.py - PyTorch's cuDNN convolutions on a network's layers (GPU peer).

    bench_pytorch.py <layers.csv> <precisions> <Ns> [--benchmark on|off] [--first-only]

<precisions> and <Ns> are comma-separated (fp32, tf32, fp16, bf16; e.g. 32,1).  Each
layer computes what convfind's does (bench/gpu/layers.h): act(conv2d(x, w, b) + z), with
the residual z and the activation (ReLU, ReLU6 or none) of the network.  Precision as
convfind's math modes: fp32 with allow_tf32 = False, tf32 with allow_tf32 = True, fp16
and bf16 tensors.  torch.backends.cudnn.benchmark as --benchmark says (default on: PyTorch
runs its own cuDNN benchmark per shape in the first call).  Per precision, N, and layout
(NCHW, channels_last), per layer:
  first_ms   the first call, host clock around it with synchronizations (includes the
             benchmark when it is on: "on" minus "off" is what the benchmark costs);
  eager_ms   15 samples of 10 calls between CUDA events after 5 warm-ups, median / 10;
  graph_ms   the 10 calls captured into a CUDA graph, 15 replays timed, median / 10, so
             that Python's per-call cost is not counted.
--first-only skips the two timings.  Lines:
  layer <name> x<count> <precision> n=<N> <layout> first_ms=<a> eager_ms=<b> graph_ms=<c>
  RESULT pytorch <precision> n=<N> layout=<nchw|nhwc|best> eager_ms=<x> graph_ms=<y>
         first_s=<z>
where "best" takes each layer in its faster layout (by graph_ms) and first_s sums both.
"""
import csv
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SAMPLES, BATCH, WARMUP = 15, 10, 5


def epilogue_of(row):
    """(residual, activation) as bench/gpu/layers.h's bl_epilogue_of decides them."""
    name, c, k, r = row["name"], int(row["c"]), int(row["k"]), int(row["r"])
    if "project" in name:
        return c == 6 * k, None
    if "mnv2" in name:
        return False, "relu6"
    if "down" in name:
        return False, None
    if "conv3" in name or (r == 1 and k == 4 * c):
        return True, "relu"
    return False, "relu"


def layer_fn(row, n, dtype, fmt, dev):
    c, k, g = int(row["c"]), int(row["k"]), int(row["group"])
    h, w_ = int(row["h"]), int(row["w"])
    x = torch.randn(n, c, h, w_, device=dev, dtype=dtype).contiguous(memory_format=fmt)
    w = torch.randn(k, c // g, int(row["r"]), int(row["s"]), device=dev,
                    dtype=dtype).contiguous(memory_format=fmt)
    b = torch.randn(k, device=dev, dtype=dtype)
    args = dict(stride=(int(row["stride_h"]), int(row["stride_w"])),
                padding=(int(row["pad_h"]), int(row["pad_w"])),
                dilation=(int(row["dil_h"]), int(row["dil_w"])), groups=g)
    residual, act = epilogue_of(row)
    # Y's shape by arithmetic, not by a convolution on the device: at N=1 that would be
    # this very problem, and with cudnn.benchmark on it would run the benchmark here,
    # before measure() times the first call (so its cost read as zero at N=1).
    y_hw = [(size + 2 * pad - dil * (kern - 1) - 1) // stride + 1
            for size, pad, dil, kern, stride in zip((h, w_), args["padding"], args["dilation"],
                                                    (int(row["r"]), int(row["s"])),
                                                    args["stride"])]
    z = (torch.randn(n, k, *y_hw, device=dev, dtype=dtype).contiguous(memory_format=fmt)
         if residual else None)

    def fn():
        y = F.conv2d(x, w, b, **args)
        if z is not None:
            y = y + z
        if act == "relu":
            y = F.relu(y)
        elif act == "relu6":
            y = F.relu6(y)
        return y
    return fn


def timed(run):
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(SAMPLES):
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1) / BATCH)
    return statistics.median(ms)


def measure(fn, first_only):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first = (time.perf_counter() - t0) * 1e3
    if first_only:
        return first, 0.0, 0.0

    def eager():
        for _ in range(BATCH):
            fn()
    for _ in range(WARMUP):
        fn()
    eager_ms = timed(eager)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(BATCH):
            fn()
    for _ in range(WARMUP):
        g.replay()
    graph_ms = timed(g.replay)
    return first, eager_ms, graph_ms


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = sys.argv[1:]
    path, precs, ns = args[0], args[1].split(","), [int(v) for v in args[2].split(",")]
    bench = "--benchmark" not in flags or flags[flags.index("--benchmark") + 1] != "off"
    first_only = "--first-only" in flags
    torch.backends.cudnn.benchmark = bench
    print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()} "
          f"benchmark={bench}", flush=True)
    rows = list(csv.DictReader(open(path)))
    dev = torch.device("cuda")
    with torch.no_grad():  # cuDNN and the allocator start here, not in the first layer
        F.conv2d(torch.randn(1, 8, 9, 9, device=dev), torch.randn(8, 8, 3, 3, device=dev))
        torch.cuda.synchronize()
    for prec in precs:
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec, torch.float32)
        for n in ns:
            per = {}
            for layout in ("nchw", "nhwc"):
                fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
                per[layout] = []
                for row in rows:
                    with torch.no_grad():
                        fn = layer_fn(row, n, dtype, fmt, dev)
                        first, eager_ms, graph_ms = measure(fn, first_only)
                    del fn
                    per[layout].append((first, eager_ms, graph_ms))
                    print(f"layer {row['name']:22s} x{row['count']} {prec} n={n} {layout} "
                          f"first_ms={first:.2f} eager_ms={eager_ms:.4f} "
                          f"graph_ms={graph_ms:.4f}", flush=True)
            counts = [int(r["count"]) for r in rows]
            for layout in ("nchw", "nhwc", "best"):
                if layout == "best":
                    t = [min(a, b, key=lambda v: v[2]) for a, b in zip(per["nchw"], per["nhwc"])]
                    first_s = sum(v[0] for v in per["nchw"] + per["nhwc"]) / 1e3
                else:
                    t = per[layout]
                    first_s = sum(v[0] for v in t) / 1e3
                eager = sum(c * v[1] for c, v in zip(counts, t))
                graph = sum(c * v[2] for c, v in zip(counts, t))
                print(f"RESULT pytorch {prec} n={n} layout={layout} eager_ms={eager:.4f} "
                      f"graph_ms={graph:.4f} first_s={first_s:.2f}", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
