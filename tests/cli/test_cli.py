"""test_cli.py - end-to-end tests of the convfind command-line tool.

Runs the built `convfind` (path in $CONVFIND_CLI, set by ctest) on small .npy files
written by numpy and compares `convfind run` with onnx.reference, the ONNX
specification's own implementation.  Bad inputs must give a non-zero exit, exactly one
line on stderr and no output file.
"""
import json
import os
import subprocess
import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

CLI = os.environ.get("CONVFIND_CLI", "")


@pytest.fixture(scope="module")
def cli():
    if not CLI or not os.access(CLI, os.X_OK):
        pytest.fail("CONVFIND_CLI must name the built convfind executable, got %r" % CLI)
    return CLI


def invoke(cli, args, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=120)


def save(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, array)
    return path


def onnx_reference(op, x, w, b, attrs):
    """Y of one ONNX Conv/ConvTranspose node, computed by onnx.reference.

    onnx.reference's ConvTranspose fails on group > 1 (it reshapes W wrongly), so a
    grouped ConvTranspose is computed as its definition says: one ungrouped
    ConvTranspose per group on that group's channels, concatenated."""
    group = attrs.get("group", 1)
    if op == "ConvTranspose" and group > 1:
        one = dict(attrs, group=1)
        bs = np.split(b, group) if b is not None else [None] * group
        parts = [onnx_reference(op, xg, wg, bg, one)
                 for xg, wg, bg in zip(np.split(x, group, axis=1), np.split(w, group), bs)]
        return np.concatenate(parts, axis=1)
    inputs = ["X", "W"] + (["B"] if b is not None else [])
    node = helper.make_node(op, inputs, ["Y"], **attrs)
    infos = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in inputs]
    graph = helper.make_graph([node], "g", infos,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    feeds = {"X": x, "W": w}
    if b is not None:
        feeds["B"] = b
    return ReferenceEvaluator(model).run(None, feeds)[0]


def activate(y, spec):
    if spec is None:
        return y
    name, _, params = spec.partition(":")
    p = [float(v) for v in params.split(",")] if params else []
    if name == "relu":
        return np.maximum(y, 0)
    if name == "leaky_relu":
        return np.where(y < 0, p[0] * y, y)
    if name == "clip":
        return np.clip(y, p[0], p[1])
    if name == "sigmoid":
        return 1 / (1 + np.exp(-y))
    if name == "tanh":
        return np.tanh(y)
    if name == "hard_sigmoid":
        return np.clip(p[0] * y + p[1], 0, 1)
    raise ValueError(spec)


def channels_last(a):
    return np.moveaxis(a, 1, -1)


def flag_list(values):
    return ",".join(str(v) for v in values)


# (id, op, x shape (NCHW), w shape, bias, onnx attrs, activation, residual, layout)
CASES = [
    ("conv2d_pads_dil_group", "Conv", (2, 4, 9, 8), (6, 2, 3, 2), True,
     dict(pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2], group=2), None, False, "nchw"),
    ("conv2d_nhwc_same_lower_residual", "Conv", (1, 3, 7, 6), (5, 3, 2, 3), True,
     dict(auto_pad="SAME_LOWER", strides=[2, 2]), "leaky_relu:0.1", True, "nhwc"),
    ("conv1d_clip", "Conv", (2, 3, 11), (4, 3, 3), False,
     dict(pads=[2, 1], strides=[3]), "clip:-0.5,0.5", False, "nchw"),
    ("conv3d_depthwise_nhwc", "Conv", (1, 4, 5, 4, 6), (8, 1, 2, 3, 2), True,
     dict(group=4, pads=[0, 1, 1, 1, 1, 0]), "hard_sigmoid:0.2,0.5", False, "nhwc"),
    ("convtranspose_output_shape", "ConvTranspose", (1, 4, 5, 4), (4, 3, 3, 3), True,
     dict(strides=[2, 2], output_shape=[12, 9], group=1), None, False, "nchw"),
    ("convtranspose_output_shape_nhwc_group", "ConvTranspose", (2, 4, 3, 5), (4, 1, 3, 2),
     False, dict(strides=[3, 2], dilations=[2, 1], output_shape=[11, 10], group=2), "tanh",
     True, "nhwc"),
    ("convtranspose_output_padding", "ConvTranspose", (1, 2, 4, 3), (2, 3, 3, 3), True,
     dict(strides=[2, 3], output_padding=[1, 2], pads=[1, 0, 0, 1]), "sigmoid", False, "nchw"),
]

