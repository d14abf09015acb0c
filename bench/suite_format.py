"""suite_format.py - the benchmark suite format (docs/benchmarks.md): read, write, describe.

A suite is a CSV file of convolution layers.  Its header names the columns, in any order;
every column but the required ones may be left out and then takes its default.  The
16-column layer format of data/resnet50_convs.csv is one instance of it, and write_suite()
keeps to that form whenever a suite needs nothing more.  The CLI reads the same format in
C (tools/layers.c); tests/db/test_cli_db.py checks that both readers mean the same
problems.

One layer is also sent to the benchmark's worker processes as one "wire" line of
key=value tokens (Layer.wire / Layer.from_wire); bench/bench_problem.c parses the same
line in C, so the CSV is parsed in one place only.
"""
import csv
import dataclasses
import math

LEGACY_HEADER = ("name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,"
                 "group").split(",")
SPATIAL = ("d", "h", "w")   # input sizes, outermost first
KERNEL = ("t", "r", "s")    # kernel sizes, same order
ACTIVATIONS = ("none", "relu", "leaky_relu", "clip", "sigmoid", "tanh", "hard_sigmoid")
OPS = ("conv", "convT")

# Every column and its default ("" = required for the spatial dims a row uses).
COLUMNS = {
    "name": None, "count": "1", "op": "conv", "dims": "2", "n": None, "c": None, "k": None,
    "group": "1",
    "d": "", "h": "", "w": "", "t": "", "r": "", "s": "",
    "pad_d": "0", "pad_h": "0", "pad_w": "0", "pads": "",
    "stride_d": "1", "stride_h": "1", "stride_w": "1",
    "dil_d": "1", "dil_h": "1", "dil_w": "1",
    "output_padding": "", "bias": "0", "act": "none", "alpha": "0", "beta": "0",
}


class SuiteError(ValueError):
    """A suite file that does not follow the format; the message names file, line, field."""


