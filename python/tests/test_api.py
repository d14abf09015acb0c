"""convfind.Context, Plan and conv(): results, attributes, layouts, errors, statistics."""

import numpy as np
import pytest

import convfind
from conftest import reference_conv


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_conv_matches_reference_with_bias_residual_activation(ctx, rng):
    x, w, b = rand(rng, 2, 6, 9, 7), rand(rng, 4, 3, 3, 3), rand(rng, 4)
    z = rand(rng, 2, 4, 5, 4)
    y = ctx.conv(x, w, b, z, pads=[1, 1, 1, 1], strides=[2, 2], group=2, activation="LeakyRelu",
                 alpha=0.2)
    ref = reference_conv(x, w, b, z, pads=(1, 1, 1, 1), strides=(2, 2), group=2,
                         activation="leaky_relu", alpha=0.2)
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_out_may_be_z_the_residual_added_in_place(ctx, rng):
    x, w, b = rand(rng, 1, 40, 12, 12), rand(rng, 24, 40, 1, 1), rand(rng, 24)
    z = rand(rng, 1, 24, 12, 12)
    plan = ctx.plan(x.shape, w, b, z=True, activation="Relu")
    apart = plan.execute(x, z=z)
    zz = z.copy()
    assert plan.execute(x, z=zz, out=zz) is zz
    np.testing.assert_array_equal(zz, apart)


def test_module_level_conv_uses_the_default_context(rng):
    x, w = rand(rng, 1, 2, 5, 5), rand(rng, 3, 2, 1, 1)
    np.testing.assert_allclose(convfind.conv(x, w), reference_conv(x, w), rtol=1e-5, atol=1e-5)
    assert convfind.default_context() is convfind.default_context()


def test_nhwc_layout_takes_channels_last_arrays(ctx, rng):
    x, w = rand(rng, 1, 3, 6, 6), rand(rng, 5, 3, 3, 3)
    y = ctx.conv(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), w, pads=[1] * 4, layout="nhwc")
    assert y.shape == (1, 6, 6, 5)
    np.testing.assert_allclose(y.transpose(0, 3, 1, 2), reference_conv(x, w, pads=(1,) * 4),
                               rtol=1e-4, atol=1e-4)


def test_conv_transpose_output_shape(ctx, rng):
    x, w = rand(rng, 1, 4, 5, 5), rand(rng, 4, 2, 3, 3)
    y = ctx.conv(x, w, op="conv_transpose", strides=[2, 2], output_shape=[10, 10])
    assert y.shape == (1, 2, 10, 10)


def test_plan_packs_constant_weights_once_and_reports_its_decision(ctx, rng):
    x, w, b = rand(rng, 1, 8, 10, 10), rand(rng, 8, 8, 3, 3), rand(rng, 8)
    plan = ctx.plan(x.shape, w, b, pads=[1, 1, 1, 1], activation="relu")
    assert plan.constant_weights and plan.has_bias and not plan.has_residual
    assert plan.source == "heuristic" and plan.algorithm in convfind.algorithms()
    assert plan.key.startswith("v2;conv;f32;nchw;n=1;c=8") and plan.key_hash > 0
    assert ";weights=constant;" in plan.key
    assert plan.output_shape == (1, 8, 10, 10) and plan.weight_shape == w.shape
    ref = reference_conv(x, w, b, pads=(1,) * 4, activation="relu")
    w[:] = 0  # the plan copied its weights: later changes to the array do not matter
    np.testing.assert_allclose(plan.execute(x), ref, rtol=1e-4, atol=1e-4)
    out = np.empty(plan.output_shape, np.float32)
    assert plan.execute(x, out=out) is out
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    assert "N=1" in plan.describe() and "algorithm=" in repr(plan)


