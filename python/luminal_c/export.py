"""luminal_c.export: a PyTorch module, through torch.export, into luminal-c's graph JSON
(docs/graph-json.md) and its weights.

    ex = luminal_c.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim("T", max=512)}})
    ex.save("out")   # out/graph.json, out/weights.safetensors
    # luminal_search --graph out/graph.json --out s ; luminal_run s --weights out/weights.safetensors

The exporter walks torch.export's ATen graph (the training IR, where linear, layer_norm,
rms_norm, scaled_dot_product_attention and softmax are still whole ops; the core ATen ops
they decompose into are handled too) and writes one or a few graph-JSON nodes per ATen
op. The graph's inputs are the model's parameters, buffers and constants (named by their
state-dict names, their values in .weights) followed by the user's tensor arguments.
Shapes and dtypes come from torch's own metadata for each node, so every shape in the
JSON is torch's; torch.export's symbolic dims become the graph's dims, named after the
user's torch.export.Dim, with their ranges and the example's value as the profile.

An op outside the table (docs/python.md, "Supported ops") raises UnsupportedOpError naming
the ATen op and the user's source line.
"""
import json
import math
import os
import struct

import torch
import torch.utils._pytree as pytree

__all__ = ["export", "Exported", "UnsupportedOpError", "ExportError", "SUPPORTED_OPS"]

aten = torch.ops.aten

_DTYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int32: "int",
    torch.int64: "i64",
    torch.bool: "bool",
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}
_ST_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "int": "I32", "i64": "I64",
              "bool": "BOOL"}
_FLOATS = ("f32", "f16", "bf16")
_MAX_NAME = 63
_DEFAULT_MAX = 8192  # a dim torch leaves unbounded (torch.compile's) is capped here


class ExportError(ValueError):
    """The model cannot be written as a luminal graph (a dtype, a shape, an argument)."""


class UnsupportedOpError(ExportError):
    """An ATen op the exporter has no translation for: .op names it, .source is the
    user's source line (file:line and the code) where torch recorded one."""

    def __init__(self, op, source, detail=""):
        self.op = op
        self.source = source
        msg = "luminal_c.export: unsupported op %s" % op
        if detail:
            msg += " (%s)" % detail
        msg += " at %s" % (source or "<unknown source line>")
        msg += "; the supported ops are listed in docs/python.md (luminal_c.SUPPORTED_OPS)"
        super().__init__(msg)


def _source(node):
    """The user's source line of an fx node: 'file:line: code', from torch's stack trace."""
    st = node.meta.get("stack_trace") or ""
    lines = [ln for ln in st.strip().splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        ln = lines[i].strip()
        if ln.startswith("File "):
            try:
                f = ln.split('"')[1]
                lineno = ln.split("line ")[1].split(",")[0]
            except IndexError:
                return ln
            code = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].strip().startswith("File ") else ""
            return "%s:%s%s" % (f, lineno, (": " + code) if code else "")
    return ""


def _opname(target):
    if isinstance(target, torch._ops.OpOverload):
        return "aten.%s.%s" % (target._overloadpacket.__name__, target._overloadname) \
            if target.namespace == "aten" else str(target)
    return getattr(target, "__name__", str(target))


class _Val:
    """A tensor of the graph being written: its JSON name, its shape (ints and sympy
    expressions) and dtype."""
    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, list(shape), dtype

    @property
    def ndim(self):
        return len(self.shape)


def _st_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    """Writes {name: tensor} as a safetensors file (the format luminal_run reads), names in
    sorted order, so the same weights give the same bytes."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        dt = _DTYPES.get(t.dtype)
        if dt is None:
            raise ExportError("weight %r has dtype %s, which luminal graphs do not have" % (name, t.dtype))
        b = _st_bytes(t)
        header[name] = {"dtype": _ST_DTYPES[dt], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


class Exported:
    """A model exported to luminal-c: .graph (the graph JSON as a dict), .weights ({input
    name: tensor} for the parameters, buffers and constants), .user_inputs (the graph
    input names of the user's tensor arguments, in order), .dims ([{name, min, max,
    profile}]), and what compile needs to call it like the model."""

    def __init__(self, graph, weights, user_inputs, dim_sources, in_spec, out_spec, n_outputs):
        self.graph = graph
        self.weights = weights
        self.user_inputs = user_inputs
        self.dim_sources = dim_sources  # dim name -> (user input index, axis)
        self.in_spec = in_spec
        self.out_spec = out_spec
        self.n_outputs = n_outputs

    @property
    def dims(self):
        return list(self.graph.get("dims", []))

    def json(self):
        """The graph as JSON text (deterministic: the same model gives the same bytes)."""
        return json.dumps(self.graph, indent=1, sort_keys=False) + "\n"

    def save(self, directory):
        """Writes DIR/graph.json and DIR/weights.safetensors (made if need be), which
        `luminal_search --graph` and `luminal_run --weights` read. Returns DIR."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "graph.json"), "w") as f:
            f.write(self.json())
        write_safetensors(os.path.join(directory, "weights.safetensors"), self.weights)
        return directory

    def __repr__(self):
        return "<luminal_c.Exported: %d inputs (%d weights), %d nodes, dims %s>" % (
            len(self.graph["inputs"]), len(self.weights), len(self.graph["nodes"]),
            [d["name"] for d in self.dims])


# ---- symbolic sizes ----

class _Dims:
    def __init__(self):
        self.names = {}   # sympy symbol name -> dim name
        self.ranges = {}  # dim name -> (lo, hi)
        self.profile = {}

    def expr(self, e):
        """An int, SymInt or sympy expression as the format's expression (int or str)."""
        if isinstance(e, torch.SymInt):
            e = e.node.expr
        if isinstance(e, int):
            return e
        try:
            import sympy
        except ImportError:  # pragma: no cover - torch depends on sympy
            raise
        if isinstance(e, sympy.Integer) or (hasattr(e, "is_Integer") and e.is_Integer):
            return int(e)
        return self._text(e)

    def _text(self, e):
        import sympy
        from torch.utils._sympy.functions import FloorDiv, CeilDiv, Mod as TMod
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            name = self.names.get(e.name)
            if name is None:
                raise ExportError("symbolic size %s is not one of the model's dims" % e.name)
            return name
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(self._text(a) for a in e.args) + ")"
        if isinstance(e, sympy.Mul):
            return "(" + "*".join(self._text(a) for a in e.args) + ")"
        if isinstance(e, FloorDiv):
            return "(%s / %s)" % (self._text(e.args[0]), self._text(e.args[1]))
        if isinstance(e, CeilDiv):
            return "cdiv(%s, %s)" % (self._text(e.args[0]), self._text(e.args[1]))
        if isinstance(e, (sympy.Mod, TMod)):
            return "(%s %% %s)" % (self._text(e.args[0]), self._text(e.args[1]))
        if isinstance(e, sympy.Max):
            return self._fold("max", e.args)
        if isinstance(e, sympy.Min):
            return self._fold("min", e.args)
        raise ExportError("symbolic size %s: %s is not an expression luminal graphs have" % (e, type(e).__name__))

    def _fold(self, fn, args):
        out = self._text(args[0])
        for a in args[1:]:
            out = "%s(%s, %s)" % (fn, out, self._text(a))
        return out


