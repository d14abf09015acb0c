#!/usr/bin/env python3
"""bench_pytorch.py - PyTorch's cuDNN convolutions on a network's layers (issue 6 peer).

    bench_pytorch.py <layers.csv> <fp32|tf32|fp16> <N>

torch.backends.cudnn.benchmark = True (PyTorch runs its own cuDNN Find per shape), the
same precision policy as convfind (fp32: TF32 off; tf32: TF32 on; fp16: half tensors),
NCHW and channels_last, each layer timed as bench_convfind.c times convfind: 5 warm-up
runs (the first triggers PyTorch's benchmark), then 15 samples of 10 back-to-back runs
between CUDA events, median / 10; inputs are random, not zeros.  The faster layout's
total is the last line:  RESULT pytorch <precision> n=<N> total_ms=<x> layout=<l>
"""
import csv
import statistics
import sys

import torch

SAMPLES, BATCH = 15, 10


def main():
    path, prec, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = prec == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    dtype = torch.float16 if prec == "fp16" else torch.float32
    print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()}", flush=True)
    rows = list(csv.DictReader(open(path)))
    dev = torch.device("cuda")
    totals = {}
    for layout in ("nchw", "channels_last"):
        fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
        total = 0.0
        for r in rows:
            c, k, g = int(r["c"]), int(r["k"]), int(r["group"])
            x = torch.randn(n, c, int(r["h"]), int(r["w"]), device=dev, dtype=dtype)
            w = torch.randn(k, c // g, int(r["r"]), int(r["s"]), device=dev, dtype=dtype)
            x = x.contiguous(memory_format=fmt)
            w = w.contiguous(memory_format=fmt)
            args = dict(stride=(int(r["stride_h"]), int(r["stride_w"])),
                        padding=(int(r["pad_h"]), int(r["pad_w"])),
                        dilation=(int(r["dil_h"]), int(r["dil_w"])), groups=g)
            with torch.no_grad():
                for _ in range(5):
                    torch.nn.functional.conv2d(x, w, None, **args)
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                ms = []
                for _ in range(SAMPLES):
                    e0.record()
                    for _ in range(BATCH):
                        torch.nn.functional.conv2d(x, w, None, **args)
                    e1.record()
                    e1.synchronize()
                    ms.append(e0.elapsed_time(e1) / BATCH)
            med = statistics.median(ms)
            total += int(r["count"]) * med
            print(f"layer {r['name']:22s} x{r['count']} {prec} {layout} median_ms={med:.4f}",
                  flush=True)
        totals[layout] = total
        print(f"pytorch {prec} n={n} layout={layout} total_ms={total:.4f}", flush=True)
    best = min(totals, key=totals.get)
    print(f"RESULT pytorch {prec} n={n} total_ms={totals[best]:.4f} layout={best}")


if __name__ == "__main__":
    main()
