#!/usr/bin/env python3
"""cpu_driver.py - convfind against its CPU peers, interleaved layer by layer, in one run.

    cpu_driver.py [options] SUITE.csv...        (bench/cpu.sh resolves names and `all`)

One long-lived worker process per contender (bench/worker_main.c with contender_*.c,
bench/worker_ort.py), all driven from here over pipes.  Per suite, at each thread count
and ISA level asked for:
  1. Find: the convfind worker runs convfind_find on every layer (in-memory find-db),
     timed alone; its total is reported with the Find budget.
  2. Rounds: in every round, for every layer, each contender in turn (the order rotates
     with round and layer) times the layer (warm-ups, then >= R runs and >= MS ms; its
     median).  A layer's result is the median over rounds.  The machine's speed drifts
     for minutes at a time; interleaving puts every contender in the same period, and
     the median over rounds spread over the run drops a slow period.
  3. Before the next contender is asked, every thread of the last one must be asleep
     (/proc/PID/task/*/stat not 'R'): OpenMP, ONNX Runtime and convfind's pools spin
     after a call, and a spinning thread would take a core from the next contender.
     oneDNN runs with OMP_WAIT_POLICY=active and a bounded GOMP_SPINCOUNT so it sleeps
     soon after; the wait is reported.
--baseline DIR adds a second convfind worker built in DIR (another commit's build): it
Finds and is timed like the others, is not a peer, and each suite reports convfind's
total and per-layer ratio to it, so a change is measured against its predecessor in the
same run.
--regret instead re-times every applicable convfind algorithm on every layer, forced
through the public API, the same interleaved way, and reports how far Find's choice is
from the fastest.  A program, not a test: nothing here asserts a timing.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite_format as sf  # noqa: E402

CONTENDERS = ("convfind", "onednn2", "onednn3", "onnxruntime")
BASELINE = "convfind_base"  # --baseline's worker: a contender, never a peer


class Worker:
    """One contender's process and its line protocol."""

    def __init__(self, key, argv, env):
        self.key = key
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True, bufsize=1)
        ready = self.proc.stdout.readline().rstrip("\n")
        if not ready.startswith("ready "):
            self.proc.kill()
            raise RuntimeError(f"{key} worker did not start ({ready or 'no output'})")
        self.name, _, self.settings = ready[len("ready "):].partition("\t")
        self.gaps, self.not_quiet = [], 0

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"{self.name} worker died on '{line[:80]}'")
        return reply.split()

    def running_threads(self):
        n = 0
        task_dir = f"/proc/{self.proc.pid}/task"
        for tid in os.listdir(task_dir):
            try:
                with open(f"{task_dir}/{tid}/stat") as f:
                    n += f.read().rpartition(")")[2].split()[0] == "R"
            except OSError:  # the thread ended meanwhile
                pass
        return n

    def quiet(self, timeout):
        """Waits until none of the worker's threads runs; records how long it took."""
        t0 = time.perf_counter()
        while self.running_threads():
            if time.perf_counter() - t0 > timeout:
                self.not_quiet += 1
                break
            time.sleep(0.0002)
        self.gaps.append(time.perf_counter() - t0)

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def start_workers(args, keys, threads, isa):
    timing = ["--threads", str(threads), "--warmups", str(args.warmups), "--min-reps",
              str(args.min_reps), "--min-ms", str(args.min_ms)]
    base = dict(os.environ, OMP_NUM_THREADS=str(threads))
    workers = []
    for key in keys:
        env = dict(base)
        if key in ("convfind", BASELINE):
            build = args.build if key == "convfind" else args.baseline
            layout = args.layout if key == "convfind" else args.baseline_layout
            # NCHW is every worker's default: a baseline built before --layout runs too.
            argv = [os.path.join(build, "bench", "bench_worker_convfind"), *timing,
                    "--find-budget", str(args.find_budget),
                    *(["--layout", layout] if layout != "nchw" else [])]
            # The worker loads the libconvfind of its own build, even where the build
            # directory moved (a copy on another machine) and its run path is stale.
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (os.path.abspath(build), env.get("LD_LIBRARY_PATH")) if p)
            if isa != "native":
                env["CONVFIND_ISA"] = isa
        elif key.startswith("onednn"):
            argv = [os.path.join(args.build, "bench", f"bench_worker_{key}"), *timing]
            env.update(OMP_WAIT_POLICY="active", GOMP_SPINCOUNT=str(args.spincount),
                       OMP_PROC_BIND="false")
            if isa != "native":  # both spellings: oneDNN 2.x and 3.x read either
                env["ONEDNN_MAX_CPU_ISA"] = env["DNNL_MAX_CPU_ISA"] = isa.upper()
        else:
            argv = [sys.executable, os.path.join(HERE, "worker_ort.py"), *timing]
            env["OPENBLAS_NUM_THREADS"] = "1"
        workers.append(Worker(key, argv, env))
        if key == BASELINE:
            workers[-1].name = BASELINE
        workers[-1].quiet(args.quiet_timeout)
    return workers


