"""test_conformance.py - the 47 published ONNX Conv/ConvTranspose test cases.

The cases (17 official node tests, 30 converted from PyTorch) and their expected outputs
come from the ONNX project, as ONNX stores them: a one-node model.onnx and serialized
TensorProto inputs and output per case (tests/conformance/README.md says where from and
why the tolerance is what it is).  Every case runs in both layouts (NHWC by transposing
X in numpy and Y back), with the default plan and with every registered algorithm forced.
The data is part of the repository, so missing data is a failure, not a skip.
"""

import glob
import json
import os

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from conftest import conformance_dir
import convfind_ctypes as cf

SUITES = ("onnx_node", "onnx_pytorch")
EXPECTED_CASES = 47


def _cases():
    root, present = conformance_dir()
    if not present:
        raise FileNotFoundError(f"CONFORMANCE DATA MISSING: {root} does not exist")
    cases = []
    for suite in SUITES:
        with open(os.path.join(root, suite, "index.json")) as f:
            index = json.load(f)
        for t in index["tests"]:
            cases.append(pytest.param(os.path.join(root, suite), t, id=t["name"]))
    return cases


CASES = _cases()


def test_all_cases_present():
    assert len(CASES) == EXPECTED_CASES, f"found {len(CASES)} conformance cases"


def _load(suite_dir, entry):
    """(op, X, W, B or None, expected Y) of one case, read the way ONNX's own runner
    reads it: initializers of the model first, then the test data set's inputs in the
    order of the graph inputs that are not initializers."""
    case = os.path.join(suite_dir, entry["raw"])
    model = onnx.load(os.path.join(case, "model.onnx"))
    values = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    fed = [i.name for i in model.graph.input if i.name not in values]
    files = sorted(glob.glob(os.path.join(case, "test_data_set_0", "input_*.pb")),
                   key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    assert len(files) == len(fed), f"{entry['name']}: {len(files)} inputs for {fed}"
    for name, path in zip(fed, files):
        values[name] = onnx.numpy_helper.to_array(onnx.load_tensor(path))
    nodes = [n for n in model.graph.node if n.op_type in ("Conv", "ConvTranspose")]
    assert len(nodes) == 1, f"{entry['name']}: {len(nodes)} convolution nodes"
    node = nodes[0]
    x, w = (values[node.input[i]].astype(np.float32) for i in (0, 1))
    b = values[node.input[2]].astype(np.float32) if len(node.input) > 2 and node.input[2] else None
    y = onnx.numpy_helper.to_array(
        onnx.load_tensor(os.path.join(case, "test_data_set_0", "output_0.pb")))
    return entry["op"], x, w, b, y.astype(np.float64)


def _to_nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _from_nhwc(a):
    return np.moveaxis(a, -1, 1)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("suite_dir,entry", CASES)
def test_conformance(suite_dir, entry, layout, lib, ctx, algorithms):
    op, x, w, b, expected = _load(suite_dir, entry)
    if layout == "NHWC":
        x = _to_nhwc(x)
    ran = 0
    for algo in algorithms:
        try:
            y, used, _ = lib.conv(ctx, op, x, w, b, attrs=entry["attrs"], layout=layout,
                                  algo=algo)
        except cf.ConvfindError as e:
            if algo is not None and e.status_name == "CONVFIND_ERR_UNSUPPORTED":
                continue
            raise
        ran += 1
        got = (y if layout == "NCHW" else _from_nhwc(y)).astype(np.float64)
        assert got.shape == expected.shape, \
            f"{entry['name']} ({used}): shape {got.shape} != {expected.shape}"
        err = np.abs(got - expected)
        bad = err > 1e-5 + 1e-4 * np.abs(expected)
        assert not bad.any(), (
            f"{entry['name']} ({layout}, {used}): {int(bad.sum())} of {bad.size} values off, "
            f"worst at {np.unravel_index(np.argmax(err), err.shape)}: max |err| {err.max():.3g}")
    if ran == 0:
        pytest.skip(f"{algorithms[0]} does not support {entry['name']}")