def _dim_specs(model, args, dynamic_shapes):
    """[(tensor index, axis, torch Dim)] from torch.export's dynamic_shapes: the spec walked
    beside the arguments (nested tuples, a dict keyed by forward's parameter names, *args),
    the tensor index counting the flattened tensor arguments in order."""
    if dynamic_shapes is None:
        return []
    import inspect
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    # the arguments grouped as forward's parameters: *args collected into one tuple
    names, grouped = [], []
    for k, p in enumerate(params):
        if p.kind == p.VAR_POSITIONAL:
            names.append(p.name)
            grouped.append(tuple(args[k:]))
            break
        if k >= len(args):
            break
        names.append(p.name)
        grouped.append(args[k])
    if len(grouped) != len(args) and not any(p.kind == p.VAR_POSITIONAL for p in params):
        names, grouped = [None] * len(args), list(args)
    args = tuple(grouped)
    if isinstance(dynamic_shapes, dict):
        spec = tuple(dynamic_shapes.get(n) for n in names)
    else:
        spec = tuple(dynamic_shapes)
    out, count = [], [0]

    def walk(a, sp):
        if isinstance(a, torch.Tensor):
            i = count[0]
            count[0] += 1
            if isinstance(sp, dict):
                items = sp.items()
            elif isinstance(sp, (tuple, list)):
                items = enumerate(sp)
            else:
                items = ()
            for axis, d in items:
                if d is not None and hasattr(d, "__name__"):
                    out.append((i, axis, d))
        elif isinstance(a, (tuple, list)):
            sps = sp if isinstance(sp, (tuple, list)) else [None] * len(a)
            for x, s2 in zip(a, list(sps) + [None] * (len(a) - len(sps))):
                walk(x, s2)
    walk(tuple(args), spec)
    return out


# ---- the converter ----

class _Converter:
    def __init__(self, ep, dims):
        self.ep = ep
        self.d = dims
        self.nodes = []
        self.inputs = []
        self.vals = {}    # fx node name -> _Val, tuple of _Val, or a python scalar / SymInt
        self.names = set()
        self.count = 0
        self.cur = None

    # -- emitting --

    def fresh(self, hint):
        self.count += 1
        base = "%s%%%d" % (self.cur.name if self.cur is not None else "n", self.count)
        if len(base) > _MAX_NAME:
            base = "n%%%d" % self.count
        return base

    def emit(self, op, inputs, shape, out_dtype, /, **attrs):
        name = self.fresh(op)
        node = {"name": name, "op": op}
        if inputs:
            node["inputs"] = [v.name for v in inputs]
        node.update(attrs)
        self.nodes.append(node)
        return _Val(name, shape, out_dtype)

    def fail(self, detail=""):
        raise UnsupportedOpError(_opname(self.cur.target), _source(self.cur), detail)

    # -- helpers --

    def meta(self, node=None):
        node = node or self.cur
        v = node.meta.get("val")
        return v

    def out_shape(self, node=None):
        v = self.meta(node)
        return [self.d.expr(s) for s in v.shape]

    def out_dtype(self, node=None):
        v = self.meta(node)
        dt = _DTYPES.get(v.dtype)
        if dt is None:
            raise ExportError("%s at %s: dtype %s is not one luminal graphs have (f32, f16, bf16, "
                              "int32, int64, bool)" % (_opname(self.cur.target), _source(self.cur) or "?", v.dtype))
        return dt

    def shape_json(self, shape):
        return [self.d.expr(s) if not isinstance(s, (int, str)) else s for s in shape]

    def cast(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.emit("cast", [v], v.shape, dtype, dtype=dtype)

    def const(self, value, dtype, shape=()):
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float) and math.isinf(value):
            # where(m, a, b) is a*m + b*(1-m): an infinity times 0 would be NaN, so an
            # infinite fill is the dtype's largest finite value (docs/python.md)
            fi = torch.finfo(_TORCH_DTYPES[dtype]) if dtype in _FLOATS else None
            if fi is None:
                raise ExportError("an infinite constant in an integer tensor")
            value = fi.max if value > 0 else fi.min
        if isinstance(value, float) and math.isnan(value):
            value = "nan"
        return self.emit("constant", [], list(shape), dtype, value=value, dtype=dtype,
                         shape=self.shape_json(shape))

    def val(self, a):
        """The _Val of a tensor argument."""
        if isinstance(a, torch.fx.Node):
            v = self.vals.get(a.name)
            if isinstance(v, _Val):
                return v
            self.fail("an argument is not a tensor")
        self.fail("an argument is not a tensor")

    def scalar(self, a):
        """A python number or a symbolic int argument (as an expression)."""
        if isinstance(a, torch.fx.Node):
            v = self.vals.get(a.name)
            if isinstance(v, (int, float, str)):
                return v
            m = a.meta.get("val")
            if isinstance(m, torch.SymInt):
                return self.d.expr(m)
            if isinstance(m, (int, float)):
                return m
            self.fail("a scalar argument is a tensor")
        if isinstance(a, torch.SymInt):
            return self.d.expr(a)
        return a

    def operand(self, a, dtype):
        """A tensor or scalar operand as a _Val of dtype."""
        if isinstance(a, torch.fx.Node) and isinstance(self.vals.get(a.name), _Val):
            return self.cast(self.vals[a.name], dtype)
        s = self.scalar(a)
        if isinstance(s, str):
            # a symbolic int used as a value: an iota of length 1 holding it
            v = self.emit("iota", [], [1], "int", expr=s, len=1)
            v = self.emit("reshape", [v], [], "int", shape=[])
            return self.cast(v, dtype)
        return self.const(s, dtype)

    def axis(self, a, ndim):
        a = int(a)
        if a < 0:
            a += ndim
        if not 0 <= a < max(ndim, 1):
            self.fail("axis %d out of range" % a)
        return a

    def reshape(self, v, shape):
        shape = list(shape)
        if [str(s) for s in shape] == [str(s) for s in v.shape]:
            return v
        return self.emit("reshape", [v], shape, v.dtype, shape=self.shape_json(shape))

    # -- the walk --

    def run(self):
        ep = self.ep
        sig = ep.graph_signature
        state = dict(ep.state_dict)
        consts = dict(getattr(ep, "constants", {}) or {})
        p2w = {}
        for spec in sig.input_specs:
            if spec.kind.name in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                p2w[spec.arg.name] = spec.target
        weights, user_inputs = {}, []
        for node in ep.graph.nodes:
            self.cur = node
            if node.op == "placeholder":
                m = node.meta.get("val")
                if not isinstance(m, torch.Tensor):
                    # a non-tensor user input is specialized by torch.export
                    self.vals[node.name] = m
                    continue
                if node.name in p2w:
                    target = p2w[node.name]
                    t = state.get(target)
                    if t is None:
                        t = consts.get(target)
                    if t is None:
                        raise ExportError("no value for %s" % target)
                    name = target if len(target) <= _MAX_NAME and not target.startswith("%") \
                        else "w%d_%s" % (len(weights), target[-(_MAX_NAME - 8):])
                    weights[name] = t.detach()
                else:
                    name = node.name
                    user_inputs.append(name)
                dt = _DTYPES.get(m.dtype)
                if dt is None:
                    raise ExportError("input %s has dtype %s; luminal graphs have f32, f16, bf16, "
                                      "int32, int64 and bool (cast it in the model)" % (name, m.dtype))
                shape = [self.d.expr(s) for s in m.shape]
                self.inputs.append({"name": name, "dtype": dt, "shape": shape})
                self.vals[node.name] = _Val(name, shape, dt)
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                outs = []
                for i, a in enumerate(pytree.tree_leaves(node.args[0])):
                    if a is None:
                        continue
                    v = self.val(a)
                    if v.name in {x["name"] for x in self.inputs}:
                        v = self.emit("contiguous", [v], v.shape, v.dtype)
                    outs.append({"name": "out%d" % i, "tensor": v.name})
                self.outputs = outs
            else:
                raise ExportError("fx node %s of kind %s" % (node.name, node.op))
        return weights, user_inputs

    def call(self, node):
        self.cur = node
        t = node.target
        name = _opname(t)
        if not isinstance(t, torch._ops.OpOverload) and getattr(t, "__name__", "") in _PY_OPS:
            # operator.mul, operator.floordiv ... on symbolic sizes
            self.vals[node.name] = _pyop(self, node)
            return
        if isinstance(t, torch._ops.OpOverload):
            key = t._overloadpacket.__name__
        else:
            key = getattr(t, "__name__", str(t))
        h = _HANDLERS.get(key)
        if h is None:
            self.fail()
        r = h(self, node, *node.args, **node.kwargs)
        if r is None and not (name.startswith("aten._assert") or key in _NO_VALUE):
            self.fail()
        self.vals[node.name] = r