def available(args):
    keys = []
    for key in args.contenders.split(","):
        if key not in CONTENDERS:
            sys.exit(f"cpu_driver: unknown contender {key} (known: {', '.join(CONTENDERS)})")
        exe = os.path.join(args.build, "bench", f"bench_worker_{key}")
        if key != "onnxruntime" and not os.access(exe, os.X_OK):
            print(f"# {key}: {exe} not built, left out (docs/benchmarks.md)")
            continue
        keys.append(key)
    if "convfind" not in keys:
        sys.exit("cpu_driver: the convfind worker is needed")
    if args.baseline:
        exe = os.path.join(args.baseline, "bench", "bench_worker_convfind")
        if not os.access(exe, os.X_OK):
            sys.exit(f"cpu_driver: --baseline: {exe} not built")
        keys.insert(1, BASELINE)
    return keys


def find_phase(cf, layers, timeout):
    """Find on every layer: (seconds, algorithm) per layer."""
    found = []
    for i, lay in enumerate(layers):
        r = cf.ask(f"find {i} {lay.wire()}")
        found.append((float(r[2]), r[3]) if r[0] == "found" else (0.0, "n/a: " + " ".join(r[2:])))
        cf.quiet(timeout)
    return found


def interleave(args, jobs, resident):
    """Times every job, rounds x jobs x workers in rotating order.  A job is
    (worker list, id, wire text); returns {(worker key, id): [ms per round]} and the
    prep info {(worker key, id): text} (None where the worker cannot run it)."""
    info, times = {}, {}

    def prep(w, jid, wire):
        r = w.ask(f"prep {jid} {wire}")
        w.quiet(args.quiet_timeout)
        info[(w.key, jid)] = " ".join(r[2:]) if r[0] == "ok" else None
        if r[0] != "ok":
            info[(w.key, jid, "why")] = " ".join(r[2:])
        return r[0] == "ok"

    if resident:
        for ws, jid, wire in jobs:
            for w in ws:
                prep(w, jid, wire)
    for rnd in range(args.rounds):
        for j, (ws, jid, wire) in enumerate(jobs):
            k = (rnd + j) % len(ws)
            for w in ws[k:] + ws[:k]:
                if resident and not info.get((w.key, jid)):
                    continue
                if not resident and not prep(w, jid, wire):
                    continue
                r = w.ask(f"time {jid}")
                w.quiet(args.quiet_timeout)
                if r[0] == "ms":
                    times.setdefault((w.key, jid), []).append(float(r[2]))
                if not resident:
                    w.ask(f"drop {jid}")
                    w.quiet(args.quiet_timeout)
    return {k: statistics.median(v) for k, v in times.items()}, info


def layer_bytes(lay):
    return 4 * (lay.x_elems() + lay.y_elems() + 2 * lay.w_elems())


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def gaps_text(workers, timeout):
    parts = []
    for w in workers:
        g = sorted(w.gaps) or [0.0]
        parts.append(f"{w.name} median {g[len(g) // 2] * 1e3:.2f} ms, max {g[-1] * 1e3:.1f} ms"
                     f"{f', {w.not_quiet} not quiet within {timeout} s' if w.not_quiet else ''}")
    return "; ".join(parts)


