"""test_conformance.py - the 47 published ONNX Conv/ConvTranspose test cases.

The cases (17 official node tests, 30 converted from PyTorch) and their expected outputs
come from the ONNX project; see ../shared/conformance/README.md for the format and the
tolerance used here.  Every case runs in both layouts (NHWC by transposing X in numpy
and Y back), with the default plan and with every registered algorithm forced.
Without the data the tests skip with "CONFORMANCE DATA MISSING", which ctest reports
as skipped, never as passed.
"""

import json
import os

import numpy as np
import pytest

from conftest import conformance_dir
import convfind_ctypes as cf

SUITES = ("onnx_node", "onnx_pytorch")
EXPECTED_CASES = 47


def _cases():
    root, present = conformance_dir()
    if not present:
        reason = (f"CONFORMANCE DATA MISSING: {root} does not exist (set "
                  "CONVFIND_CONFORMANCE_DIR or put the data at ../shared/conformance)")
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="missing")]
    cases = []
    for suite in SUITES:
        with open(os.path.join(root, suite, "index.json")) as f:
            index = json.load(f)
        for t in index["tests"]:
            cases.append(pytest.param(os.path.join(root, suite, t["file"]), id=t["name"]))
    return cases


CASES = _cases()


def test_all_cases_present():
    if CASES[0].values[0] is None:
        pytest.skip(CASES[0].marks[0].kwargs["reason"])
    assert len(CASES) == EXPECTED_CASES, f"found {len(CASES)} conformance cases"


def _to_nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _from_nhwc(a):
    return np.moveaxis(a, -1, 1)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("path", CASES)
def test_conformance(path, layout, lib, ctx, algorithms):
    with open(path) as f:
        case = json.load(f)
    tensors = {i["role"]: np.array(i["data"], dtype=np.float32).reshape(i["dims"])
               for i in case["inputs"]}
    expected = np.array(case["output"]["data"], dtype=np.float64).reshape(case["output"]["dims"])
    x = tensors["X"] if layout == "NCHW" else _to_nhwc(tensors["X"])
    ran = 0
    for algo in algorithms:
        try:
            y, used = lib.conv(ctx, case["op"], x, tensors["W"], tensors.get("B"),
                               attrs=case["attrs"], layout=layout, algo=algo)
        except cf.ConvfindError as e:
            if algo is not None and e.status_name == "CONVFIND_ERR_UNSUPPORTED":
                continue
            raise
        ran += 1
        got = (y if layout == "NCHW" else _from_nhwc(y)).astype(np.float64)
        assert got.shape == expected.shape, \
            f"{case['name']} ({used}): shape {got.shape} != {expected.shape}"
        err = np.abs(got - expected)
        bad = err > 1e-5 + 1e-4 * np.abs(expected)
        assert not bad.any(), (
            f"{case['name']} ({layout}, {used}): {int(bad.sum())} of {bad.size} values off, "
            f"worst at {np.unravel_index(np.argmax(err), err.shape)}: max |err| {err.max():.3g}")
    if ran == 0:
        pytest.skip(f"{algorithms[0]} does not support {case['name']}")
