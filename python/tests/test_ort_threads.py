"""The scenario that crashed ONNX Runtime's ROCm provider ("No invoker was registered"):
4 threads, each with its own session, different input shapes at once, 1000 runs each.
Expected: no error, every output equal to plain ONNX Runtime's, and each distinct
problem measured exactly once across all sessions (one shared context)."""

import threading

import numpy as np
import onnxruntime as ort

import convfind
import convfind.onnx as cfonnx
import convfind.onnxruntime as cfort
import models

RUNS = 1000
SHAPES = [(1, 3, 8, 8), (1, 3, 12, 8), (2, 3, 8, 12), (1, 3, 16, 16)]


def test_four_sessions_four_shapes_one_thousand_runs_each():
    model = models.unet_small(base=4)
    ctx = convfind.Context(threads=1, policy="exhaustive", db=":memory:", find_time_budget=0.01)
    rng = np.random.default_rng(21)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    plain = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = [plain.run(None, {"input": x})[0] for x in inputs]
    expected_keys = {ctx.key(p.x, p.w, **p.attributes())
                     for s in SHAPES for p in cfonnx.problems(model, {"input": s})}
    sessions = [cfort.InferenceSession(model, context=ctx) for _ in SHAPES]
    errors, wrong, barrier = [], [0] * len(SHAPES), threading.Barrier(len(SHAPES))

    def worker(k):
        try:
            barrier.wait()
            for _ in range(RUNS):
                y = sessions[k].run(None, {"input": inputs[k]})[0]
                if not np.allclose(y, refs[k], rtol=1e-4, atol=1e-5):
                    wrong[k] += 1
        except Exception as e:  # counted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(SHAPES))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and wrong == [0] * len(SHAPES)
    stats = ctx.stats()
    assert stats["finds"] == len(expected_keys) == stats["misses"]
    assert stats["cache_entries"] == len(expected_keys)
