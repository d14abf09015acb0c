#!/usr/bin/env python3
"""find_trace.py - where Find's time went, from CONVFIND_FIND_TRACE=1 logs.

    find_trace.py [--compiled MS] <log> [<log> ...]

Per log (e.g. bench_convfind's with the trace on, as bench/gpu/run.sh runs it): the
number of Finds, candidates per Find, and the seconds spent in all of them listing
candidates, preparing them (finalizing plans, compiling runtime-compiled engines), checking
them (validation runs, the first loading of each kernel) and timing them, and the Finds'
total.  The per-candidate phases do not include the final round and knob refinement,
which are the rest of the total.

--compiled MS lists, instead, every candidate whose preparation took more than MS
milliseconds (on the H200 a plan finalization takes under 1 ms and a runtime compilation
100-300 ms): its layer and caller layout, its place in the Find's order (0: the first
configuration of the caller's layout's list), and whether the layer chose it; then, per
log, how many there were first and not first in the order, how many of each won, and the
milliseconds prepared for those that lost.
"""
import re
import sys

CAND = re.compile(r"find: candidate (\S+) \w+ prepare_ms=([\d.]+) check_ms=([\d.]+) "
                  r"timing_ms=([\d.]+)")
LAYER = re.compile(r"layer (\S+) .* (nchw|nhwc) .* (cuda\.\S+)")
DONE = re.compile(r"find: done candidates=(\d+) list_ms=([\d.]+) total_ms=([\d.]+)")


def summarize(path):
    finds = cands = 0
    listed = total = prepare = check = timing = 0.0
    with open(path, errors="replace") as f:
        for line in f:
            m = CAND.match(line)
            if m:
                prepare += float(m[2])
                check += float(m[3])
                timing += float(m[4])
                continue
            m = DONE.match(line)
            if m:
                finds += 1
                cands += int(m[1])
                listed += float(m[2])
                total += float(m[3])
    if not finds:
        return f"{path}: no Find traced"
    return (f"{path}: finds={finds} candidates/find={cands / finds:.1f} total_s={total / 1e3:.2f} "
            f"list_s={listed / 1e3:.2f} prepare_s={prepare / 1e3:.2f} check_s={check / 1e3:.2f} "
            f"timing_s={timing / 1e3:.2f} rest_s={(total - listed - prepare - check - timing) / 1e3:.2f}")


def compiled(path, threshold_ms):
    """The --compiled listing of one log (bench_convfind prints a layer's line after the
    trace of its Find)."""
    out, cands = [], []
    first, won, lost_ms = [0, 0], [0, 0], 0.0
    with open(path, errors="replace") as f:
        for line in f:
            m = CAND.match(line)
            if m:
                cands.append((m[1], float(m[2])))
                continue
            m = LAYER.match(line)
            if not m:
                continue
            for place, (name, ms) in enumerate(cands):
                if ms <= threshold_ms:
                    continue
                chose = name == m[3]
                first[place > 0] += 1
                won[place > 0] += chose
                lost_ms += 0.0 if chose else ms
                out.append(f"  {m[1]:34s} {m[2]} {name:30s} place {place:2d} of {len(cands):2d} "
                           f"prepare_ms={ms:.1f}{' chosen' if chose else ''}")
            cands = []
    out.append(f"{path}: first {first[0]} (chosen {won[0]}), not first {first[1]} "
               f"(chosen {won[1]}); prepare ms of those not chosen {lost_ms:.0f}")
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    threshold = None
    if args[:1] == ["--compiled"] and len(args) > 1:
        threshold, args = float(args[1]), args[2:]
    if not args:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for path in args:
        print(summarize(path) if threshold is None else compiled(path, threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