def fmt(v, digits=4):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def header(args, suite, path, layers, threads, isa, workers, peak):
    total_gflop = sum(2e-9 * lay.macs() * lay.count for lay in layers)
    print(f"\n== suite {suite} ({path}): {len(layers)} distinct layers, "
          f"{sum(lay.count for lay in layers)} convolutions, {total_gflop:.2f} GFLOP")
    print(f"# {threads} threads, ISA {isa}, {args.rounds} rounds; a request: {args.warmups} "
          f"warm-ups then >= {args.min_reps} runs and >= {args.min_ms} ms, its median; a layer:"
          f" the median over rounds; contenders interleaved layer by layer, order rotating")
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"# FMA peak measured now: {peak[0]:.1f} GFLOP/s on {threads} threads "
          f"({peak[1]}-bit FMAs); load average {load} (other work on the machine disturbs "
          f"every contender, active-wait OpenMP most)")
    for w in workers:
        print(f"# {w.name}: {w.settings}")


def run_suite(args, path, threads, isa):
    suite = os.path.splitext(os.path.basename(path))[0]
    layers = sf.read_suite(path)
    keys = available(args)
    workers = start_workers(args, keys, threads, isa)
    try:
        cf = workers[0]
        # Find before the FMA peak: right after the peak's seconds of 512-bit FMAs the
        # cores ran slower for a while, and Find, timing its candidates one after the
        # other, then ranked MobileNetV2's stem cpu.im2col_gemm over cpu.direct_small_c
        # (0.28 against 0.14 ms) in 2 of 8 tries on the Zen 4, in none of 3 without it.
        found = find_phase(cf, layers, args.quiet_timeout)
        r = cf.ask("peak")
        peak = (float(r[1]), int(r[2]))
        cf.quiet(args.quiet_timeout)
        header(args, suite, path, layers, threads, isa, workers, peak)
        find_s = sum(s for s, _ in found)
        budget = f"{args.find_budget} s" if args.find_budget > 0 else "1 s (library default)"
        print(f"# Find: {find_s:.2f} s in total over {len(layers)} layers (budget {budget} "
              f"per problem), timed alone before the rounds")
        base = next((w for w in workers if w.key == BASELINE), None)
        if base:
            base_s = sum(s for s, _ in find_phase(base, layers, args.quiet_timeout))
            print(f"# Find of the baseline ({args.baseline}): {base_s:.2f} s")
        if args.regret:
            return regret(args, suite, layers, cf, found, threads, isa)
        resident = sum(layer_bytes(lay) for lay in layers) * len(workers) <= args.memory_mb << 20
        jobs = [(workers, i, lay.wire()) for i, lay in enumerate(layers)]
        ms, info = interleave(args, jobs, resident)
        print(f"# layers kept prepared across rounds: {'yes' if resident else 'no (memory)'}; "
              f"waits for quiet: {gaps_text(workers, args.quiet_timeout)}")
        return report(suite, layers, workers, ms, info, found, peak, threads, isa, find_s)
    finally:
        for w in workers:
            w.close()


