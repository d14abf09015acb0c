"""Shared fixtures of the convfind package's tests (python/tests).

Every context the tests make uses an in-memory find database and the heuristic policy
unless a test needs measuring, so no test touches ~/.cache or depends on a stored
decision.  models.py (next to this file) builds the ONNX test models.
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("CONVFIND_DB_PATH", ":memory:")

import convfind  # noqa: E402


@pytest.fixture
def ctx():
    return convfind.Context(threads=1, policy="heuristic", db=":memory:")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def reference_conv(x, w, b=None, z=None, pads=(0, 0, 0, 0), strides=(1, 1), group=1,
                   activation=None, alpha=0.01):
    """A direct 2-D NCHW convolution in float64 numpy, for checking results."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - kh) // strides[0] + 1
    ow = (xp.shape[3] - kw) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + oh * strides[0]:strides[0], j:j + ow * strides[1]:strides[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch,
                                                       w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    if z is not None:
        y += z
    if activation == "relu":
        y = np.maximum(y, 0)
    elif activation == "leaky_relu":
        y = np.where(y < 0, alpha * y, y)
    return y
