#!/usr/bin/env python3
"""find_trace.py - where Find's time went, from CONVFIND_FIND_TRACE=1 logs.

    find_trace.py <log> [<log> ...]

Per log (e.g. bench_convfind's with the trace on, as bench/gpu/run.sh runs it): the
number of Finds, candidates per Find, and the seconds spent in all of them listing
candidates, preparing them (finalizing plans, compiling runtime-compiled engines), checking
them (validation runs, the first loading of each kernel) and timing them, and the Finds'
total.  The per-candidate phases do not include the final round and knob refinement,
which are the rest of the total.
"""
import re
import sys

CAND = re.compile(r"find: candidate \S+ \w+ prepare_ms=([\d.]+) check_ms=([\d.]+) "
                  r"timing_ms=([\d.]+)")
DONE = re.compile(r"find: done candidates=(\d+) list_ms=([\d.]+) total_ms=([\d.]+)")


def summarize(path):
    finds = cands = 0
    listed = total = prepare = check = timing = 0.0
    with open(path, errors="replace") as f:
        for line in f:
            m = CAND.match(line)
            if m:
                prepare += float(m[1])
                check += float(m[2])
                timing += float(m[3])
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


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for path in sys.argv[1:]:
        print(summarize(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