def report(suite, layers, workers, ms, info, found, peak, threads, isa, find_s):
    peers = [w for w in workers[1:] if w.key != BASELINE]
    shown = workers[1:]  # the peers and, if any, the baseline
    cols = ["layer", "count", "gflop", "convfind_ms", "convfind_algo"]
    for p in shown:
        cols += [f"{p.name}_ms", f"{p.name}_impl"]
    cols += ["fastest_peer", "ratio", "convfind_pct_peak", "find_s"]
    print(",".join(cols))
    totals = {w.name: 0.0 for w in workers}
    missing = {w.name: 0 for w in workers}
    ratios, base_ratios = [], []
    for i, lay in enumerate(layers):
        gflop = 2e-9 * lay.macs()
        row_ms = {w.name: ms.get((w.key, i)) for w in workers}
        for name, v in row_ms.items():
            if v is None:
                missing[name] += 1
            else:
                totals[name] += lay.count * v
        cfm = row_ms["convfind"]
        peer_ms = {p.name: row_ms[p.name] for p in peers if row_ms[p.name] is not None}
        best = min(peer_ms, key=peer_ms.get) if peer_ms else None
        ratio = cfm / peer_ms[best] if best and cfm else None
        if ratio:
            ratios.append((ratio, lay.name))
        if cfm and row_ms.get(BASELINE):
            base_ratios.append(cfm / row_ms[BASELINE])
        cells = [lay.name, str(lay.count), f"{gflop:.4f}", fmt(cfm),
                 info.get(("convfind", i)) or "n/a"]
        for p in shown:
            cells += [fmt(row_ms[p.name]),
                      info.get((p.key, i)) or "n/a: " + info.get((p.key, i, "why"), "")]
        pct = 100 * gflop / (cfm * 1e-3) / peak[0] if cfm and peak[0] > 0 else None
        cells += [best or "n/a", fmt(ratio, 3), fmt(pct, 1), f"{found[i][0]:.3f}"]
        print(",".join(c.replace(",", ";") for c in cells))
    complete = [p.name for p in peers if not missing[p.name]]
    fastest = min(complete, key=lambda n: totals[n]) if complete else None
    total_ratio = (totals["convfind"] / totals[fastest]
                   if fastest and not missing["convfind"] else None)
    worst = max(ratios) if ratios else (float("nan"), "-")
    row = dict(suite=suite, threads=threads, isa=isa, totals=totals, missing=missing,
               fastest=fastest, total_ratio=total_ratio, geomean=geomean([r for r, _ in ratios]),
               worst=worst, over_110=sum(r > 1.1 for r, _ in ratios),
               over_125=sum(r > 1.25 for r, _ in ratios), find_s=find_s)
    if BASELINE in totals and not missing[BASELINE] and not missing["convfind"]:
        row["base_ratio"] = totals["convfind"] / totals[BASELINE]
        print(f"# convfind / baseline: {fmt(row['base_ratio'], 3)} in total; per layer geomean "
              f"{fmt(geomean(base_ratios), 3)}, min {fmt(min(base_ratios), 3)}, max "
              f"{fmt(max(base_ratios), 3)}")
    print("# totals weighted by count: " + ", ".join(
        f"{n} {fmt(t, 3)} ms{f' ({missing[n]} layers missing)' if missing[n] else ''}"
        for n, t in totals.items()))
    print(f"# convfind / fastest peer ({fastest or 'none complete'}): {fmt(total_ratio, 3)} in "
          f"total; per layer geomean {fmt(row['geomean'], 3)}, max {fmt(worst[0], 3)} "
          f"({worst[1]}), {row['over_110']} layers > 1.1x, {row['over_125']} > 1.25x")
    print(f"{suite} total_ms " + " ".join(
        f"{n}={'nan' if missing[n] else f'{t:.3f}'}" for n, t in totals.items()))
    return row


def regret(args, suite, layers, cf, found, threads, isa):
    jobs, owner, algos = [], [], []
    for i, lay in enumerate(layers):
        r = cf.ask(f"algos {i} {lay.wire()}")
        names = r[2:] if r[0] == "algos" else []
        algos.append(names)
        for name in names:
            owner.append((i, name))
            jobs.append(([cf], len(owner) - 1, f"{lay.wire()} algo={name}"))
    resident = sum(layer_bytes(layers[i]) for i, _ in owner) <= args.memory_mb << 20
    ms, _ = interleave(args, jobs, resident)
    by_layer = {}
    for jid, (i, name) in enumerate(owner):
        if ("convfind", jid) in ms:
            by_layer.setdefault(i, {})[name] = ms[("convfind", jid)]
    print("layer,find_choice,choice_ms,fastest_algo,fastest_ms,regret,all_algos_ms")
    regrets = []
    for i, lay in enumerate(layers):
        t = by_layer.get(i, {})
        choice = found[i][1]
        if not t or choice not in t:
            print(f"{lay.name},{choice},n/a,n/a,n/a,n/a,")
            continue
        best = min(t, key=t.get)
        reg = t[choice] / t[best]
        regrets.append((reg, lay.name))
        print(f"{lay.name},{choice},{t[choice]:.4f},{best},{t[best]:.4f},{reg:.3f},"
              + " ".join(f"{n}={v:.4f}" for n, v in sorted(t.items(), key=lambda kv: kv[1])))
    worst = max(regrets) if regrets else (float("nan"), "-")
    gm = geomean([r for r, _ in regrets])
    print(f"# waits for quiet: {gaps_text([cf], args.quiet_timeout)}")
    print(f"# regret of Find's choice: geomean {fmt(gm, 3)}, worst {fmt(worst[0], 3)} "
          f"({worst[1]}), {sum(r > 1.03 for r, _ in regrets)} layers > 1.03x, "
          f"{sum(r > 1.10 for r, _ in regrets)} > 1.10x")
    return dict(suite=suite, threads=threads, isa=isa, regret_geomean=gm, regret_worst=worst,
                layers=len(regrets), find_s=sum(s for s, _ in found))