# ---- handlers: each takes the converter, the node and the op's arguments ----

_HANDLERS = {}
_NO_VALUE = {"_assert_scalar", "_assert_tensor_metadata", "sym_constrain_range_for_size",
             "sym_constrain_range", "_assert_async"}
SUPPORTED_OPS = {}


def _reg(names, doc):
    def deco(fn):
        for n in names.split():
            _HANDLERS[n] = fn
            SUPPORTED_OPS[n] = doc
        return fn
    return deco


def _unary(op):
    def fn(c, node, x, *rest, **kw):
        v = c.val(x)
        dt = c.out_dtype()
        return c.emit(op, [c.cast(v, dt)], v.shape, dt)
    return fn


for _k, _op in {"neg": "neg", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
                "sqrt": "sqrt", "reciprocal": "recip", "sigmoid": "sigmoid", "silu": "silu",
                "tanh": "tanh", "relu": "relu", "exp2": "exp2", "log2": "log2"}.items():
    _HANDLERS[_k] = _unary(_op)
    SUPPORTED_OPS[_k] = "elementwise: %s" % _op


@_reg("rsqrt", "elementwise: recip(sqrt(x))")
def _rsqrt(c, node, x):
    v = c.cast(c.val(x), c.out_dtype())
    return c.emit("recip", [c.emit("sqrt", [v], v.shape, v.dtype)], v.shape, v.dtype)


@_reg("gelu", "gelu (approximate 'none' or 'tanh')")
def _gelu(c, node, x, approximate="none"):
    v = c.val(x)
    return c.emit("gelu", [v], v.shape, v.dtype, approximate=approximate)


@_reg("abs", "elementwise: maximum(x, -x)")
def _abs(c, node, x):
    v = c.val(x)
    return c.emit("maximum", [v, c.emit("neg", [v], v.shape, v.dtype)], v.shape, v.dtype)


@_reg("square", "elementwise: x*x")
def _square(c, node, x):
    v = c.val(x)
    return c.emit("mul", [v, v], v.shape, v.dtype)


@_reg("pow", "pow: a scalar exponent 0.5, -0.5, 1, 2, 3, -1; or a positive scalar base")
def _pow(c, node, a, b):
    dt = c.out_dtype()
    shape = c.out_shape()
    if isinstance(a, torch.fx.Node) and not (isinstance(b, torch.fx.Node) and isinstance(c.vals.get(b.name), _Val)):
        v = c.cast(c.val(a), dt)
        e = float(c.scalar(b))
        if e == 1:
            return v
        if e == 2:
            return c.emit("mul", [v, v], shape, dt)
        if e == 3:
            return c.emit("mul", [c.emit("mul", [v, v], shape, dt), v], shape, dt)
        if e == 0.5:
            return c.emit("sqrt", [v], shape, dt)
        if e == -0.5:
            return c.emit("recip", [c.emit("sqrt", [v], shape, dt)], shape, dt)
        if e == -1:
            return c.emit("recip", [v], shape, dt)
        c.fail("exponent %g" % e)
    if not isinstance(a, torch.fx.Node) and float(a) > 0:
        # base ** x = exp2(x * log2(base))
        x = c.cast(c.val(b), dt)
        if float(a) != 2.0:
            x = c.emit("mul", [x, c.const(math.log2(float(a)), dt)], shape, dt)
        return c.emit("exp2", [x], shape, dt)
    c.fail("a tensor exponent with a tensor or non-positive base")