@dataclasses.dataclass(frozen=True)
class Layer:
    """One convolution, ONNX semantics; tuples hold one value per spatial dim, outermost
    first; pads are all begins then all ends; k is the output channel count (ONNX M)."""
    name: str
    count: int
    op: str
    n: int
    c: int
    k: int
    group: int
    x: tuple
    kern: tuple
    stride: tuple
    dil: tuple
    pads: tuple
    opad: tuple
    bias: int = 0
    act: str = "none"
    alpha: float = 0.0
    beta: float = 0.0

    @property
    def dims(self):
        return len(self.x)

    def out_spatial(self):
        nd = self.dims
        out = []
        for i in range(nd):
            span = (self.kern[i] - 1) * self.dil[i] + 1
            pad = self.pads[i] + self.pads[nd + i]
            if self.op == "conv":
                out.append((self.x[i] + pad - span) // self.stride[i] + 1)
            else:
                out.append((self.x[i] - 1) * self.stride[i] + span - pad + self.opad[i])
        return tuple(out)

    def macs(self):
        """Multiply-adds of one execution at this layer's N (count not applied)."""
        per_out = self.c // self.group * math.prod(self.kern)
        if self.op == "conv":
            return self.n * self.k * math.prod(self.out_spatial()) * per_out
        # ConvTranspose: every input pixel scatters to k/group * prod(kern) outputs.
        return self.n * self.c * math.prod(self.x) * (self.k // self.group) * math.prod(self.kern)

    def shape_key(self):
        """Everything but name and count: two layers with one key are the same problem."""
        d = dataclasses.asdict(self)
        del d["name"], d["count"]
        return tuple(sorted(d.items()))

    def x_elems(self):
        return self.n * self.c * math.prod(self.x)

    def y_elems(self):
        return self.n * self.k * math.prod(self.out_spatial())

    def w_elems(self):
        return self.k * (self.c // self.group) * math.prod(self.kern)

    def wire(self):
        def ints(v):
            return ",".join(str(i) for i in v)
        return (f"op={self.op} dims={self.dims} n={self.n} c={self.c} k={self.k} "
                f"g={self.group} x={ints(self.x)} kern={ints(self.kern)} "
                f"stride={ints(self.stride)} dil={ints(self.dil)} pads={ints(self.pads)} "
                f"opad={ints(self.opad)} bias={self.bias} act={self.act} "
                f"alpha={self.alpha!r} beta={self.beta!r}")

    @staticmethod
    def from_wire(text, name="", count=1):
        f = dict(tok.split("=", 1) for tok in text.split())

        def ints(key):
            return tuple(int(v) for v in f[key].split(","))
        return Layer(name=name, count=count, op=f["op"], n=int(f["n"]), c=int(f["c"]),
                     k=int(f["k"]), group=int(f["g"]), x=ints("x"), kern=ints("kern"),
                     stride=ints("stride"), dil=ints("dil"), pads=ints("pads"),
                     opad=ints("opad"), bias=int(f["bias"]), act=f["act"],
                     alpha=float(f["alpha"]), beta=float(f["beta"]))

    def describe(self):
        """Short human text: 'conv 3x3 s2 c64 k128 56x56 g1'."""
        kern = "x".join(map(str, self.kern))
        s = f" s{'x'.join(map(str, self.stride))}" if max(self.stride) > 1 else ""
        dil = f" d{'x'.join(map(str, self.dil))}" if max(self.dil) > 1 else ""
        g = f" g{self.group}" if self.group > 1 else ""
        return (f"{self.op} {kern}{s}{dil} c{self.c} k{self.k} "
                f"{'x'.join(map(str, self.x))} n{self.n}{g}")


def _int(text, where, what, low):
    try:
        v = int(text)
    except ValueError:
        raise SuiteError(f"{where}: {what} '{text}' is not an integer") from None
    if v < low:
        raise SuiteError(f"{where}: {what} {v} must be >= {low}")
    return v


def _float(text, where, what):
    try:
        return float(text)
    except ValueError:
        raise SuiteError(f"{where}: {what} '{text}' is not a number") from None


def _layer_of(row, where):
    def get(col):
        v = row.get(col)
        return COLUMNS[col] if v is None or v == "" else v.strip()

    name = get("name")
    if not name:
        raise SuiteError(f"{where}: empty name")
    op = get("op")
    if op not in OPS:
        raise SuiteError(f"{where}: op '{op}' is not one of {', '.join(OPS)}")
    nd = _int(get("dims"), where, "dims", 1)
    if nd > 3:
        raise SuiteError(f"{where}: dims {nd} must be 1, 2 or 3")
    used = range(3 - nd, 3)
    for i in range(3 - nd):  # a column of a dimension the row does not have
        for col in (SPATIAL[i], KERNEL[i], "pad_" + SPATIAL[i], "stride_" + SPATIAL[i],
                    "dil_" + SPATIAL[i]):
            if row.get(col) not in (None, "", COLUMNS[col]):
                raise SuiteError(f"{where}: {col} given for a {nd}-D layer")
    x = tuple(_int(get(SPATIAL[i]), where, SPATIAL[i], 1) for i in used)
    kern = tuple(_int(get(KERNEL[i]), where, KERNEL[i], 1) for i in used)
    stride = tuple(_int(get("stride_" + SPATIAL[i]), where, "stride", 1) for i in used)
    dil = tuple(_int(get("dil_" + SPATIAL[i]), where, "dil", 1) for i in used)
    if get("pads"):
        pads = tuple(_int(v, where, "pads", 0) for v in get("pads").split())
        if len(pads) != 2 * nd:
            raise SuiteError(f"{where}: pads has {len(pads)} values, a {nd}-D layer needs "
                             f"{2 * nd} (all begins, then all ends)")
    else:
        half = tuple(_int(get("pad_" + SPATIAL[i]), where, "pad", 0) for i in used)
        pads = half + half
    opad = tuple(_int(v, where, "output_padding", 0) for v in get("output_padding").split())
    if not opad:
        opad = (0,) * nd
    if len(opad) != nd or (op == "conv" and any(opad)):
        raise SuiteError(f"{where}: output_padding needs {nd} values, and only convT has it")
    act = get("act")
    if act not in ACTIVATIONS:
        raise SuiteError(f"{where}: act '{act}' is not one of {', '.join(ACTIVATIONS)}")
    layer = Layer(name=name, count=_int(get("count"), where, "count", 1), op=op,
                  n=_int(get("n"), where, "n", 1), c=_int(get("c"), where, "c", 1),
                  k=_int(get("k"), where, "k", 1), group=_int(get("group"), where, "group", 1),
                  x=x, kern=kern, stride=stride, dil=dil, pads=pads, opad=opad,
                  bias=_int(get("bias"), where, "bias", 0), act=act,
                  alpha=_float(get("alpha"), where, "alpha"),
                  beta=_float(get("beta"), where, "beta"))
    if layer.c % layer.group or layer.k % layer.group:
        raise SuiteError(f"{where}: group {layer.group} does not divide c and k")
    if min(layer.out_spatial()) < 1:
        raise SuiteError(f"{where}: the output would be empty ({layer.out_spatial()})")
    return layer


def read_suite(path):
    """The layers of the suite file at path, in file order; SuiteError when malformed."""
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise SuiteError(f"{path}: no header")
    reader = csv.DictReader(lines)
    unknown = [c for c in reader.fieldnames if c not in COLUMNS]
    if unknown:
        raise SuiteError(f"{path}: unknown column(s) {', '.join(unknown)}")
    missing = [c for c in ("name", "n", "c", "k") if c not in reader.fieldnames]
    if missing:
        raise SuiteError(f"{path}: missing column(s) {', '.join(missing)}")
    layers = []
    for i, row in enumerate(reader, start=2):
        if None in row or None in row.values():
            raise SuiteError(f"{path}:{i}: wrong number of fields")
        layers.append(_layer_of(row, f"{path}:{i}"))
    if not layers:
        raise SuiteError(f"{path}: no layers")
    names = [lay.name for lay in layers]
    if len(set(names)) != len(names):
        raise SuiteError(f"{path}: layer names repeat")
    return layers


def _row_of(layer, columns):
    nd = layer.dims
    first = 3 - nd
    v = {"name": layer.name, "count": layer.count, "op": layer.op, "dims": nd, "n": layer.n,
         "c": layer.c, "k": layer.k, "group": layer.group, "bias": layer.bias,
         "act": layer.act, "alpha": layer.alpha, "beta": layer.beta,
         "pads": " ".join(map(str, layer.pads)),
         "output_padding": " ".join(map(str, layer.opad))}
    for j in range(nd):
        s = SPATIAL[first + j]
        v[s], v[KERNEL[first + j]] = layer.x[j], layer.kern[j]
        v["stride_" + s], v["dil_" + s] = layer.stride[j], layer.dil[j]
        v["pad_" + s] = layer.pads[j]
    return [str(v.get(c, "")) for c in columns]


def needed_columns(layers):
    """The columns a suite needs: the legacy 16 when they express every layer."""
    legacy = all(lay.op == "conv" and lay.dims == 2 and lay.pads[:2] == lay.pads[2:] and
                 not lay.bias and lay.act == "none" for lay in layers)
    if legacy:
        return list(LEGACY_HEADER)
    dims_used = {lay.dims for lay in layers}
    if len(dims_used) > 1:
        raise SuiteError("one suite mixes spatial ranks; write one file per rank")
    cols = ["name", "count", "op", "dims", "n", "c"]
    first = 3 - dims_used.pop()
    cols += list(SPATIAL[first:]) + ["k"] + list(KERNEL[first:])
    symmetric = all(lay.pads[:lay.dims] == lay.pads[lay.dims:] for lay in layers)
    if not symmetric:
        cols.append("pads")
    else:
        cols += ["pad_" + s for s in SPATIAL[first:]]
    cols += ["stride_" + s for s in SPATIAL[first:]] + ["dil_" + s for s in SPATIAL[first:]]
    cols.append("group")
    if any(lay.op == "convT" for lay in layers):
        cols.append("output_padding")
    if any(lay.bias for lay in layers):
        cols.append("bias")
    if any(lay.act != "none" for lay in layers):
        cols += ["act", "alpha", "beta"]
    return cols


def write_suite(path, layers):
    cols = needed_columns(layers)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for lay in layers:
            w.writerow(_row_of(lay, cols))
