"""Many Python threads on one context: plans, executions and Find at once."""

import threading

import numpy as np

import convfind
from conftest import reference_conv


def test_threads_share_one_context_and_measure_each_problem_once():
    """Each problem is measured once per weights usage: conv() passes w per call, the
    plans hold it constant."""
    ctx = convfind.Context(threads=1, policy="exhaustive", db=":memory:", find_time_budget=0.02)
    rng = np.random.default_rng(7)
    shapes = [(1, 4, 8, 8), (1, 4, 10, 6), (2, 4, 7, 7)]
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    refs = [reference_conv(x, w, pads=(1,) * 4) for x in inputs]
    errors, barrier = [], threading.Barrier(6)

    def worker(k):
        try:
            barrier.wait()
            for i in range(60):
                j = (k + i) % len(shapes)
                if i % 3 == 0:
                    y = ctx.conv(inputs[j], w, pads=[1] * 4)
                else:
                    y = ctx.plan(shapes[j], w, pads=[1] * 4).execute(inputs[j])
                np.testing.assert_allclose(y, refs[j], rtol=1e-4, atol=1e-4)
        except Exception as e:  # reported below, with the thread's failure
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert ctx.stats()["finds"] == 2 * len(shapes)


def test_execute_releases_the_gil():
    """A thread keeps running Python while another thread is inside execute()."""
    ctx = convfind.Context(threads=1, policy="heuristic", db=":memory:")
    x = np.ones((1, 32, 64, 64), np.float32)
    plan = ctx.plan(x.shape, np.ones((32, 32, 3, 3), np.float32), pads=[1] * 4,
                    algorithm="cpu.reference")
    ticks, done = [0], threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    plan.execute(x)  # the spinner is running by now
    before = ticks[0]
    plan.execute(x)
    during = ticks[0] - before
    done.set()
    t.join()
    # Holding the GIL, execute() would let the spinner in at most once (a forced
    # switch); released, it spins for the whole call.
    assert during > 100000, during