def _binary(op):
    def fn(c, node, a, b, *rest, alpha=1, **kw):
        dt = c.out_dtype()
        shape = c.out_shape()
        va, vb = c.operand(a, dt), c.operand(b, dt)
        if alpha != 1:
            vb = c.emit("mul", [vb, c.const(alpha, dt)], vb.shape, dt)
        return c.emit(op, [va, vb], shape, dt)
    return fn


for _k, _op in {"add": "add", "sub": "sub", "mul": "mul", "maximum": "maximum",
                "minimum": "minimum"}.items():
    _HANDLERS[_k] = _binary(_op)
    SUPPORTED_OPS[_k] = "broadcast: %s" % _op


@_reg("rsub", "broadcast: b - a*alpha")
def _rsub(c, node, a, b, alpha=1):
    dt = c.out_dtype()
    va, vb = c.operand(a, dt), c.operand(b, dt)
    if alpha != 1:
        va = c.emit("mul", [va, c.const(alpha, dt)], va.shape, dt)
    return c.emit("sub", [vb, va], c.out_shape(), dt)


@_reg("div", "broadcast: div (true division)")
def _div(c, node, a, b, rounding_mode=None):
    dt = c.out_dtype()
    if rounding_mode is not None:
        c.fail("rounding_mode %r" % rounding_mode)
    return c.emit("div", [c.operand(a, dt), c.operand(b, dt)], c.out_shape(), dt)


@_reg("fmod", "broadcast: mod (C's fmod: the sign of a)")
def _fmod(c, node, a, b):
    dt = c.out_dtype()
    return c.emit("mod", [c.operand(a, dt), c.operand(b, dt)], c.out_shape(), dt)


@_reg("remainder", "broadcast: mod, moved to the sign of b (Python's %)")
def _remainder(c, node, a, b):
    dt = c.out_dtype()
    shape = c.out_shape()
    vb = c.operand(b, dt)
    r = c.emit("mod", [c.operand(a, dt), vb], shape, dt)
    zero = c.const(0, dt)
    # r + b where r is nonzero and its sign differs from b's
    rneg = c.cast(c.emit("less_than", [r, zero], shape, "bool"), "int")
    bneg = c.cast(c.emit("less_than", [vb, zero], vb.shape, "bool"), "int")
    differ = c.emit("not_equal", [rneg, bneg], shape, "bool")
    nz = c.cast(c.emit("not_equal", [r, zero], shape, "bool"), "int")
    fix = c.emit("not_equal", [c.emit("mul", [c.cast(differ, "int"), nz], shape, "int"),
                               c.const(0, "int")], shape, "bool")
    return c.emit("where", [fix, c.emit("add", [r, vb], shape, dt), r], shape, dt)


def _compare(op):
    def fn(c, node, a, b):
        da = c.vals[a.name].dtype if isinstance(a, torch.fx.Node) and isinstance(c.vals.get(a.name), _Val) else None
        db = c.vals[b.name].dtype if isinstance(b, torch.fx.Node) and isinstance(c.vals.get(b.name), _Val) else None
        if da and db:
            dt = _DTYPES[torch.promote_types(_TORCH_DTYPES[da], _TORCH_DTYPES[db])]
        else:
            dt = da or db
        if dt == "bool":
            dt = "int"
        return c.emit(op, [c.operand(a, dt), c.operand(b, dt)], c.out_shape(), "bool")
    return fn


for _k, _op in {"lt": "less_than", "gt": "greater_than", "le": "less_equal",
                "ge": "greater_equal", "eq": "equal", "ne": "not_equal"}.items():
    _HANDLERS[_k] = _compare(_op)
    SUPPORTED_OPS[_k] = "compare: %s (bool)" % _op


@_reg("logical_not bitwise_not __invert__", "bool: not")
def _not(c, node, x):
    v = c.val(x)
    if v.dtype != "bool":
        c.fail("on %s" % v.dtype)
    return c.emit("equal", [c.cast(v, "int"), c.const(0, "int")], v.shape, "bool")


@_reg("logical_and bitwise_and __and__", "bool: and")
def _and(c, node, a, b):
    va, vb = c.cast(c.val(a), "int"), c.cast(c.val(b), "int")
    return c.emit("not_equal", [c.emit("mul", [va, vb], c.out_shape(), "int"), c.const(0, "int")],
                  c.out_shape(), "bool")


@_reg("logical_or bitwise_or __or__", "bool: or")
def _or(c, node, a, b):
    va, vb = c.cast(c.val(a), "int"), c.cast(c.val(b), "int")
    return c.emit("not_equal", [c.emit("add", [va, vb], c.out_shape(), "int"), c.const(0, "int")],
                  c.out_shape(), "bool")


@_reg("clamp clamp_min clamp_max hardtanh", "clamp: maximum / minimum with the bounds")
def _clamp(c, node, x, lo=None, hi=None):
    key = node.target._overloadpacket.__name__
    if key == "clamp_max":
        lo, hi = None, lo
    if key == "hardtanh":
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    dt = c.out_dtype()
    v = c.cast(c.val(x), dt)
    if lo is not None:
        v = c.emit("maximum", [v, c.operand(lo, dt)], v.shape, dt)
    if hi is not None:
        v = c.emit("minimum", [v, c.operand(hi, dt)], v.shape, dt)
    return v


@_reg("where", "where(mask, a, b)")
def _where(c, node, mask, a, b):
    dt = c.out_dtype()
    m = c.cast(c.val(mask), "bool")
    return c.emit("where", [m, c.operand(a, dt), c.operand(b, dt)], c.out_shape(), dt)


@_reg("masked_fill", "masked_fill(x, mask, value): where(mask, value, x)")
def _masked_fill(c, node, x, mask, value):
    dt = c.out_dtype()
    v = c.cast(c.val(x), dt)
    m = c.cast(c.val(mask), "bool")
    return c.emit("where", [m, c.operand(value, dt), v], c.out_shape(), dt)


# -- casts and copies --

@_reg("_to_copy to type_as clone contiguous alias detach lift_fresh_copy _unsafe_view_copy "
      "dropout feature_dropout alpha_dropout native_dropout copy", "cast / copy / identity")