def test_outputs_the_extension_allocates_start_on_a_64_byte_boundary(ctx, rng):
    # numpy puts large arrays 16 bytes past a page boundary, where every vector of a row
    # spans two cache lines; outputs allocated for the caller are aligned for the kernels.
    x, w = rand(rng, 1, 4, 96, 96), rand(rng, 16, 4, 1, 1)
    plan = ctx.plan(x.shape, w)
    for _ in range(3):
        y = plan.execute(x)
        assert y.ctypes.data % 64 == 0 and y.flags.c_contiguous and y.flags.writeable
        assert y.shape == (1, 16, 96, 96) and y.dtype == np.float32
    np.testing.assert_allclose(y, reference_conv(x, w), rtol=1e-4, atol=1e-4)
    assert convfind.conv(x, w).ctypes.data % 64 == 0


def test_plan_with_variable_weights_takes_them_per_call(ctx, rng):
    x, w, b = rand(rng, 1, 3, 6, 6), rand(rng, 2, 3, 3, 3), rand(rng, 2)
    plan = ctx.plan(x.shape, w.shape, True, pads=[1] * 4)
    assert not plan.constant_weights
    np.testing.assert_allclose(plan.execute(x, w, b), reference_conv(x, w, b, pads=(1,) * 4),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="needs w"):
        plan.execute(x)
    with pytest.raises(TypeError, match="needs b"):
        plan.execute(x, w)


def test_forced_algorithm_and_unknown_algorithm(ctx, rng):
    w = rand(rng, 4, 4, 3, 3)
    plan = ctx.plan((1, 4, 8, 8), w, pads=[1] * 4, algorithm="cpu.reference")
    assert plan.algorithm == "cpu.reference" and plan.source == "forced"
    with pytest.raises(convfind.NotFoundError) as e:
        ctx.plan((1, 4, 8, 8), w, algorithm="no.such")
    assert "no.such" in str(e.value)


def test_find_ranks_candidates_and_the_best_becomes_the_decision(rng):
    ctx = convfind.Context(threads=1, policy="heuristic", db=":memory:", find_time_budget=0.05)
    results = ctx.find((1, 8, 12, 12), (8, 8, 3, 3), pads=[1] * 4, weights="constant")
    assert results and isinstance(results[0], convfind.FindResult)
    assert results[0].status == "ok" and results[0].repeats > 0
    plan = ctx.plan((1, 8, 12, 12), rand(rng, 8, 8, 3, 3), pads=[1] * 4)
    assert plan.algorithm == results[0].algorithm and plan.source == "measured"
    assert ctx.stats()["finds"] == 1
    # A plan given its weights per call has a decision of its own, not yet measured.
    assert ctx.key((1, 8, 12, 12), (8, 8, 3, 3), pads=[1] * 4) != plan.key
    assert ctx.plan((1, 8, 12, 12), (8, 8, 3, 3), pads=[1] * 4).source == "heuristic"


def test_stats_count_hits_and_misses(ctx, rng):
    w = rand(rng, 2, 2, 1, 1)
    for _ in range(3):
        ctx.plan((1, 2, 4, 4), w)
    s = ctx.stats()
    assert s["misses"] == 1 and s["hits"] == 2 and s["cache_entries"] == 1
    # Every counter of convfind_context_stats is there; no fleet tier was configured.
    assert {"stored", "store_failures", "seeded", "retimed_low_confidence", "fleet_hits",
            "fleet_pushed", "fleet_faults", "compiled_stored", "compiled_loaded"} <= set(s)
    assert s["fleet_connected"] is False and s["fleet_hits"] == 0
    assert s["compiled_stored"] == 0 and s["compiled_loaded"] == 0  # CPU: nothing compiles


def test_each_status_has_its_own_exception_class_with_the_library_message(ctx, rng):
    x, w = rand(rng, 1, 3, 5, 5), rand(rng, 4, 2, 3, 3)
    with pytest.raises(convfind.InvalidShapeError) as e:
        ctx.conv(x, w)
    assert isinstance(e.value, convfind.Error) and isinstance(e.value, ValueError)
    assert e.value.status_name == "CONVFIND_ERR_INVALID_SHAPE" and "w_dims[1] = 2" in str(e.value)
    with pytest.raises(convfind.InvalidAttributeError):
        ctx.conv(x, rand(rng, 4, 3, 3, 3), strides=[0, 1])
    names = {cls.status_name for cls in vars(convfind).values()
             if isinstance(cls, type) and issubclass(cls, convfind.Error) and cls is not convfind.Error}
    assert len(names) == 12


