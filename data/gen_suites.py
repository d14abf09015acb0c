#!/usr/bin/env python3
"""gen_suites.py - writes the benchmark suites in data/suites/ from architecture definitions.

    data/gen_suites.py [OUTDIR]        (default: data/suites next to this script)

Every network below is built layer by layer from its published definition (the paper, or
torchvision's model code where torchvision has the model: the names are torchvision's
module paths), with nothing downloaded.  Identical convolutions within one network become
one row whose `count` is how often they occur.  Each network is written at N = 1 and
N = 8 (ResNet-50 also at N = 32) in the suite format of docs/benchmarks.md; suites that
need nothing more than the 16 legacy columns are written in that form, so `convfind tune`
reads them too.

The script checks each list against what is known of the network: total multiply-adds of
its convolutions against the published figure (torchvision's "GFLOPS", which counts
multiply-adds, less the fully connected layers; Ultralytics' GFLOPs, which count two per
multiply-add), the output size a paper states, and the ResNet-50 and MobileNetV2 rows
against data/resnet50_convs.csv and data/mobilenetv2_convs.csv.  It prints every check
and exits nonzero when one fails, writing nothing.  Only convolutions are listed: pooling,
normalization (folded into the convolutions at inference), activations and fully
connected layers are not.
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import suite_format as sf  # noqa: E402

Shape = collections.namedtuple("Shape", "c x")  # channels, spatial tuple


class Net:
    """Collects the convolutions of one network at N = 1, in execution order."""

    def __init__(self):
        self.layers = []

    def conv(self, name, inp, k, kern, stride=1, pad=None, dil=1, group=1, op="conv"):
        """Appends one convolution; returns its output Shape.  Scalars apply to every
        spatial dim; pad None is 'same' for stride 1 (dil * (kern - 1) / 2 per side)."""
        nd = len(inp.x)

        def per_dim(v):
            return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd
        kern, stride, dil = per_dim(kern), per_dim(stride), per_dim(dil)
        if pad is None:
            pad = tuple(d * (kk - 1) // 2 for kk, d in zip(kern, dil))
        pad = per_dim(pad)
        lay = sf.Layer(name=name, count=1, op=op, n=1, c=inp.c, k=k, group=group, x=inp.x,
                       kern=kern, stride=stride, dil=dil, pads=pad + pad, opad=(0,) * nd)
        self.layers.append(lay)
        return Shape(k, lay.out_spatial())

    def macs(self):
        return sum(lay.macs() for lay in self.layers)


def pool(s, k, stride, pad=0, ceil=False):
    """Spatial size after a max/avg pooling window (no convolution is recorded)."""
    def one(x):
        span = x + 2 * pad - k
        return (span + stride - 1) // stride + 1 if ceil else span // stride + 1
    return Shape(s.c, tuple(one(x) for x in s.x))


# --- ResNet family: torchvision.models.resnet (He et al. 2016; v1.5, stride on the 3x3) ---

def resnet(net, s, blocks, groups=1, width_per_group=64, dilate=(False, False, False)):
    s = net.conv("conv1", s, 64, 7, stride=2, pad=3)
    s = pool(s, 3, 2, 1)
    inplanes, dilation = 64, 1
    for li, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks)):
        stride = 1 if li == 0 else 2
        prev_dilation = dilation
        if li > 0 and dilate[li - 1]:
            dilation *= stride
            stride = 1
        width = planes * width_per_group // 64 * groups
        for b in range(n):
            p = f"layer{li + 1}.{b}"
            d = prev_dilation if b == 0 else dilation
            st = stride if b == 0 else 1
            t = net.conv(p + ".conv1", s, width, 1)
            t = net.conv(p + ".conv2", t, width, 3, stride=st, pad=d, dil=d, group=groups)
            t = net.conv(p + ".conv3", t, planes * 4, 1)
            if b == 0 and (st != 1 or inplanes != planes * 4):
                net.conv(p + ".downsample.0", s, planes * 4, 1, stride=st)
            s, inplanes = t, planes * 4
    return s


def resnet50(net):
    resnet(net, Shape(3, (224, 224)), (3, 4, 6, 3))


def resnet101(net):
    resnet(net, Shape(3, (224, 224)), (3, 4, 23, 3))


def resnext50_32x4d(net):
    resnet(net, Shape(3, (224, 224)), (3, 4, 6, 3), groups=32, width_per_group=4)


def aspp_head(net, s, rates, prefix):
    """DeepLabHead of torchvision.models.segmentation.deeplabv3 (21 classes)."""
    outs = [net.conv(prefix + "0.convs.0.0", s, 256, 1)]
    for i, r in enumerate(rates):
        outs.append(net.conv(f"{prefix}0.convs.{i + 1}.0", s, 256, 3, pad=r, dil=r))
    net.conv(prefix + "0.convs.4.1", Shape(s.c, (1, 1)), 256, 1)  # image pooling branch
    t = net.conv(prefix + "0.project.0", Shape(256 * (len(rates) + 2), s.x), 256, 1)
    t = net.conv(prefix + "1", t, 256, 3)
    net.conv(prefix + "4", t, 21, 1)


def deeplabv3_resnet50(net):
    """Output stride 16 with ASPP rates 6/12/18 on a 513x513 crop: the paper's setting
    (Chen et al. 2017, "Rethinking Atrous Convolution"); torchvision's backbone with
    replace_stride_with_dilation=[False, False, True]."""
    s = resnet(net, Shape(3, (513, 513)), (3, 4, 6, 3), dilate=(False, False, True))
    aspp_head(net, s, (6, 12, 18), "classifier.")


def deeplabv3_torchvision_reference(net):
    """torchvision's deeplabv3_resnet50 as its GFLOPS figure was measured (520x520,
    output stride 8, rates 12/24/36, with the auxiliary FCN head): for the check only."""
    s = resnet(net, Shape(3, (520, 520)), (3, 4, 6, 3), dilate=(False, True, True))
    aspp_head(net, s, (12, 24, 36), "classifier.")
    aux_in = Shape(1024, s.x)
    t = net.conv("aux_classifier.0", aux_in, 256, 3)
    net.conv("aux_classifier.4", t, 21, 1)


# --- MobileNets and EfficientNet: torchvision.models.mobilenetv2/v3, efficientnet ---

def mobilenet_v2(net):
    s = net.conv("features.0.0", Shape(3, (224, 224)), 32, 3, stride=2)
    cfg = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1))
    idx = 1
    for t, c, n, st in cfg:
        for i in range(n):
            p = f"features.{idx}.conv."
            hidden, j = s.c * t, 0
            h = s
            if t != 1:
                h = net.conv(p + "0.0", s, hidden, 1)
                j = 1
            h = net.conv(f"{p}{j}.0", h, hidden, 3, stride=st if i == 0 else 1, group=hidden)
            s = net.conv(f"{p}{j + 1}", h, c, 1)
            idx += 1
    net.conv("features.18.0", s, 1280, 1)


def make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def squeeze_excite(net, prefix, s, squeeze):
    """SE block as two 1x1 convolutions on the pooled 1x1 map."""
    t = net.conv(prefix + "fc1", Shape(s.c, (1, 1)), squeeze, 1)
    net.conv(prefix + "fc2", t, s.c, 1)


def mobilenet_v3_large(net):
    s = net.conv("features.0.0", Shape(3, (224, 224)), 16, 3, stride=2)
    cfg = ((3, 16, 16, False, 1), (3, 64, 24, False, 2), (3, 72, 24, False, 1),
           (5, 72, 40, True, 2), (5, 120, 40, True, 1), (5, 120, 40, True, 1),
           (3, 240, 80, False, 2), (3, 200, 80, False, 1), (3, 184, 80, False, 1),
           (3, 184, 80, False, 1), (3, 480, 112, True, 1), (3, 672, 112, True, 1),
           (5, 672, 160, True, 2), (5, 960, 160, True, 1), (5, 960, 160, True, 1))
    for i, (k, exp, out, se, st) in enumerate(cfg):
        p, j, h = f"features.{i + 1}.block.", 0, s
        if exp != s.c:
            h = net.conv(p + "0.0", s, exp, 1)
            j = 1
        h = net.conv(f"{p}{j}.0", h, exp, k, stride=st, group=exp)
        if se:
            j += 1
            squeeze_excite(net, f"{p}{j}.", h, make_divisible(exp // 4))
        s = net.conv(f"{p}{j + 1}.0", h, out, 1)
    net.conv("features.16.0", s, 960, 1)


def efficientnet_b0(net):
    s = net.conv("features.0.0", Shape(3, (224, 224)), 32, 3, stride=2)
    cfg = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
           (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
    for stage, (e, k, st, out, n) in enumerate(cfg):
        for i in range(n):
            p, j, h = f"features.{stage + 1}.{i}.block.", 0, s
            exp = s.c * e
            if e != 1:
                h = net.conv(p + "0.0", s, exp, 1)
                j = 1
            h = net.conv(f"{p}{j}.0", h, exp, k, stride=st if i == 0 else 1, group=exp)
            squeeze_excite(net, f"{p}{j + 1}.", h, max(1, s.c // 4))
            s = net.conv(f"{p}{j + 2}.0", h, out, 1)
    net.conv("features.8.0", s, 1280, 1)


# --- Inception-v3: torchvision.models.inception (Szegedy et al. 2016), 299x299 ---

def inception_v3(net):
    c = net.conv
    s = c("Conv2d_1a_3x3", Shape(3, (299, 299)), 32, 3, stride=2, pad=0)
    s = c("Conv2d_2a_3x3", s, 32, 3, pad=0)
    s = c("Conv2d_2b_3x3", s, 64, 3, pad=1)
    s = pool(s, 3, 2)
    s = c("Conv2d_3b_1x1", s, 80, 1)
    s = c("Conv2d_4a_3x3", s, 192, 3, pad=0)
    s = pool(s, 3, 2)
    for name, pf in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        c(name + ".branch1x1", s, 64, 1)
        t = c(name + ".branch5x5_1", s, 48, 1)
        c(name + ".branch5x5_2", t, 64, 5, pad=2)
        t = c(name + ".branch3x3dbl_1", s, 64, 1)
        t = c(name + ".branch3x3dbl_2", t, 96, 3, pad=1)
        c(name + ".branch3x3dbl_3", t, 96, 3, pad=1)
        c(name + ".branch_pool", s, pf, 1)
        s = Shape(64 + 64 + 96 + pf, s.x)
    b = c("Mixed_6a.branch3x3", s, 384, 3, stride=2, pad=0)
    t = c("Mixed_6a.branch3x3dbl_1", s, 64, 1)
    t = c("Mixed_6a.branch3x3dbl_2", t, 96, 3, pad=1)
    c("Mixed_6a.branch3x3dbl_3", t, 96, 3, stride=2, pad=0)
    s = Shape(384 + 96 + s.c, b.x)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160),
                     ("Mixed_6e", 192)):
        c(name + ".branch1x1", s, 192, 1)
        t = c(name + ".branch7x7_1", s, c7, 1)
        t = c(name + ".branch7x7_2", t, c7, (1, 7), pad=(0, 3))
        c(name + ".branch7x7_3", t, 192, (7, 1), pad=(3, 0))
        t = c(name + ".branch7x7dbl_1", s, c7, 1)
        t = c(name + ".branch7x7dbl_2", t, c7, (7, 1), pad=(3, 0))
        t = c(name + ".branch7x7dbl_3", t, c7, (1, 7), pad=(0, 3))
        t = c(name + ".branch7x7dbl_4", t, c7, (7, 1), pad=(3, 0))
        c(name + ".branch7x7dbl_5", t, 192, (1, 7), pad=(0, 3))
        c(name + ".branch_pool", s, 192, 1)
        s = Shape(768, s.x)
    t = c("Mixed_7a.branch3x3_1", s, 192, 1)
    b = c("Mixed_7a.branch3x3_2", t, 320, 3, stride=2, pad=0)
    t = c("Mixed_7a.branch7x7x3_1", s, 192, 1)
    t = c("Mixed_7a.branch7x7x3_2", t, 192, (1, 7), pad=(0, 3))
    t = c("Mixed_7a.branch7x7x3_3", t, 192, (7, 1), pad=(3, 0))
    c("Mixed_7a.branch7x7x3_4", t, 192, 3, stride=2, pad=0)
    s = Shape(320 + 192 + s.c, b.x)
    for name in ("Mixed_7b", "Mixed_7c"):
        c(name + ".branch1x1", s, 320, 1)
        t = c(name + ".branch3x3_1", s, 384, 1)
        c(name + ".branch3x3_2a", t, 384, (1, 3), pad=(0, 1))
        c(name + ".branch3x3_2b", t, 384, (3, 1), pad=(1, 0))
        t = c(name + ".branch3x3dbl_1", s, 448, 1)
        t = c(name + ".branch3x3dbl_2", t, 384, 3, pad=1)
        c(name + ".branch3x3dbl_3a", t, 384, (1, 3), pad=(0, 1))
        c(name + ".branch3x3dbl_3b", t, 384, (3, 1), pad=(1, 0))
        c(name + ".branch_pool", s, 192, 1)
        s = Shape(2048, s.x)


# --- VGG-16 (configuration D) and DenseNet-121: torchvision.models.vgg, densenet ---

def vgg16(net):
    s, idx = Shape(3, (224, 224)), 0
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"):
        if v == "M":
            s = pool(s, 2, 2)
            idx += 1
        else:
            s = net.conv(f"features.{idx}", s, v, 3, pad=1)
            idx += 2


def densenet121(net):
    s = net.conv("features.conv0", Shape(3, (224, 224)), 64, 7, stride=2, pad=3)
    s = pool(s, 3, 2, 1)
    for bi, n in enumerate((6, 12, 24, 16)):
        for i in range(n):
            p = f"features.denseblock{bi + 1}.denselayer{i + 1}."
            t = net.conv(p + "conv1", Shape(s.c + 32 * i, s.x), 128, 1)
            net.conv(p + "conv2", t, 32, 3, pad=1)
        s = Shape(s.c + 32 * n, s.x)
        if bi < 3:
            s = net.conv(f"features.transition{bi + 1}.conv", s, s.c // 2, 1)
            s = pool(s, 2, 2)


# --- U-Net (Ronneberger et al. 2015, Fig. 1): 572x572, unpadded 3x3, 2x2 up-convolutions ---

def unet(net):
    s, skips = Shape(1, (572, 572)), []
    for i, ch in enumerate((64, 128, 256, 512, 1024)):
        s = net.conv(f"down{i}.conv1", s, ch, 3, pad=0)
        s = net.conv(f"down{i}.conv2", s, ch, 3, pad=0)
        if i < 4:
            skips.append(s)
            s = pool(s, 2, 2)
    for i, ch in enumerate((512, 256, 128, 64)):
        s = net.conv(f"up{i}.upconv", s, ch, 2, stride=2, pad=0, op="convT")
        s = Shape(2 * ch, s.x)  # concatenated with the cropped skip of the same size
        s = net.conv(f"up{i}.conv1", s, ch, 3, pad=0)
        s = net.conv(f"up{i}.conv2", s, ch, 3, pad=0)
    return net.conv("final", s, 2, 1)


# --- YOLOv5s v6 (Ultralytics yolov5s.yaml: depth 0.33, width 0.50), 640x640 ---

def yolov5s(net):
    c = net.conv

    def c3(p, s, out, n, shortcut=True):
        hid = out // 2
        a = c(p + ".cv1", s, hid, 1)
        for i in range(n):
            t = c(f"{p}.m.{i}.cv1", a, hid, 1)
            a = c(f"{p}.m.{i}.cv2", t, hid, 3)
        c(p + ".cv2", s, hid, 1)
        return c(p + ".cv3", Shape(2 * hid, s.x), out, 1)

    s = c("model.0", Shape(3, (640, 640)), 32, 6, stride=2, pad=2)
    s = c("model.1", s, 64, 3, stride=2)
    s = c3("model.2", s, 64, 1)
    s = c("model.3", s, 128, 3, stride=2)
    p3 = c3("model.4", s, 128, 2)
    s = c("model.5", p3, 256, 3, stride=2)
    p4 = c3("model.6", s, 256, 3)
    s = c("model.7", p4, 512, 3, stride=2)
    s = c3("model.8", s, 512, 1)
    t = c("model.9.cv1", s, 256, 1)            # SPPF: 1x1, three 5x5 max pools, 1x1
    s = c("model.9.cv2", Shape(4 * t.c, t.x), 512, 1)
    h10 = c("model.10", s, 256, 1)
    s = c3("model.13", Shape(h10.c + p4.c, p4.x), 256, 1, False)
    h14 = c("model.14", s, 128, 1)
    out3 = c3("model.17", Shape(h14.c + p3.c, p3.x), 128, 1, False)
    s = c("model.18", out3, 128, 3, stride=2)
    out4 = c3("model.20", Shape(s.c + h14.c, s.x), 256, 1, False)
    s = c("model.21", out4, 256, 3, stride=2)
    out5 = c3("model.23", Shape(s.c + h10.c, s.x), 512, 1, False)
    for i, o in enumerate((out3, out4, out5)):
        c(f"model.24.m.{i}", o, 255, 1)        # 3 anchors x (80 classes + 5)


# --- Speech front-ends ---

def wav2vec2_feature_encoder(net):
    """fairseq / transformers wav2vec 2.0 base: conv_dim 512 x 7, kernels
    (10,3,3,3,3,2,2), strides (5,2,2,2,2,2,2), no padding, on 1 s of 16 kHz audio."""
    s = Shape(1, (16000,))
    for i, (k, st) in enumerate(zip((10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2))):
        s = net.conv(f"feature_extractor.conv_layers.{i}.conv", s, 512, k, stride=st, pad=0)
    return s


def deepspeech2(net):
    """DeepSpeech2's convolutions as deepspeech.pytorch builds them (Amodei et al. 2016):
    161 frequency bins (20 ms windows at 16 kHz) x 1000 frames (10 s at a 10 ms hop)."""
    s = net.conv("conv.seq_module.0", Shape(1, (161, 1000)), 32, (41, 11), stride=2,
                 pad=(20, 5))
    return net.conv("conv.seq_module.3", s, 32, (21, 11), stride=(2, 1), pad=(10, 5))


# --- Video: torchvision.models.video.r3d_18 (Tran et al. 2018), 16 x 112 x 112 clips ---

def r3d_18(net):
    s = net.conv("stem.0", Shape(3, (16, 112, 112)), 64, (3, 7, 7), stride=(1, 2, 2),
                 pad=(1, 3, 3))
    for li, planes in enumerate((64, 128, 256, 512)):
        for b in range(2):
            p = f"layer{li + 1}.{b}."
            st = 2 if li > 0 and b == 0 else 1
            t = net.conv(p + "conv1.0", s, planes, 3, stride=st)
            t = net.conv(p + "conv2.0", t, planes, 3)
            if st != 1:
                net.conv(p + "downsample.0", s, planes, 1, stride=st)
            s = t


# name: (builder, source, batch sizes, check)
def gmacs(ref, tol=0.03, fc=0.0):
    """Check: convolution GMACs within tol of the published figure less fc GMACs."""
    def check(net):
        want = ref - fc
        got = net.macs() * 1e-9
        ok = abs(got - want) <= tol * want
        return ok, f"{got:.3f} GMACs vs {want:.3f} expected ({ref} published - {fc} FC)"
    return check


def out_size(expect, what):
    def check(net):
        got = net.layers[-1].out_spatial()
        return got == expect, f"output {got} vs {expect} ({what})"
    return check


def reference_net(builder, check):
    def run(_net):
        ref = Net()
        builder(ref)
        return check(ref)
    return run


NETWORKS = {
    "resnet50": (resnet50, "torchvision resnet50 (He et al. 2016, v1.5), 224x224",
                 (1, 8, 32), gmacs(4.09, fc=0.002)),
    "resnet101": (resnet101, "torchvision resnet101, 224x224", (1, 8), gmacs(7.80, fc=0.002)),
    "resnext50_32x4d": (resnext50_32x4d, "torchvision resnext50_32x4d (Xie et al. 2017), "
                        "224x224", (1, 8), gmacs(4.23, fc=0.002)),
    "mobilenetv2": (mobilenet_v2, "torchvision mobilenet_v2 (Sandler et al. 2018), 224x224",
                    (1, 8), gmacs(0.30, fc=0.001, tol=0.05)),
    "mobilenetv3_large": (mobilenet_v3_large, "torchvision mobilenet_v3_large (Howard et al. "
                          "2019), 224x224", (1, 8), gmacs(0.22, fc=0.0025, tol=0.05)),
    "efficientnet_b0": (efficientnet_b0, "torchvision efficientnet_b0 (Tan and Le 2019), "
                        "224x224", (1, 8), gmacs(0.39, fc=0.001, tol=0.05)),
    "inception_v3": (inception_v3, "torchvision inception_v3 (Szegedy et al. 2016), 299x299, "
                     "no auxiliary head", (1, 8), gmacs(5.71, fc=0.002)),
    "vgg16": (vgg16, "torchvision vgg16 (Simonyan and Zisserman 2015, configuration D), "
              "224x224", (1, 8), gmacs(15.47, fc=0.124)),
    "densenet121": (densenet121, "torchvision densenet121 (Huang et al. 2017), 224x224",
                    (1, 8), gmacs(2.83, fc=0.001)),
    "deeplabv3_resnet50": (deeplabv3_resnet50, "DeepLabV3 (Chen et al. 2017) on torchvision's "
                           "ResNet-50, output stride 16, ASPP rates 6/12/18, 513x513",
                           (1, 8), reference_net(deeplabv3_torchvision_reference,
                                                 gmacs(178.72))),
    "unet": (unet, "U-Net (Ronneberger et al. 2015, Fig. 1), 572x572, 2 classes", (1, 8),
             out_size((388, 388), "the paper's 388x388 output map")),
    "yolov5s": (yolov5s, "Ultralytics YOLOv5s v6 (yolov5s.yaml), 640x640, 80 classes",
                (1, 8), gmacs(16.5 / 2, tol=0.03)),
    "wav2vec2_fe": (wav2vec2_feature_encoder, "wav2vec 2.0 (Baevski et al. 2020) feature "
                    "encoder, 16000 samples", (1, 8),
                    out_size((49,), "49 frames of 20 ms per second")),
    "deepspeech2": (deepspeech2, "DeepSpeech2 (Amodei et al. 2016) as deepspeech.pytorch, "
                    "161 bins x 1000 frames", (1, 8),
                    out_size((41, 500), "32 x 41 = 1312 RNN features as deepspeech.pytorch")),
    "r3d_18": (r3d_18, "torchvision r3d_18 (Tran et al. 2018), 16x112x112", (1, 8),
               gmacs(40.70, fc=0.0002)),
}

LEGACY = {"resnet50": "resnet50_convs.csv", "mobilenetv2": "mobilenetv2_convs.csv"}


def dedupe(layers, n):
    """One row per distinct problem at batch n, in first-occurrence order."""
    rows = {}
    for lay in layers:
        lay = sf.dataclasses.replace(lay, n=n)
        key = lay.shape_key()
        if key in rows:
            rows[key] = sf.dataclasses.replace(rows[key], count=rows[key].count + 1)
        else:
            rows[key] = lay
    return list(rows.values())


def legacy_check(name, rows):
    """The rows against the hand-written data/<legacy> file: same problems, same counts."""
    path = os.path.join(HERE, LEGACY[name])
    old = {lay.shape_key(): lay.count for lay in sf.read_suite(path)}
    new = {lay.shape_key(): lay.count for lay in rows}
    return old == new, f"same problems and counts as data/{LEGACY[name]}"


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "suites")
    failed, outputs, index = 0, [], []
    for name, (builder, source, batches, check) in NETWORKS.items():
        net = Net()
        builder(net)
        ok, text = check(net)
        checks = [(ok, text)]
        if name in LEGACY:
            checks.append(legacy_check(name, dedupe(net.layers, 1)))
        for ok, text in checks:
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {text}")
            failed += not ok
        for n in batches:
            rows = dedupe(net.layers, n)
            outputs.append((f"{name}_n{n}.csv", rows))
            index.append((f"{name}_n{n}", source, len(rows), len(net.layers),
                          n * net.macs() * 1e-9))
    if failed:
        print(f"{failed} check(s) failed; nothing written")
        return 1
    os.makedirs(outdir, exist_ok=True)
    for fname, rows in outputs:
        sf.write_suite(os.path.join(outdir, fname), rows)
    with open(os.path.join(outdir, "README.md"), "w") as f:
        f.write("# Benchmark suites\n\nGenerated by `data/gen_suites.py` (do not edit; "
                "the format is in docs/benchmarks.md).\n\n"
                "| suite | source | rows | convolutions | GMACs |\n| --- | --- | --- | --- | --- |\n")
        for suite, source, rows, convs, g in index:
            f.write(f"| {suite} | {source} | {rows} | {convs} | {g:.2f} |\n")
    print(f"wrote {len(outputs)} suites to {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