def _copy(c, node, x, *args, **kw):
    key = node.target._overloadpacket.__name__ if isinstance(node.target, torch._ops.OpOverload) else ""
    if key in ("dropout", "feature_dropout", "alpha_dropout", "native_dropout"):
        train = args[1] if len(args) > 1 else kw.get("train", False)
        if key == "native_dropout":
            c.fail("native_dropout (export the model in eval mode)")
        if train:
            c.fail("dropout in training mode (call model.eval())")
    if key == "copy":
        x = args[0]
    v = c.val(x)
    dt = c.out_dtype()
    return c.reshape(c.cast(v, dt), c.out_shape())


# -- matmuls --

def _tr(c, v):
    if v.ndim < 2:
        return v
    shape = v.shape[:-2] + [v.shape[-1], v.shape[-2]]
    return c.emit("transpose", [v], shape, v.dtype)


@_reg("linear", "linear: matmul(x, w^T) + b")
def _linear(c, node, x, w, b=None):
    vx, vw = c.val(x), c.val(w)
    shape = c.out_shape()
    y = c.emit("matmul", [vx, _tr(c, vw)], shape, vx.dtype)
    if b is not None:
        y = c.emit("add", [y, c.val(b)], shape, vx.dtype)
    return y


@_reg("matmul mm bmm", "matmul (batch dims broadcast)")
def _matmul(c, node, a, b):
    dt = c.out_dtype()
    return c.emit("matmul", [c.cast(c.val(a), dt), c.cast(c.val(b), dt)], c.out_shape(), dt)