def summary(rows, regret_mode):
    print("\n== summary")
    if regret_mode:
        print(f"{'suite':<28} {'thr':>3} {'isa':<6} {'layers':>6} {'geomean':>8} "
              f"{'worst':>7}  {'worst layer':<36} {'Find s':>7}")
        for r in rows:
            print(f"{r['suite']:<28} {r['threads']:>3} {r['isa']:<6} {r['layers']:>6} "
                  f"{fmt(r['regret_geomean'], 3):>8} {fmt(r['regret_worst'][0], 3):>7}  "
                  f"{r['regret_worst'][1]:<36} {r['find_s']:>7.2f}")
        return
    names = list(rows[0]["totals"])
    print(f"{'suite':<28} {'thr':>3} {'isa':<6} " + " ".join(f"{n + ' ms':>16}" for n in names)
          + f" {'vs fastest':>10} {'vs base':>8} {'geomean':>8} {'max':>7} {'>1.1':>5} {'>1.25':>5} "
            f"{'Find s':>7}  max layer")
    for r in rows:
        tot = " ".join(f"{fmt(r['totals'][n], 3) + ('*' if r['missing'][n] else ''):>16}"
                       for n in names)
        print(f"{r['suite']:<28} {r['threads']:>3} {r['isa']:<6} {tot} "
              f"{fmt(r['total_ratio'], 3):>10} {fmt(r.get('base_ratio'), 3):>8} "
              f"{fmt(r['geomean'], 3):>8} "
              f"{fmt(r['worst'][0], 3):>7} {r['over_110']:>5} {r['over_125']:>5} "
              f"{r['find_s']:>7.2f}  {r['worst'][1]}")
    print("* a total with layers the contender could not run (not compared)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suites", nargs="+", help="suite CSV files (docs/benchmarks.md)")
    ap.add_argument("--build", default="build", help="build directory with bench/ workers")
    ap.add_argument("--threads", default="2", help="thread counts, comma-separated (2,1)")
    ap.add_argument("--isa", default="native",
                    help="ISA levels, comma-separated: native, avx2 (CONVFIND_ISA=avx2 and "
                         "ONEDNN_MAX_CPU_ISA=AVX2)")
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmups", type=int, default=2)
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--min-ms", type=float, default=50.0)
    ap.add_argument("--find-budget", type=float, default=0.0,
                    help="Find's time budget per problem in seconds (0: library default)")
    ap.add_argument("--spincount", type=int, default=200000,
                    help="GOMP_SPINCOUNT for oneDNN's OpenMP threads (active wait)")
    ap.add_argument("--quiet-timeout", type=float, default=1.0,
                    help="seconds to wait for a worker's threads to sleep")
    ap.add_argument("--memory-mb", type=int, default=4096,
                    help="keep every layer prepared when all contenders' tensors fit")
    ap.add_argument("--layout", default="nchw", choices=("nchw", "nhwc"),
                    help="convfind's X and Y layout (nhwc: channels last, as a network run "
                         "in it; the peers keep their own)")
    ap.add_argument("--baseline", default="",
                    help="build directory of another commit (or this one, with another "
                         "--baseline-layout): its convfind is timed too")
    ap.add_argument("--baseline-layout", default="", choices=("", "nchw", "nhwc"),
                    help="the baseline's layout (default: --layout's)")
    ap.add_argument("--regret", action="store_true",
                    help="re-time every applicable convfind algorithm per layer instead")
    args = ap.parse_args()
    args.baseline_layout = args.baseline_layout or args.layout
    if args.regret:
        args.contenders, args.baseline = "convfind", ""
    rows = []
    for threads in (int(t) for t in args.threads.split(",")):
        for isa in args.isa.split(","):
            if isa not in ("native", "avx2"):
                sys.exit(f"cpu_driver: --isa {isa}: native or avx2")
            for path in args.suites:
                rows.append(run_suite(args, path, threads, isa))
    if len(rows) > 1:
        summary(rows, args.regret)


if __name__ == "__main__":
    main()