FLAG_OF = {"pads": "--pads", "strides": "--strides", "dilations": "--dilations",
           "group": "--group", "auto_pad": "--auto-pad", "output_shape": "--output-shape",
           "output_padding": "--output-padding", "kernel_shape": "--kernel-shape"}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_run_matches_onnx_reference(cli, tmp_path, case):
    _, op, xs, ws, with_bias, attrs, act, with_residual, layout = case
    rng = np.random.default_rng(zlib.crc32(case[0].encode()))
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    m = ws[0] if op == "Conv" else ws[1] * attrs.get("group", 1)
    b = rng.standard_normal(m).astype(np.float32) if with_bias else None
    y = onnx_reference(op, x, w, b, attrs)
    z = rng.standard_normal(y.shape).astype(np.float32) if with_residual else None
    expected = activate(y + (z if z is not None else 0), act)

    store = channels_last if layout == "nhwc" else (lambda a: a)
    args = ["run", "--op", "conv" if op == "Conv" else "conv_transpose",
            "--input", save(tmp_path, "x.npy", np.ascontiguousarray(store(x))),
            "--weights", save(tmp_path, "w.npy", w), "--output", tmp_path / "y.npy",
            "--layout", layout]
    if b is not None:
        args += ["--bias-file", save(tmp_path, "b.npy", b)]
    if z is not None:
        args += ["--residual-file", save(tmp_path, "z.npy", np.ascontiguousarray(store(z)))]
    if act is not None:
        args += ["--activation", act]
    for key, value in attrs.items():
        args += [FLAG_OF[key], flag_list(value) if isinstance(value, list) else value]
    r = invoke(cli, args, tmp_path)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "y.npy")
    assert got.dtype == np.float32
    assert got.shape == store(expected).shape
    np.testing.assert_allclose(got, store(expected), rtol=1e-4, atol=1e-4)