@_reg("addmm", "addmm: bias + a @ b (beta = alpha = 1)")
def _addmm(c, node, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        c.fail("beta/alpha other than 1")
    dt = c.out_dtype()
    y = c.emit("matmul", [c.val(a), c.val(b)], c.out_shape(), dt)
    return c.emit("add", [y, c.val(bias)], c.out_shape(), dt)


@_reg("t numpy_T", "transpose of the last two dims")
def _t(c, node, x):
    return _tr(c, c.val(x))


# -- reductions --

def _axes(c, dims, ndim):
    if dims is None or dims == [] or dims == ():
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(c.axis(d, ndim) for d in dims)


@_reg("sum mean amax", "sum / mean / amax over axes (keepdim)")
def _reduce(c, node, x, dims=None, keepdim=False, dtype=None, **kw):
    key = node.target._overloadpacket.__name__
    v = c.val(x)
    dt = c.out_dtype()
    v = c.cast(v, dt)
    axes = _axes(c, dims, v.ndim)
    op = {"sum": "sum", "mean": "mean", "amax": "max"}[key]
    if not axes:
        return v
    return c.emit(op, [v], c.out_shape(), dt, axes=axes, keepdim=bool(keepdim))


@_reg("max", "max over one axis (values only; .indices unsupported), or of all")
def _max(c, node, x, dim=None, keepdim=False):
    v = c.val(x)
    if dim is None:
        return c.emit("max", [v], c.out_shape(), v.dtype, axes=list(range(v.ndim)), keepdim=False)
    a = c.axis(dim, v.ndim)
    shape = c.out_shape(None) if not isinstance(c.meta(), tuple) else [c.d.expr(s) for s in c.meta()[0].shape]
    r = c.emit("max", [v], shape, v.dtype, axes=[a], keepdim=bool(keepdim))
    return (r, _Missing("the indices of max (argmax)"))


class _Missing:
    def __init__(self, what):
        self.what = what


@_reg("var var_mean std", "var / std / var_mean over axes (correction)")
def _var(c, node, x, dims=None, *args, correction=None, keepdim=False, unbiased=None):
    key = node.target._overloadpacket.__name__
    if args:
        # var.dim(x, dims, unbiased, keepdim)
        unbiased = args[0]
        if len(args) > 1:
            keepdim = args[1]
    v = c.val(x)
    dt = v.dtype
    axes = _axes(c, dims, v.ndim)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    m = c.emit("mean", [v], [s if i not in axes else 1 for i, s in enumerate(v.shape)], dt,
               axes=axes, keepdim=True)
    dlt = c.emit("sub", [v, m], v.shape, dt)
    sq = c.emit("mul", [dlt, dlt], v.shape, dt)
    n = 1
    for a in axes:
        if not isinstance(v.shape[a], int):
            c.fail("variance over a dynamic dim")
        n *= v.shape[a]
    shape = [s for i, s in enumerate(v.shape) if i not in axes] if not keepdim else \
        [s if i not in axes else 1 for i, s in enumerate(v.shape)]
    var = c.emit("sum", [sq], shape, dt, axes=axes, keepdim=bool(keepdim))
    var = c.emit("mul", [var, c.const(1.0 / max(n - correction, 1), dt)], shape, dt)
    if key == "std":
        return c.emit("sqrt", [var], shape, dt)
    if key == "var_mean":
        return (var, c.reshape(m, shape))
    return var


@_reg("softmax _softmax", "softmax over an axis")
def _softmax(c, node, x, dim, *rest, **kw):
    dt = c.out_dtype()
    v = c.cast(c.val(x), dt)
    return c.emit("softmax", [v], v.shape, dt, axis=c.axis(dim, v.ndim))


@_reg("log_softmax _log_softmax", "log_softmax over an axis")
def _log_softmax(c, node, x, dim, *rest, **kw):
    dt = c.out_dtype()
    v = c.cast(c.val(x), dt)
    return c.emit("log_softmax", [v], v.shape, dt, axis=c.axis(dim, v.ndim))


# -- norms --

@_reg("layer_norm native_layer_norm", "layer_norm over the last axis")
def _layer_norm(c, node, x, shape, w=None, b=None, eps=1e-5, *rest):
    v = c.val(x)
    if len(shape) != 1:
        c.fail("normalized over %d axes (the format normalizes the last one)" % len(shape))
    ins = [v] + ([c.val(w)] if w is not None else []) + ([c.val(b)] if b is not None else [])
    if w is None and b is not None:
        c.fail("a bias without a weight")
    r = c.emit("layer_norm", ins, v.shape, v.dtype, eps=float(eps))
    if node.target._overloadpacket.__name__ == "native_layer_norm":
        return (r, _Missing("native_layer_norm's mean"), _Missing("native_layer_norm's rstd"))
    return r


@_reg("rms_norm", "rms_norm over the last axis")
def _rms_norm(c, node, x, shape, w=None, eps=None):
    v = c.val(x)
    if len(shape) != 1:
        c.fail("normalized over %d axes (the format normalizes the last one)" % len(shape))
    if eps is None:
        eps = torch.finfo(_TORCH_DTYPES[v.dtype]).eps
    ins = [v] + ([c.val(w)] if w is not None else [])
    return c.emit("rms_norm", ins, v.shape, v.dtype, eps=float(eps))


# -- gathers --

@_reg("embedding", "embedding(table, ids)")
def _embedding(c, node, w, ids, *rest):
    return c.emit("embedding", [c.val(w), c.cast(c.val(ids), "int")], c.out_shape(), c.val(w).dtype)


@_reg("index_select", "index_select(x, dim, ids)")
def _index_select(c, node, x, dim, ids):
    v = c.val(x)
    a = c.axis(dim, v.ndim)
    idx = c.cast(c.val(ids), "int")
    perm = [a] + [i for i in range(v.ndim) if i != a]
    p = v if a == 0 else c.emit("permute", [v], [v.shape[i] for i in perm], v.dtype, axes=perm)
    rest = p.shape[1:]
    width = 1
    for s in rest:
        if not isinstance(s, int):
            c.fail("index_select over a tensor with dynamic trailing dims")
        width *= s
    flat = c.reshape(p, [p.shape[0], width])
    g = c.emit("embedding", [flat, idx], [idx.shape[0], width], v.dtype)
    g = c.reshape(g, [idx.shape[0]] + rest)
    if a == 0:
        return g
    inv = [perm.index(i) for i in range(v.ndim)]
    return c.emit("permute", [g], c.out_shape(), v.dtype, axes=inv)


# -- views --

@_reg("view reshape _unsafe_view flatten unflatten unsqueeze squeeze view_as expand_as",
      "reshape / view / flatten / unsqueeze / squeeze")
def _view(c, node, x, *args, **kw):
    return c.reshape(c.val(x), c.out_shape())


@_reg("permute", "permute")
def _permute(c, node, x, dims):
    v = c.val(x)
    dims = [c.axis(d, v.ndim) for d in dims]
    if dims == list(range(v.ndim)):
        return v
    return c.emit("permute", [v], c.out_shape(), v.dtype, axes=dims)


@_reg("transpose swapaxes", "transpose two axes")
def _transpose(c, node, x, a, b):
    v = c.val(x)
    a, b = c.axis(a, v.ndim), c.axis(b, v.ndim)
    if a == b:
        return v
    return c.emit("transpose", [v], c.out_shape(), v.dtype, axes=[a, b])


@_reg("expand broadcast_to", "expand / broadcast_to")
def _expand(c, node, x, sizes, *rest, **kw):
    v = c.val(x)
    shape = c.out_shape()
    if [str(s) for s in shape] == [str(s) for s in v.shape]:
        return v
    return c.emit("broadcast_to", [v], shape, v.dtype, shape=c.shape_json(shape))


@_reg("repeat_interleave", "repeat_interleave(x, n, dim) with an int n (GQA's repeat_kv)")
def _repeat_interleave(c, node, x, repeats, dim=None, output_size=None):
    v = c.val(x)
    if isinstance(repeats, torch.fx.Node) or dim is None:
        c.fail("a tensor of repeats or no dim")
    a = c.axis(dim, v.ndim)
    s1 = v.shape[:a + 1] + [1] + v.shape[a + 1:]
    s2 = v.shape[:a + 1] + [int(repeats)] + v.shape[a + 1:]
    e = c.emit("broadcast_to", [c.reshape(v, s1)], s2, v.dtype, shape=c.shape_json(s2))
    return c.reshape(c.emit("contiguous", [e], s2, v.dtype), c.out_shape())


@_reg("slice", "slice (step 1)")
def _slice(c, node, x, dim=0, start=None, end=None, step=1):
    v = c.val(x)
    a = c.axis(dim, v.ndim)
    if step != 1:
        c.fail("step %s" % step)
    n = v.shape[a]
    start = 0 if start is None else c.scalar(start)
    end = n if end is None else c.scalar(end)
    if isinstance(start, int) and start < 0:
        start = c.d.expr(n) + start if isinstance(n, int) else "(%s - %d)" % (n, -start)
    if isinstance(end, int):
        if end < 0:
            end = n + end if isinstance(n, int) else "(%s - %d)" % (n, -end)
        elif isinstance(n, int) and end > n:
            end = n
        elif not isinstance(n, int) and end >= 2 ** 62:
            end = n
    if start == 0 and (str(end) == str(n)):
        return v
    return c.emit("slice", [v], c.out_shape(), v.dtype, axis=a, start=start, end=end)


@_reg("select", "select(x, dim, i): a slice of one, squeezed")
def _select(c, node, x, dim, index):
    v = c.val(x)
    a = c.axis(dim, v.ndim)
    i = c.scalar(index)
    if isinstance(i, int) and i < 0:
        if not isinstance(v.shape[a], int):
            c.fail("a negative index on a dynamic dim")
        i += v.shape[a]
    end = i + 1 if isinstance(i, int) else "(%s + 1)" % i
    s = c.emit("slice", [v], v.shape[:a] + [1] + v.shape[a + 1:], v.dtype, axis=a, start=i, end=end)
    return c.reshape(s, c.out_shape())


@_reg("cat concat", "cat (pairwise concat)")
def _cat(c, node, tensors, dim=0):
    vals = [c.val(t) for t in tensors]
    dt = c.out_dtype()
    vals = [c.cast(v, dt) for v in vals if not (len(v.shape) == 1 and v.shape[0] == 0)]
    a = c.axis(dim, vals[0].ndim)
    acc = vals[0]
    for v in vals[1:]:
        sz = acc.shape[a]
        other = v.shape[a]
        tot = sz + other if isinstance(sz, int) and isinstance(other, int) else "(%s + %s)" % (sz, other)
        acc = c.emit("concat", [acc, v], acc.shape[:a] + [tot] + acc.shape[a + 1:], dt, axis=a)
    return acc


# -- makers --

@_reg("arange", "arange(end) / arange(start, end, step)")
def _arange(c, node, *args, **kw):
    dt = c.out_dtype()
    shape = c.out_shape()
    if len(args) == 1:
        start, step = 0, 1
    else:
        start = c.scalar(args[0])
        step = c.scalar(args[2]) if len(args) > 2 else kw.get("step", 1)
    n = shape[0]
    if isinstance(start, float) or isinstance(step, float):
        if dt not in _FLOATS:
            c.fail("a float arange of integer dtype")
        v = c.emit("arange", [], [n], "f32", n=n, dtype="f32")
        if step != 1:
            v = c.emit("mul", [v, c.const(float(step), "f32")], [n], "f32")
        if start != 0:
            v = c.emit("add", [v, c.const(float(start), "f32")], [n], "f32")
        return c.cast(v, dt)
    expr = "z" if (start == 0 and step == 1) else "%s + z*%s" % (start, step)
    v = c.emit("iota", [], [n], "int", expr=expr, len=n)
    return c.cast(v, dt)


@_reg("full zeros ones new_zeros new_ones new_full full_like zeros_like ones_like scalar_tensor",
      "full / zeros / ones (and _like)")
def _full(c, node, *args, **kw):
    key = node.target._overloadpacket.__name__
    dt = c.out_dtype()
    shape = c.out_shape()
    if key in ("zeros", "new_zeros", "zeros_like"):
        value = 0
    elif key in ("ones", "new_ones", "ones_like"):
        value = 1
    elif key == "scalar_tensor":
        value = c.scalar(args[0])
    elif key == "full_like":
        value = c.scalar(args[1])
    elif key == "new_full":
        value = c.scalar(args[2])
    else:
        value = c.scalar(args[1])
    if isinstance(value, str):
        c.fail("a symbolic fill value")
    if dt in _FLOATS:
        value = float(value)
    elif dt == "bool":
        value = int(bool(value))
    else:
        value = int(value)
    return c.const(value, dt, shape)


@_reg("triu tril", "triu / tril (diagonal)")
def _triu(c, node, x, diagonal=0):
    key = node.target._overloadpacket.__name__
    v = c.val(x)
    if v.ndim < 2:
        c.fail("on fewer than 2 dims")
    rows, cols = v.shape[-2], v.shape[-1]
    cc = c.d.expr(cols) if not isinstance(cols, str) else cols
    # keep (row, col) where col - row >= diagonal (triu) or col - row <= diagonal (tril)
    if key == "triu":
        expr = "z %% %s >= z / %s + %d" % (cc, cc, int(diagonal))
    else:
        expr = "z / %s + %d >= z %% %s" % (cc, int(diagonal), cc)
    n = rows * cols if isinstance(rows, int) and isinstance(cols, int) else "(%s)*(%s)" % (rows, cols)
    keep = c.emit("iota", [], [n], "int", expr=expr, len=n)
    keep = c.reshape(keep, [rows, cols])
    m = c.emit("not_equal", [keep, c.const(0, "int")], [rows, cols], "bool")
    zero = c.const(0 if v.dtype not in _FLOATS else 0.0, v.dtype)
    return c.emit("where", [m, v, zero], v.shape, v.dtype)


# -- attention --

@_reg("scaled_dot_product_attention", "scaled_dot_product_attention (causal, bool or float "
      "mask, scale, GQA)")
def _sdpa(c, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False):
    if dropout_p:
        c.fail("dropout_p %g (export in eval mode)" % dropout_p)
    vq, vk, vv = c.val(q), c.val(k), c.val(v)
    dt = vq.dtype
    if vq.ndim >= 3 and str(vk.shape[-3]) != str(vq.shape[-3]):
        hq, hk = vq.shape[-3], vk.shape[-3]
        if not (isinstance(hq, int) and isinstance(hk, int) and hq % hk == 0):
            c.fail("query heads %s not a multiple of key heads %s" % (hq, hk))
        r = hq // hk

        def rep(t):
            s1 = t.shape[:-3] + [hk, 1] + t.shape[-2:]
            s2 = t.shape[:-3] + [hk, r] + t.shape[-2:]
            e = c.emit("broadcast_to", [c.reshape(t, s1)], s2, dt, shape=c.shape_json(s2))
            return c.reshape(c.emit("contiguous", [e], s2, dt), t.shape[:-3] + [hq] + t.shape[-2:])
        vk, vv = rep(vk), rep(vv)
    d = vq.shape[-1]
    if scale is None:
        if not isinstance(d, int):
            c.fail("a dynamic head dim without scale")
        scale = 1.0 / math.sqrt(d)
    s, t = vq.shape[-2], vk.shape[-2]
    if attn_mask is None and (not is_causal or str(s) == str(t)):
        return c.emit("attention", [vq, vk, vv], c.out_shape(), dt, causal=bool(is_causal),
                      scale=float(scale))
    # the general form: softmax(q k^T * scale + mask) v, torch's top-left causal mask
    ss = vq.shape[:-1] + [t]
    sc = c.emit("matmul", [vq, _tr(c, vk)], ss, dt)
    sc = c.emit("mul", [sc, c.const(float(scale), dt)], ss, dt)
    if is_causal:
        n = s * t if isinstance(s, int) and isinstance(t, int) else "(%s)*(%s)" % (s, t)
        above = c.emit("iota", [], [n], "int", expr="z / %s < z %% %s" % (t, t), len=n)
        above = c.reshape(above, [s, t])
        msk = c.emit("mul", [c.cast(above, "f32"), c.const(-1e30, "f32")], [s, t], "f32")
        sc = c.emit("add", [sc, c.cast(msk, dt)], ss, dt)
    if attn_mask is not None:
        m = c.val(attn_mask)
        if m.dtype == "bool":
            fill = c.const(float("-inf"), dt)
            m = c.emit("where", [m, c.const(0.0, dt), fill], m.shape, dt)
        sc = c.emit("add", [sc, c.cast(m, dt)], ss, dt)
    p = c.emit("softmax", [sc], ss, dt, axis=len(ss) - 1)
    return c.emit("matmul", [p, vv], c.out_shape(), dt)


# -- python-level nodes --

@_reg("getitem", "a result of a multi-output op")
def _getitem(c, node, x, i):
    v = c.vals.get(x.name)
    if isinstance(v, (tuple, list)):
        r = v[i]
        if isinstance(r, _Missing):
            # only an error when it is used: an unused result costs nothing
            if node.users:
                c.fail(r.what)
            return r
        return r
    c.fail("indexing a tensor with []")


def _symint(c, node, *args, **kw):
    m = node.meta.get("val")
    if isinstance(m, torch.SymInt):
        return c.d.expr(m)
    if isinstance(m, (int, float, bool)):
        return m
    c.fail()


for _k in ("sym_size", "floordiv", "mul_sym", "add_sym", "sub_sym", "sym_numel", "sym_stride",
           "sym_storage_offset", "truediv", "mod_sym", "sym_max", "sym_min", "sym_float",
           "sym_int", "sym_not", "neg_sym"):
    _HANDLERS[_k] = _symint
_HANDLERS["sym_size"] = _symint
SUPPORTED_OPS["sym_size"] = "a symbolic size"


def _noop(c, node, *args, **kw):
    return None


for _k in _NO_VALUE:
    _HANDLERS[_k] = _noop


def _pyop(c, node, *args, **kw):
    """operator.mul, operator.add ... on symbolic ints (not tensors)."""
    m = node.meta.get("val")
    if isinstance(m, torch.SymInt):
        return c.d.expr(m)
    if isinstance(m, (int, float, bool)):
        return m
    c.fail("a Python operator on tensors")


_PY_OPS = {"mul", "add", "sub", "floordiv", "mod", "truediv", "neg", "sym_max", "sym_min",
           "eq", "ne", "lt", "le", "gt", "ge"}


# ---- the entry point ----

def export(model, example_args, dynamic_shapes=None, *, kwargs=None, name=None, strict=False):
    """Exports model (a torch.nn.Module, in eval mode) with torch.export on example_args
    (a tuple of tensors) into an Exported: the graph JSON and the weights.

    dynamic_shapes is torch.export's (per argument, {axis: torch.export.Dim(name, min=,
    max=)}); each Dim becomes a graph dim of that name, its range torch's, its profile the
    example's size. A dim torch leaves unbounded is capped at 8192. Raises
    UnsupportedOpError for an op outside docs/python.md's table (naming the op and the
    source line) and ExportError for what else the format cannot hold (float64 tensors,
    a training-mode dropout)."""
    if not isinstance(example_args, tuple):
        example_args = tuple(example_args) if isinstance(example_args, list) else (example_args,)
    if isinstance(model, torch.nn.Module) and model.training:
        model = model.eval()
    ep = torch.export.export(model, example_args, kwargs=kwargs, dynamic_shapes=dynamic_shapes,
                             strict=strict)
    return from_exported_program(ep, example_args, _dim_specs(model, example_args, dynamic_shapes),
                                 name=name or type(model).__name__)


def from_exported_program(ep, example_args, dim_specs=(), name="model"):
    """An Exported from a torch.export.ExportedProgram (export() calls this)."""
    dims = _Dims()
    user_phs = [n for n in ep.graph.nodes if n.op == "placeholder"
                and n.name in set(ep.graph_signature.user_inputs)]
    flat_args = [a for a in pytree.tree_leaves(example_args)]
    tensor_args = [a for a in flat_args if isinstance(a, torch.Tensor)]
    # name the symbols: the user's Dim names where the spec gives them, else the symbol's
    for (i, axis, d) in dim_specs:
        if i >= len(user_phs):
            continue
        m = user_phs[i].meta.get("val")
        if not isinstance(m, torch.Tensor) or axis >= m.dim():
            continue
        s = m.shape[axis]
        if not isinstance(s, torch.SymInt):
            continue
        e = s.node.expr
        root = getattr(d, "root", None)
        nm = (root.__name__ if root is not None else d.__name__)
        free = list(e.free_symbols)
        if len(free) == 1:
            sym = free[0].name
            nm = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in nm) or sym
            if nm[0].isdigit() or nm == "z":
                nm = "d_" + nm
            dims.names.setdefault(sym, nm)
    sources = {}
    for i, ph in enumerate(user_phs):
        m = ph.meta.get("val")
        if not isinstance(m, torch.Tensor):
            continue
        ex = tensor_args[i] if i < len(tensor_args) else None
        for axis, s in enumerate(m.shape):
            if isinstance(s, torch.SymInt):
                e = s.node.expr
                if e.is_Symbol:
                    dims.names.setdefault(e.name, e.name)
                    nm = dims.names[e.name]
                    sources.setdefault(nm, (i, axis))
                    if ex is not None:
                        dims.profile.setdefault(nm, int(ex.shape[axis]))
    dim_list = []
    for sym, vr in sorted(ep.range_constraints.items(), key=lambda kv: str(kv[0])):
        if not getattr(sym, "is_Symbol", False) or sym.name not in dims.names:
            continue
        nm = dims.names[sym.name]
        lo = int(vr.lower) if vr.lower.is_finite else 1
        hi = int(vr.upper) if vr.upper.is_finite and int(vr.upper) < 2 ** 31 else max(_DEFAULT_MAX, lo)
        lo = max(lo, 1)
        prof = min(max(dims.profile.get(nm, lo), lo), hi)
        dim_list.append({"name": nm, "min": lo, "max": hi, "profile": prof})
    conv = _Converter(ep, dims)
    weights, user_inputs = conv.run()
    graph = {"format": "luminal-graph", "version": 1, "name": name}
    if dim_list:
        graph["dims"] = dim_list
    # weights first (in the order torch gives them), then the user's inputs
    graph["inputs"] = conv.inputs
    graph["nodes"] = conv.nodes
    graph["outputs"] = conv.outputs
    out_spec = ep.call_spec.out_spec if getattr(ep, "call_spec", None) else None
    in_spec = ep.call_spec.in_spec if getattr(ep, "call_spec", None) else None
    return Exported(graph, weights, user_inputs, sources, in_spec, out_spec, len(conv.outputs))


