"""convfind.onnx: problems() against ONNX Runtime's own fusions, the problem-list text,
the command line, and the errors for models that cannot be used."""

import collections
import io
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import convfind.onnx as cfonnx
import models
from convfind.onnx._graph import convolutions

PACKAGE_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [os.path.dirname(os.path.dirname(os.path.dirname(cfonnx.__file__)))] + sys.path))


def ort_fused(model, tmp_path):
    """What ONNX Runtime's CPU provider makes of each convolution, with its blocked
    NCHWc kernels off (the FusedConv path): (op, X, Z, activation, bias, W shape)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(tmp_path / "ort.onnx")
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"],
                         disabled_optimizers=["NchwcTransformer"])
    opt = onnx.load(str(tmp_path / "ort.onnx"))
    shapes = {t.name: tuple(t.dims) for t in opt.graph.initializer}
    out = []
    for n in opt.graph.node:
        if n.op_type not in ("Conv", "ConvTranspose", "FusedConv"):
            continue
        act = next((a.s.decode() for a in n.attribute if a.name == "activation"), "none")
        z = n.input[3] if n.op_type == "FusedConv" and len(n.input) > 3 and n.input[3] else None
        out.append(("conv_transpose" if n.op_type == "ConvTranspose" else "conv", n.input[0], z,
                    cfonnx._graph.ACTIVATIONS.get(act, act),
                    len(n.input) > 2 and bool(n.input[2]), shapes[n.input[1]]))
    return collections.Counter(out)


def ours(model):
    _, convs, _ = convolutions(model, resolve=False)
    return collections.Counter(
        (c.op, c.x, c.z, c.activation, c.has_bias,
         tuple(c.w_value.shape) if c.w_value is not None else c.w_shape) for c in convs)


def fusion_model():
    """Every pattern once: BN / Add / Mul folds, Conv + Add without bias (not fused),
    Conv + Add + Clip, HardSigmoid, a Conv whose output is also a graph output."""
    rng = np.random.default_rng(5)

    def init(name, shape, positive=False):
        a = rng.standard_normal(shape).astype(np.float32)
        return numpy_helper.from_array(np.abs(a) + 0.5 if positive else a, name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"]),
        helper.make_node("Mul", ["n1", "k"], ["m1"]),
        helper.make_node("Add", ["m1", "a"], ["a1"]),
        helper.make_node("HardSigmoid", ["a1"], ["h1"], alpha=0.3),
        helper.make_node("Conv", ["h1", "w2"], ["c2"], pads=[1] * 4),
        helper.make_node("Add", ["c2", "h1"], ["a2"]),
        helper.make_node("Conv", ["a2", "w3", "b3"], ["c3"], pads=[1] * 4),
        helper.make_node("Add", ["h1", "c3"], ["a3"]),
        helper.make_node("Clip", ["a3", "lo", ""], ["y"]),
        helper.make_node("Conv", ["y", "w4", "b4"], ["c4"]),
        helper.make_node("Relu", ["c4"], ["r4"]),
    ]
    inits = [init("w1", (8, 8, 3, 3)), init("s", (8,)), init("bb", (8,)), init("m", (8,)),
             init("v", (8,), True), init("k", (8, 1, 1)), init("a", (1, 8, 1, 1)),
             init("w2", (8, 8, 3, 3)), init("w3", (8, 8, 3, 3)), init("b3", (8,)),
             numpy_helper.from_array(np.array(0.5, np.float32), "lo"),
             init("w4", (4, 8, 1, 1)), init("b4", (4,))]
    graph = helper.make_graph(
        nodes, "fusions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
        [helper.make_tensor_value_info("c4", TensorProto.FLOAT, [1, 4, 12, 12]),
         helper.make_tensor_value_info("r4", TensorProto.FLOAT, [1, 4, 12, 12])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)])


@pytest.mark.parametrize("name", ["fusions", "resnet50", "mobilenet_v2", "unet_small"])
def test_fusions_match_onnx_runtime(name, tmp_path):
    model = fusion_model() if name == "fusions" else models.MODELS[name]()
    assert ours(model) == ort_fused(model, tmp_path)


def test_fusion_model_problems():
    probs = cfonnx.problems(fusion_model())
    assert [(p.bias, p.residual, p.act) for p in probs] == [
        (True, False, "hard_sigmoid"), (False, False, "none"), (True, True, "clip"),
        (True, False, "none")]
    assert probs[0].alpha == pytest.approx(0.3) and probs[0].beta == 0.5
    assert probs[2].alpha == 0.5 and probs[2].beta == pytest.approx(3.4028234663852886e38)


def test_resnet50_problem_list():
    probs = cfonnx.problems(models.resnet50(), {"input": (1, 3, 224, 224)})
    assert len(probs) == 53 and len(cfonnx.merge(probs)) == 24
    assert all(p.weights == "const" and p.bias and p.dtype == "f32" for p in probs)
    assert sum(p.residual for p in probs) == 16 and sum(p.act == "relu" for p in probs) == 49
    text = io.StringIO()
    cfonnx.write_problem_list(probs, text, source="resnet50")
    lines = text.getvalue().splitlines()
    assert lines[:2] == ["# resnet50", "# 53 convolutions, 24 distinct problems (convfind.onnx)"]
    assert lines[2] == ("name=conv_3 count=1 op=conv x=1,3,224,224 w=64,3,7,7 pads=3,3,3,3 "
                        "strides=2,2 kernel_shape=7,7 bias=1 residual=0 act=relu dtype=f32 "
                        "weights=const")


def test_format_of_every_key():
    p = cfonnx.Problem(name="t", op="conv_transpose", x=(2, 4, 5, 5), w=(4, 2, 3, 3), group=2,
                       strides=(2, 2), output_padding=(1, 1), output_shape=(10, 10),
                       auto_pad="same_upper", act="leaky_relu", alpha=0.2, layout="nhwc",
                       dtype="f16", math="tf32", weights="var", count=3)
    assert cfonnx.format_problem(p) == (
        "name=t count=3 op=conv_transpose x=2,4,5,5 w=4,2,3,3 group=2 strides=2,2 "
        "output_padding=1,1 output_shape=10,10 auto_pad=same_upper bias=0 residual=0 "
        "act=leaky_relu alpha=0.200000003 layout=nhwc dtype=f16 math=tf32 weights=var")


def test_problem_keys_are_the_keys_a_rewritten_session_plans(tmp_path):
    import convfind
    import convfind.onnxruntime as cfort

    ctx = convfind.Context(threads=1, policy="heuristic", db=":memory:")
    model = models.unet_small()
    shape = (1, 3, 16, 12)
    keys = {ctx.key(p.x, p.w, **p.attributes()) for p in cfonnx.problems(model, {"input": shape})}
    session = cfort.InferenceSession(model, context=ctx)
    session.run(None, {"input": np.zeros(shape, np.float32)})
    planned = {plan.key for segment in cfort._kernel._nodes.values()
               if isinstance(segment, cfort._kernel.Segment)
               and segment.steps[0][0].context is ctx for plan in segment.plans()}
    assert planned == keys


def test_symbolic_dims_must_be_bound():
    with pytest.raises(cfonnx.ModelError, match=r"input X 'input' is not known: \(N, 3, 224"):
        cfonnx.problems(models.resnet50())
    with pytest.raises(cfonnx.ModelError, match="'image', which is not a graph input"):
        cfonnx.problems(models.resnet50(), {"image": (1, 3, 224, 224)})
    with pytest.raises(cfonnx.ModelError, match="rank 4"):
        cfonnx.problems(models.resnet50(), {"input": (1, 3, 224)})


def test_invalid_models_give_one_clear_error(tmp_path):
    with pytest.raises(cfonnx.ModelError, match="no such file"):
        cfonnx.problems(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf")
    with pytest.raises(cfonnx.ModelError, match="cannot read the model|not a valid ONNX"):
        cfonnx.problems(bad)
    model = models.unet_small()
    model.graph.node[0].input[1] = "nowhere"
    with pytest.raises(cfonnx.ModelError, match="not a valid ONNX model"):
        cfonnx.problems(model, {"input": (1, 3, 8, 8)})


def test_external_data_is_read(tmp_path):
    path = tmp_path / "unet.onnx"
    onnx.save_model(models.unet_small(), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size > 10000
    probs = cfonnx.problems(path, {"input": (1, 3, 8, 8)})
    assert len(probs) == 13 and all(p.weights == "const" for p in probs)


def test_other_element_types_are_left_out_with_a_warning():
    model = models.unet_small()
    for t in model.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    for v in list(model.graph.input) + list(model.graph.output):
        v.type.tensor_type.elem_type = TensorProto.DOUBLE
    with pytest.warns(UserWarning, match="DOUBLE is not one convfind runs"):
        assert cfonnx.problems(model, {"input": (1, 3, 8, 8)}) == []


def test_command_line(tmp_path):
    path = tmp_path / "unet.onnx"
    onnx.save(models.unet_small(), str(path))
    run = subprocess.run([sys.executable, "-m", "convfind.onnx", str(path), "--input-shape",
                          "input=1,3,16,16"], capture_output=True, text=True, env=PACKAGE_ENV)
    assert run.returncode == 0, run.stderr
    lines = [l for l in run.stdout.splitlines() if l and not l.startswith("#")]
    assert len(lines) == 11
    assert all(all("=" in tok for tok in l.split()) for l in lines)
    run = subprocess.run([sys.executable, "-m", "convfind.onnx", str(path)],
                         capture_output=True, text=True, env=PACKAGE_ENV)
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert "--input-shape" in run.stderr
    run = subprocess.run([sys.executable, "-m", "convfind.onnx", str(path), "--input-shape",
                          "input=1,x"], capture_output=True, text=True, env=PACKAGE_ENV)
    assert run.returncode == 2