def test_threads_and_forced_algorithm(cli, tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    listing = invoke(cli, ["run", "--help"], tmp_path)
    assert listing.returncode == 0
    r = invoke(cli, ["run", "--input", save(tmp_path, "x.npy", x),
                     "--weights", save(tmp_path, "w.npy", w), "--output", tmp_path / "y.npy",
                     "--threads", "2", "--algo", "cpu.reference", "--pads=1,1,1,1"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ran cpu.reference (forced) in "), r.stdout
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"),
                               onnx_reference("Conv", x, w, None, dict(pads=[1, 1, 1, 1])),
                               rtol=1e-4, atol=1e-4)


def write_bytes(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def valid_npy_bytes(shape=(1, 2, 5, 5)):
    import io
    buf = io.BytesIO()
    np.save(buf, np.ones(shape, np.float32))
    return buf.getvalue()


# (id, how to make X / extra files, extra args, a substring of the one stderr line)
BAD = [
    ("malformed_strides", {}, ["--strides", "1,x"], "'x' in '1,x' is not an integer"),
    ("empty_list_item", {}, ["--pads", "1,,1,1"], "is not an integer"),
    ("group_not_integer", {}, ["--group", "abc"], "'abc' is not a 64-bit integer"),
    ("group_zero_library", {}, ["--group", "0"], "convfind: CONVFIND_ERR_"),
    ("unknown_flag", {}, ["--bogus", "1"], "unknown flag '--bogus'"),
    ("flag_twice", {}, ["--group", "1", "--group", "1"], "more than once"),
    ("missing_value", {}, ["--strides"], "needs a value"),
    ("bad_auto_pad", {}, ["--auto-pad", "SAME"], "unknown value 'SAME'"),
    ("bad_layout", {}, ["--layout", "nchwc"], "unknown value 'nchwc'"),
    ("bad_activation", {}, ["--activation", "gelu"], "unknown activation 'gelu'"),
    ("activation_params", {}, ["--activation", "clip:0"], "takes 2 parameters"),
    ("activation_number", {}, ["--activation", "leaky_relu:abc"], "'abc' is not a float32 number"),
    ("unknown_algo", {}, ["--algo", "no.such.algo"], "unknown algorithm 'no.such.algo' "
     "(this build has: "),
    ("threads_not_integer", {}, ["--threads", "x2"], "not a 64-bit integer"),
    ("positional", {}, ["extra"], "unexpected argument 'extra'"),
    ("big_endian", {"x": lambda: np.ones((1, 2, 5, 5), ">f4")}, [], "big-endian"),
    ("float64", {"x": lambda: np.ones((1, 2, 5, 5), np.float64)}, [], "dtype '<f8'"),
    ("fortran", {"x": lambda: np.asfortranarray(np.ones((1, 2, 5, 5), np.float32))}, [],
     "Fortran"),
    ("truncated", {"x": lambda: valid_npy_bytes()[:-3]}, [], "truncated"),
    ("bad_magic", {"x": lambda: b"PK\x03\x04" + valid_npy_bytes()[4:]}, [], "not a .npy file"),
    ("bad_header", {"x": lambda: valid_npy_bytes().replace(b"'shape'", b"'shapf'")}, [],
     "unknown key 'shapf'"),
    ("overflow_header", {"x": lambda: valid_npy_bytes().replace(
        b"(1, 2, 5, 5)", b"(4294967296, 4294967296, 1)")[:200]}, [], "overflow"),
    ("missing_file", {"x": lambda: None}, [], "cannot open"),
    ("rank_2", {"x": lambda: np.ones((2, 5), np.float32)}, [], "rank 2"),
    ("w_channels", {"w": lambda: np.ones((3, 4, 3, 3), np.float32)}, [], "convfind: CONVFIND_ERR_"),
    ("bias_shape", {"b": lambda: np.ones((4,), np.float32)}, [], "expected (3,)"),
    ("residual_shape", {"z": lambda: np.ones((1, 3, 5, 5), np.float32)}, [],
     "does not match the output shape (1, 3, 3, 3)"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_fails_with_one_line(cli, tmp_path, case):
    _, makers, extra, needle = case
    files = {"x": lambda: np.ones((1, 2, 5, 5), np.float32),
             "w": lambda: np.ones((3, 2, 3, 3), np.float32)}
    files.update(makers)
    args = ["run"]
    flag = {"x": "--input", "w": "--weights", "b": "--bias-file", "z": "--residual-file"}
    for role in ("x", "w", "b", "z"):
        if role not in files:
            continue
        value = files[role]()
        if value is None:
            path = tmp_path / (role + "_missing.npy")
        elif isinstance(value, bytes):
            path = write_bytes(tmp_path, role + ".npy", value)
        else:
            path = save(tmp_path, role + ".npy", value)
        args += [flag[role], path]
    out = tmp_path / "y.npy"
    r = invoke(cli, args + ["--output", out] + extra, tmp_path)
    assert r.returncode != 0
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], lines[0]
    assert not out.exists()


def test_missing_required_flag(cli, tmp_path):
    r = invoke(cli, ["run", "--input", "a.npy", "--weights", "b.npy"], tmp_path)
    assert r.returncode != 0
    assert r.stderr.splitlines() == ["convfind run: missing required flag --output Y.npy "
                                     "(see convfind help run)"]


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"], ["help", "run"],
                                  ["run", "--help"], ["demo", "--help"], ["help", "demo"]])
def test_help(cli, tmp_path, args):
    r = invoke(cli, args, tmp_path)
    assert r.returncode == 0
    assert r.stdout.startswith("usage: convfind")
    assert r.stderr == ""


def test_run_help_lists_every_flag(cli, tmp_path):
    text = invoke(cli, ["help", "run"], tmp_path).stdout
    for flag in ["--op", "--input", "--weights", "--bias-file", "--residual-file", "--output",
                 "--pads", "--strides", "--dilations", "--group", "--kernel-shape",
                 "--auto-pad", "--output-padding", "--output-shape", "--activation",
                 "--layout", "--math", "--algo", "--threads", "--device", "--workspace",
                 "--db", "--json"]:
        assert flag in text, flag


def test_version_and_unknown_command(cli, tmp_path):
    r = invoke(cli, ["--version"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("convfind ")
    r = invoke(cli, ["frobnicate"], tmp_path)
    assert r.returncode != 0
    assert r.stderr.splitlines() == ["convfind: unknown command 'frobnicate' "
                                     "(see convfind --help)"]
    assert invoke(cli, [], tmp_path).returncode != 0


def test_run_summary_json_and_db(cli, tmp_path):
    """run says which algorithm ran and where the decision came from, and uses --db: a
    second run finds the decision the first one stored."""
    rng = np.random.default_rng(11)
    x = save(tmp_path, "x.npy", rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
    w = save(tmp_path, "w.npy", rng.standard_normal((4, 4, 3, 3)).astype(np.float32))
    db = tmp_path / "run.sqlite"
    args = ["run", "--input", x, "--weights", w, "--output", tmp_path / "y.npy", "--db", db,
            "--json"]
    first = invoke(cli, args, tmp_path)
    assert first.returncode == 0, first.stderr
    a = json.loads(first.stdout)
    assert a["source"] == "measured" and a["shape"] == [1, 4, 6, 6] and not a["fell_back"]
    assert a["algorithm"] in invoke(cli, ["algos"], tmp_path).stdout.split()
    second = json.loads(invoke(cli, args, tmp_path).stdout)
    assert second["source"] == "stored" and second["algorithm"] == a["algorithm"]
    assert second["key"] == a["key"]


def test_algos_lists_this_builds_algorithms(cli, tmp_path):
    text = invoke(cli, ["algos"], tmp_path).stdout.split()
    assert "cpu.reference" in text
    listed = json.loads(invoke(cli, ["algos", "--json"], tmp_path).stdout)
    assert listed["algorithms"] == text
    assert isinstance(listed["cuda"]["available"], bool)


def test_run_on_the_gpu_matches_the_cpu(cli, tmp_path):
    listed = json.loads(invoke(cli, ["algos", "--json"], tmp_path).stdout)
    if not listed["cuda"]["available"]:
        pytest.skip("NO GPU: CUDA device 0 cannot be used: " + listed["cuda"]["reason"])
    rng = np.random.default_rng(12)
    x = save(tmp_path, "x.npy", rng.standard_normal((2, 8, 9, 9)).astype(np.float32))
    w = save(tmp_path, "w.npy", rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
    b = save(tmp_path, "b.npy", rng.standard_normal(16).astype(np.float32))
    common = ["run", "--input", x, "--weights", w, "--bias-file", b, "--pads", "1,1,1,1",
              "--activation", "relu", "--db", ":memory:"]
    cpu = invoke(cli, common + ["--output", tmp_path / "cpu.npy"], tmp_path)
    gpu = invoke(cli, common + ["--output", tmp_path / "gpu.npy", "--device", "cuda",
                                "--math", "strict"], tmp_path)
    assert cpu.returncode == 0 and gpu.returncode == 0, gpu.stderr
    assert gpu.stdout.startswith("ran cuda."), gpu.stdout
    np.testing.assert_allclose(np.load(tmp_path / "gpu.npy"), np.load(tmp_path / "cpu.npy"),
                               rtol=1e-4, atol=1e-4)


def test_device_without_cuda_is_one_line(cli, tmp_path):
    listed = json.loads(invoke(cli, ["algos", "--json"], tmp_path).stdout)
    if listed["cuda"]["available"]:
        pytest.skip("CUDA is available here: nothing to refuse")
    r = invoke(cli, ["find", "--x-shape", "1,4,6,6", "--w-shape", "4,4,3,3", "--device", "cuda",
                     "--db", ":memory:"], tmp_path)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("convfind: CONVFIND_ERR_")