# -- splits (after the table above: they return tuples) --

@_reg("split split_with_sizes chunk unbind", "split / split_with_sizes / chunk / unbind")
def _split(c, node, x, sizes=None, dim=0, *rest):
    key = node.target._overloadpacket.__name__
    v = c.val(x)
    if key == "unbind":
        dim = 0 if sizes is None else sizes
    a = c.axis(dim, v.ndim)
    outs = c.meta()
    res, start = [], 0
    for o in outs:
        n = c.d.expr(o.shape[a]) if key != "unbind" else 1
        if not isinstance(n, int) or not isinstance(start, int):
            c.fail("a split of a dynamic dim")
        shape = list(v.shape)
        shape[a] = n
        s = c.emit("slice", [v], shape, v.dtype, axis=a, start=start, end=start + n)
        if key == "unbind":
            s = c.reshape(s, [c.d.expr(d) for d in o.shape])
        res.append(s)
        start += n
    return tuple(res)


@_reg("stack", "stack: each unsqueezed, then cat")
def _stack(c, node, tensors, dim=0):
    vals = [c.val(t) for t in tensors]
    dt = c.out_dtype()
    a = c.axis(dim, vals[0].ndim + 1)
    parts = [c.reshape(c.cast(v, dt), v.shape[:a] + [1] + v.shape[a:]) for v in vals]
    acc = parts[0]
    for k, v in enumerate(parts[1:], 2):
        acc = c.emit("concat", [acc, v], acc.shape[:a] + [k] + acc.shape[a + 1:], dt, axis=a)
    return acc
