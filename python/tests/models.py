"""ONNX test models built with onnx.helper: ResNet-50, MobileNetV2 and a small U-Net.

Seeded random weights, no downloads.  Batch (and, for the U-Net, height and width) are
symbolic, so one model serves several input shapes.  Weights are scaled so that
activations stay of order one through the whole network, which keeps the comparison
against ONNX Runtime meaningful at a fixed tolerance.  Used by the tests and by
python/bench.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class _Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, array, prefix="c"):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower() + "_")
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, group=1, gain=1.0, bias=True, op="Conv"):
        fan_in = cin // group * k * k
        shape = (cout, cin // group, k, k) if op == "Conv" else (cin, cout // group, k, k)
        w = self.const(self.rng.standard_normal(shape) * gain * np.sqrt(2.0 / fan_in), "w")
        inputs = [x, w]
        if bias:
            inputs.append(self.const(self.rng.standard_normal(cout) * 0.05, "b"))
        pads = [0] * 4 if op == "ConvTranspose" else [k // 2] * 4
        return self.node(op, inputs, kernel_shape=[k, k], strides=[stride, stride],
                         pads=pads, group=group)

    def model(self, name, inputs, output, out_shape):
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                               for n, s in inputs],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="convfind tests")
        onnx.checker.check_model(model)
        return model


def _head(b, x, channels, classes):
    pooled = b.node("GlobalAveragePool", [x])
    flat = b.node("Flatten", [pooled], axis=1)
    w = b.const(b.rng.standard_normal((classes, channels)) / np.sqrt(channels), "fc")
    return b.node("Gemm", [flat, w, b.const(np.zeros(classes), "fcb")], transB=1)


def resnet50(seed=0, classes=1000):
    """ResNet-50 v1.5 with batch normalisation folded (as exporters write it)."""
    b = _Builder(seed)
    x = b.node("Relu", [b.conv("input", 3, 64, 7, stride=2)])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        for i in range(blocks):
            stride = 2 if i == 0 and stage > 0 else 1
            y = b.node("Relu", [b.conv(x, cin, width, 1)])
            y = b.node("Relu", [b.conv(y, width, width, 3, stride=stride)])
            y = b.conv(y, width, width * 4, 1, gain=0.3)
            short = b.conv(x, cin, width * 4, 1, stride=stride, gain=0.5) if i == 0 else x
            x = b.node("Relu", [b.node("Add", [y, short])])
            cin = width * 4
    out = _head(b, x, cin, classes)
    return b.model("resnet50", [("input", ["N", 3, 224, 224])], out, ["N", classes])


def mobilenet_v2(seed=0, classes=1000):
    """MobileNetV2 (width 1.0): Clip(0, 6) activations, depthwise 3x3, residual Adds."""
    b = _Builder(seed)
    lo, hi = b.const(np.float32(0), "lo"), b.const(np.float32(6), "hi")

    def relu6(v):
        return b.node("Clip", [v, lo, hi])

    x = relu6(b.conv("input", 3, 32, 3, stride=2))
    cin = 32
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    for expand, cout, repeats, first_stride in settings:
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            hidden = cin * expand
            y = relu6(b.conv(x, cin, hidden, 1)) if expand != 1 else x
            y = relu6(b.conv(y, hidden, hidden, 3, stride=stride, group=hidden))
            y = b.conv(y, hidden, cout, 1, gain=0.5)
            x = b.node("Add", [y, x]) if stride == 1 and cin == cout else y
            cin = cout
    x = relu6(b.conv(x, cin, 1280, 1))
    out = _head(b, x, 1280, classes)
    return b.model("mobilenet_v2", [("input", ["N", 3, 224, 224])], out, ["N", classes])


def unet_small(seed=0, base=16):
    """A small U-Net: two downsamplings, ConvTranspose upsampling with skip
    connections, LeakyRelu inside and a Sigmoid output; height and width symbolic
    (multiples of 4)."""
    b = _Builder(seed)

    def double_conv(v, cin, cout):
        v = b.node("Relu", [b.conv(v, cin, cout, 3)])
        return b.node("LeakyRelu", [b.conv(v, cout, cout, 3)], alpha=0.1)

    e1 = double_conv("input", 3, base)
    e2 = double_conv(b.node("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2]), base, 2 * base)
    mid = double_conv(b.node("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2]),
                      2 * base, 4 * base)
    u2 = b.conv(mid, 4 * base, 2 * base, 2, stride=2, op="ConvTranspose")
    d2 = double_conv(b.node("Concat", [u2, e2], axis=1), 4 * base, 2 * base)
    u1 = b.conv(d2, 2 * base, base, 2, stride=2, op="ConvTranspose")
    d1 = double_conv(b.node("Concat", [u1, e1], axis=1), 2 * base, base)
    out = b.node("Sigmoid", [b.conv(d1, base, 1, 1)])
    return b.model("unet_small", [("input", ["N", 3, "H", "W"])], out, ["N", 1, "H", "W"])


MODELS = {"resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "unet_small": unet_small}