def test_a_gpu_context_without_a_usable_gpu_is_unavailable():
    ok, why = convfind.cuda_available(0)
    if ok:
        pytest.skip("a usable CUDA device is present: nothing unavailable to test")
    with pytest.raises(convfind.UnavailableError) as e:
        convfind.Context(device="cuda")
    assert e.value.status_name == "CONVFIND_ERR_UNAVAILABLE" and str(e.value)


def test_bad_arguments_are_python_errors(ctx, rng):
    x, w = rand(rng, 1, 3, 5, 5), rand(rng, 4, 3, 3, 3)
    with pytest.raises(ValueError, match="activation='swish'"):
        ctx.conv(x, w, activation="swish")
    with pytest.raises(TypeError, match="float32"):
        ctx.conv(x.astype(np.float64), w)
    with pytest.raises(ValueError, match="C-contiguous"):
        ctx.conv(np.asfortranarray(x), w)
    plan = ctx.plan(x.shape, w)
    with pytest.raises(convfind.InvalidShapeError, match=r"\(1, 3, 6, 5\)"):
        plan.execute(rand(rng, 1, 3, 6, 5))
    with pytest.raises(ValueError, match="writable"):
        out = np.empty(plan.output_shape, np.float32)
        out.flags.writeable = False
        plan.execute(x, out=out)
    with pytest.raises(ValueError, match="stream"):
        plan.execute(x, stream=5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        plan.execute(x, y=x)


def test_float16_is_described_but_not_run_on_the_cpu(ctx, rng):
    x, w = rand(rng, 1, 2, 4, 4).astype(np.float16), rand(rng, 2, 2, 1, 1).astype(np.float16)
    assert ";f16;" in ctx.key(x, w)
    with pytest.raises(convfind.UnsupportedError):
        ctx.conv(x, w)


def test_context_options_are_validated():
    with pytest.raises(ValueError, match="policy"):
        convfind.Context(policy="fastest")
    with pytest.raises(ValueError, match="device"):
        convfind.Context(device="tpu")
    c = convfind.Context(threads=2, policy="Exhaustive", db=":memory:", math="TF32")
    assert (c.policy, c.math, c.device) == ("exhaustive", "tf32", "cpu")
    assert "math='tf32'" in repr(c)
    assert convfind.Context(math="split_tf32").math == "split_tf32"


def test_split_tf32_is_its_own_key_and_computes_as_strict_on_the_cpu(ctx, rng):
    # include/convfind.h: split_tf32 is part of the key, and on a CPU it computes as
    # strict, so the tf32-only Winograd F(6x6,3x3) may not run under it.
    x, w = rand(rng, 1, 8, 12, 12), rand(rng, 8, 8, 3, 3)
    attrs = {"pads": [1, 1, 1, 1]}
    keys = {m: ctx.key(x, w, math=m, **attrs) for m in ("strict", "tf32", "split_tf32")}
    assert ";math=split_tf32;" in keys["split_tf32"]
    assert len(set(keys.values())) == 3
    split_ctx = convfind.Context(threads=1, policy="heuristic", db=":memory:",
                                 math="split_tf32")
    plan = split_ctx.plan(x, w, **attrs)
    assert ";math=split_tf32;" in plan.key and plan.describe().endswith(" split_tf32")
    assert ctx.plan(x, w, math="tf32", algorithm="cpu.winograd_f6x3", **attrs).source == "forced"
    for math in ("strict", "split_tf32"):
        with pytest.raises(convfind.UnsupportedError, match="winograd_f6x3"):
            ctx.plan(x, w, math=math, algorithm="cpu.winograd_f6x3", **attrs)
    found = {r.algorithm: r.status for r in ctx.find(x, w, math="split_tf32", **attrs)}
    assert found["cpu.winograd_f6x3"] == "not_applicable"
    strict = ctx.plan(x, w, algorithm="cpu.direct_blocked", **attrs).execute(x)
    split = ctx.plan(x, w, math="split_tf32", algorithm="cpu.direct_blocked", **attrs)
    np.testing.assert_array_equal(split.execute(x), strict)
