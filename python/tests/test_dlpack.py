"""Arrays through DLPack: the import path (on the CPU, with numpy as the producer), the
stream and version handshake, device checks, and CUDA where a device exists."""

import sys

import numpy as np
import pytest

import convfind


class Producer:
    """An array that speaks only DLPack (no buffer protocol), recording each request."""

    def __init__(self, array, device=None, legacy=False):
        self.array, self.device, self.legacy, self.calls = array, device, legacy, []
        self.shape, self.dtype = array.shape, array.dtype

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()

    def __dlpack__(self, stream=None, **kwargs):
        if self.legacy and kwargs:
            raise TypeError("unexpected keyword")
        self.calls.append(dict(stream=stream, **kwargs))
        return self.array.__dlpack__(stream=stream, **kwargs)


def test_dlpack_only_arrays_run_and_their_capsules_are_released(ctx):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    out = np.empty((1, 4, 6, 6), np.float32)
    px, pw, pout = Producer(x), Producer(w, legacy=True), Producer(out)
    refs = [sys.getrefcount(a) for a in (x, w, out)]
    y = ctx.plan(x.shape, w.shape, pads=[1] * 4).execute(px, pw, out=pout)
    assert isinstance(y, Producer) and y is pout
    np.testing.assert_allclose(out, ctx.conv(x, w, pads=[1] * 4), rtol=1e-6, atol=1e-6)
    # CPU arrays are requested without a stream, versioned first; a legacy producer
    # is asked again without max_version.
    assert px.calls == [{"stream": None, "max_version": (1, 0)}]
    assert pw.calls == [{"stream": None}]
    # The deleters ran: no reference to the arrays is left behind.
    assert [sys.getrefcount(a) for a in (x, w, out)] == refs


def test_dlpack_rejects_strided_and_wrong_dtype_arrays(ctx):
    w = np.ones((2, 3, 1, 1), np.float32)
    x = np.ones((1, 6, 4, 4), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        ctx.plan((1, 3, 4, 4), w).execute(Producer(x))
    with pytest.raises(TypeError, match="DLPack dtype"):
        ctx.plan((1, 3, 4, 4), w).execute(Producer(np.ones((1, 3, 4, 4), np.float64)))


def test_a_cuda_array_on_a_cpu_context_is_refused_before_it_is_exported(ctx):
    x = Producer(np.ones((1, 3, 4, 4), np.float32), device=(2, 0))
    with pytest.raises(ValueError, match=r"DLPack device \(2, 0\).*the CPU"):
        ctx.plan((1, 3, 4, 4), (2, 3, 1, 1)).execute(x, np.ones((2, 3, 1, 1), np.float32))
    assert x.calls == []


def test_cuda_context_and_device_arrays():
    ok, why = convfind.cuda_available(0)
    if not ok:
        pytest.skip(f"GPU TEST SKIPPED: no usable CUDA device ({why})")
    torch = pytest.importorskip("torch", reason="GPU TEST SKIPPED: needs torch for CUDA arrays")
    ctx = convfind.Context(device="cuda", policy="heuristic", db=":memory:")
    x = torch.randn(1, 3, 8, 8, device="cuda")
    w = torch.randn(4, 3, 3, 3, device="cuda")
    out = torch.empty(1, 4, 8, 8, device="cuda")
    stream = torch.cuda.current_stream()
    ctx.plan(tuple(x.shape), tuple(w.shape), pads=[1] * 4).execute(
        x, w, out=out, stream=stream.cuda_stream)
    stream.synchronize()
    ref = ctx_cpu_conv(x.cpu().numpy(), w.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="out= is required"):
        ctx.plan(tuple(x.shape), tuple(w.shape), pads=[1] * 4).execute(x, w)


def ctx_cpu_conv(x, w):
    return convfind.Context(threads=1, policy="heuristic", db=":memory:").conv(x, w, pads=[1] * 4)
