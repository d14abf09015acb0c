"""convfind.onnxruntime: rewritten models against plain ONNX Runtime.

Tolerance: |y - y_ort| <= 1e-3 * max|y_ort| + 1e-3 * |y_ort| elementwise; both compute
in float32 with different summation orders, through up to 53 layers."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime_extensions import PyCustomOpDef, onnx_op

import convfind
import convfind.onnxruntime as cfort
from convfind.onnxruntime import _kernel
import models


def plain(model, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})[0]


def close(y, ref):
    np.testing.assert_allclose(y, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))


@pytest.fixture(scope="module")
def ctx():
    return convfind.Context(threads=2, policy="heuristic", db=":memory:")


@pytest.mark.parametrize("name,shapes", [
    ("resnet50", [(1, 3, 224, 224)]),
    ("mobilenet_v2", [(2, 3, 224, 224)]),
    ("unet_small", [(1, 3, 64, 48), (2, 3, 32, 32)]),
])
def test_rewritten_models_match_onnx_runtime(name, shapes, ctx):
    model = models.MODELS[name]()
    session = cfort.InferenceSession(model, context=ctx)
    ops = [n.op_type for n in session.model.graph.node]
    assert not {"Conv", "ConvTranspose"} & set(ops)
    # Runs of convolutions between ONNX Runtime's own nodes (MaxPool, Concat) are one
    # operator each: ResNet-50's stem and body, MobileNetV2 whole, the U-Net's 5 runs.
    assert [len(s) for s in session.segments] == \
        {"resnet50": [1, 52], "mobilenet_v2": [52], "unet_small": [2, 2, 3, 3, 3]}[name]
    assert sum(op.startswith("ConvfindSegment_") for op in ops) == len(session.segments)
    rng = np.random.default_rng(11)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        close(session.run(None, {"input": x})[0], plain(model, x))


def test_runs_after_runs_keep_their_results(ctx):
    # Segments write the values that stay inside them into arrays they keep between
    # calls: a later run must neither read a stale one nor overwrite what an earlier run
    # returned.
    model = models.MODELS["unet_small"]()
    session = cfort.InferenceSession(model, context=ctx)
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(3)]
    ys = [session.run(None, {"input": x})[0] for x in xs]
    for x, y in zip(xs, ys):
        close(y, plain(model, x))
    close(session.run(None, {"input": xs[0]})[0], ys[0])
    # Those arrays start on a 64-byte boundary, as the kernels' vector rows want.
    ids = [a.s.decode() for n in session.model.graph.node if n.op_type.startswith("Convfind")
           for a in n.attribute if a.name == "node"]
    kept = [y for i in ids for per_step in getattr(_kernel._nodes[i].local, "buffers", [])
            for y in per_step.values()]
    assert kept and all(y.ctypes.data % 64 == 0 for y in kept)


def test_a_segment_with_several_inputs_and_outputs(ctx):
    # Convolutions A(a), B(b), C(A) in a row make one segment of inputs a, b and outputs
    # A (read later by MaxPool), B and C (graph outputs); A's value also leaves it.
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "wa"),
             numpy_helper.from_array(rng.standard_normal((2, 3, 1, 1)).astype(np.float32), "wb"),
             numpy_helper.from_array(rng.standard_normal((5, 4, 3, 3)).astype(np.float32), "wc"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "bc")]
    nodes = [helper.make_node("Conv", ["a", "wa"], ["ya"], name="A", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["b", "wb"], ["yb"], name="B"),
             helper.make_node("Conv", ["ya", "wc", "bc"], ["yc"], name="C", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["yc"], ["yr"], name="R"),
             helper.make_node("MaxPool", ["ya"], ["pool"], kernel_shape=[2, 2], strides=[2, 2])]
    value = lambda name, c: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, c, 8, 8])
    graph = helper.make_graph(
        nodes, "segment", [value("a", 3), value("b", 3)],
        [value("yb", 2), value("yr", 5),
         helper.make_tensor_value_info("pool", TensorProto.FLOAT, [1, 4, 4, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)])
    session = cfort.InferenceSession(model, context=ctx)
    assert session.segments == [["A", "B", "C"]]
    segment = session.model.graph.node[0]
    assert (segment.op_type, list(segment.input), list(segment.output)) == \
        ("ConvfindSegment_2_3", ["a", "b"], ["ya", "yb", "yr"])
    feed = {"a": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
            "b": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    refs = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feed)
    for y, ref in zip(session.run(None, feed), refs):
        close(y, ref)


def test_a_residual_used_for_the_last_time_is_added_in_place(ctx):
    # A(x) -> a, B(a) -> b, Relu(C(b) + bias + a) -> r, D(r): C's residual a is the
    # segment's own array and C reads it last, so C writes r into a's array (ONNX
    # Runtime's in-place Add).
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32), "wa"),
             numpy_helper.from_array(rng.standard_normal((4, 6, 1, 1)).astype(np.float32), "wb"),
             numpy_helper.from_array(rng.standard_normal((6, 4, 3, 3)).astype(np.float32), "wc"),
             numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "bc"),
             numpy_helper.from_array(rng.standard_normal((2, 6, 1, 1)).astype(np.float32), "wd")]
    nodes = [helper.make_node("Conv", ["input", "wa"], ["a"], name="A", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "wb"], ["b"], name="B"),
             helper.make_node("Conv", ["b", "wc", "bc"], ["c"], name="C", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "a"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Conv", ["r", "wd"], ["y"], name="D")]
    value = lambda name, c: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, c, 9, 9])
    graph = helper.make_graph(nodes, "residual", [value("input", 3)], [value("y", 2)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)])
    session = cfort.InferenceSession(model, context=ctx)
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    for _ in range(2):
        close(session.run(None, {"input": x})[0], plain(model, x))
    (node,) = [a.s.decode() for n in session.model.graph.node for a in n.attribute
               if a.name == "node"]
    written = []

    def execute(k, plan, x, z, y):
        written.append(y is not None and z is not None and y is z)
        return plan.execute(x, z=z, out=y)

    close(_kernel._nodes[node].run([x], execute)[0], plain(model, x))
    assert written == [False, False, True, False]


def test_a_convolution_nothing_reads_still_makes_a_valid_operator(ctx):
    w = numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["unread"], name="dead"),
         helper.make_node("Relu", ["input"], ["y"])], "dead",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)])
    session = cfort.InferenceSession(model, context=ctx)
    assert [list(n.output) for n in session.model.graph.node][0] == ["unread"]
    x = np.random.default_rng(6).standard_normal((1, 3, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(session.run(None, {"input": x})[0], np.maximum(x, 0))


def test_onnx_runtime_threads_do_not_spin_unless_asked(ctx):
    model = models.unet_small()
    options = ort.SessionOptions()
    cfort.InferenceSession(model, options, context=ctx)
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    assert cfort.session_options(options) is options
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"


def test_portable_rewrite_runs_in_any_session(ctx):
    model = models.unet_small()
    rewritten = cfort.rewrite(model)
    ops = {n.op_type for n in rewritten.graph.node}
    assert "ConvfindConvB" in ops and "Conv" not in ops
    onnx.checker.check_model(rewritten)
    cfort.set_context(ctx)
    try:
        sess = ort.InferenceSession(rewritten.SerializeToString(), cfort.session_options(),
                                    providers=["CPUExecutionProvider"])
        x = np.random.default_rng(2).standard_normal((1, 3, 16, 20)).astype(np.float32)
        close(sess.run(None, {"input": x})[0], plain(model, x))
    finally:
        cfort.set_context(None)


def test_sessions_share_the_default_context():
    model = models.unet_small()
    assert cfort.InferenceSession(model).context is cfort.InferenceSession(model).context \
        is convfind.default_context()


def test_other_element_types_stay_onnx_runtime_nodes():
    w = numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float16), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["y"])], "f16",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT16, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 2, 4, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)])
    assert [n.op_type for n in cfort.rewrite(model).graph.node] == ["Conv"]


def test_other_python_custom_operators_keep_working(ctx):
    @onnx_op(op_type="CfTestTwice", inputs=[PyCustomOpDef.dt_float],
             outputs=[PyCustomOpDef.dt_float])
    def twice(x):
        return x * 2

    model = models.unet_small()
    rewritten = cfort.rewrite(model)
    last = rewritten.graph.output[0].name
    rewritten.graph.node.append(helper.make_node("CfTestTwice", [last], ["twice"],
                                                 domain=cfort.DOMAIN))
    rewritten.graph.output[0].name = "twice"
    cfort.set_context(ctx)
    try:
        sess = ort.InferenceSession(rewritten.SerializeToString(), cfort.session_options(),
                                    providers=["CPUExecutionProvider"])
        x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(np.float32)
        close(sess.run(None, {"input": x})[0], 2 * plain(model, x))
    finally:
        cfort.set_context(None)
