#!/usr/bin/env python3
"""summarize.py - the tables of bench/gpu/run.sh from its logs.

    summarize.py <log dir> <suite> <find budget s>

One row per precision and N: totals over the network's layers (count x median layer
time, ms) of convfind replayed from a CUDA graph and per call from C, each in the
faster layout per layer ("best") and NCHW only; PyTorch replayed from a graph and eager,
likewise; cuDNN's legacy Find per call, the faster of its NCHW and NHWC runs.  Ratios
are convfind over PyTorch, both graph-replayed; "worst layer" is the largest per-layer
ratio, best layout against best layout.  Find columns: convfind's first calls with Find
(plan creation and first execution) over both layouts, and what Find adds to them (those
minus the first calls of a process that creates plans without Find, HEURISTIC policy);
PyTorch's cudnn.benchmark cost (first calls with it on minus off, both layouts); legacy
Find's time (both layouts).  split is convfind's
CONVFIND_MATH_ALLOW_SPLIT_TF32 against the peers' strict fp32.
"""
import os
import re
import sys

MODES = {"fp32": "strict fp32 (PyTorch allow_tf32=False)",
         "split": "split_tf32 (peers: strict fp32)",
         "tf32": "tf32 (PyTorch allow_tf32=True)",
         "fp16": "fp16", "bf16": "bf16"}
KV = re.compile(r"(\w+)=([-\w.:+,]+)")


def read(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def fields(line):
    return dict(KV.findall(line))


def convfind_layers(lines):
    """{layout: {name: (count, call_ms, graph_ms)}}, {layout: {call, graph, find_s}}."""
    layers, totals = {}, {}
    for ln in lines:
        p = ln.split()
        if ln.startswith("layer ") and "graph_ms=" in ln:
            f = fields(ln)
            layers.setdefault(p[4], {})[p[1]] = (int(p[2][1:]), float(f["call_ms"]),
                                                 float(f["graph_ms"]))
        elif ln.startswith("RESULT convfind"):
            f = fields(ln)
            totals[f["layout"]] = f
    return layers, totals


def pytorch(lines, prec, n):
    layers, totals = {}, {}
    for ln in lines:
        p = ln.split()
        if ln.startswith("layer ") and p[3] == prec and p[4] == f"n={n}":
            f = fields(ln)
            layers.setdefault(p[5], {})[p[1]] = (int(p[2][1:]), float(f["first_ms"]),
                                                 float(f["eager_ms"]), float(f["graph_ms"]))
        elif ln.startswith(f"RESULT pytorch {prec} n={n} "):
            f = fields(ln)
            totals[f["layout"]] = f
    return layers, totals


def legacy(logs, suite, prec, n):
    best, find_s = None, 0.0
    for layout in ("nchw", "nhwc"):
        for ln in read(os.path.join(logs, f"{suite}-{prec}-n{n}-legacy-{layout}.log")):
            if ln.startswith("RESULT legacy_find"):
                f = fields(ln)
                total = float(f["total_ms"])
                find_s += float(f["find_s"])
                if best is None or total < best[0]:
                    best = (total, layout)
    return best, find_s


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    logs, suite, budget = sys.argv[1], sys.argv[2], sys.argv[3]
    head = ("| suite | math mode | N | convfind graph (best / NCHW) | convfind call | "
            "PyTorch graph (best / NCHW) | PyTorch eager | legacy Find | / PyTorch "
            "(best / NCHW) | worst layer | convfind first calls with Find s (budget) | "
            "convfind Find cost s | PyTorch benchmark cost s | legacy Find s |")
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for fname in sorted(os.listdir(logs)):
        m = re.match(rf"{re.escape(suite)}-(\w+)-n(\d+)-convfind\.log$", fname)
        if not m:
            continue
        prec, n = m.group(1), int(m.group(2))
        peer = "fp32" if prec == "split" else prec
        cl, ct = convfind_layers(read(os.path.join(logs, fname)))
        on = read(os.path.join(logs, f"{suite}-pytorch-on-n{n}.log"))
        off = read(os.path.join(logs, f"{suite}-pytorch-off-n{n}.log"))
        pl, pt = pytorch(on, peer, n)
        pl_off, _ = pytorch(off, peer, n)
        lg, lg_find = legacy(logs, suite, peer, n)
        _, heur = convfind_layers(read(os.path.join(
            logs, f"{suite}-{prec}-n{n}-convfind-heuristic.log")))
        if "best" not in ct:
            print(f"| {suite} | {MODES.get(prec, prec)} | {n} | no result ({fname}) |")
            continue
        cb, cn = ct["best"], ct.get("nchw", {})
        pb, pn = pt.get("best"), pt.get("nchw")
        worst, worst_name = None, "-"
        for name in cl.get("nchw", {}):
            mine = min(cl[l][name][2] for l in cl if name in cl[l])
            theirs = [pl[l][name][3] for l in pl if name in pl[l]]
            if theirs and min(theirs) > 0:
                r = mine / min(theirs)
                if worst is None or r > worst:
                    worst, worst_name = r, name
        bench_s = None
        if pl and pl_off:
            bench_s = sum(pl[l][k][1] - pl_off[l][k][1] for l in pl for k in pl[l]
                          if l in pl_off and k in pl_off[l]) / 1e3
        find_cost = (float(cb["find_s"]) - float(heur["best"]["find_s"])
                     if "best" in heur else None)
        ratio_b = float(cb["graph_ms"]) / float(pb["graph_ms"]) if pb else None
        ratio_n = (float(cn["graph_ms"]) / float(pn["graph_ms"])
                   if pn and cn and float(pn["graph_ms"]) > 0 else None)
        print(f"| {suite} | {MODES.get(prec, prec)} | {n} | {fmt(float(cb['graph_ms']))} / "
              f"{fmt(float(cn['graph_ms'])) if cn else '-'} | {fmt(float(cb['call_ms']))} | "
              f"{fmt(float(pb['graph_ms'])) if pb else '-'} / "
              f"{fmt(float(pn['graph_ms'])) if pn else '-'} | "
              f"{fmt(float(pb['eager_ms'])) if pb else '-'} | "
              f"{fmt(lg[0]) + ' ' + lg[1] if lg else '-'} | {fmt(ratio_b, 2)} / "
              f"{fmt(ratio_n, 2)} | {fmt(worst, 2)} {worst_name} | {cb['find_s']} ({budget}) | "
              f"{fmt(find_cost, 2)} | {fmt(bench_s, 2)} | {fmt(lg_find, 2) if lg else '-'} |")


if __name__ == "__main__":
    main()
