"""torch_graph.py - the JSON graph format (docs/graph-json.md) interpreted in PyTorch.

    g = TorchGraph.load("examples/graphs/swiglu_mlp_bf16.json")
    dims = g.dim_values({"T": 3})                  # every other dim at its profile value
    prog = g.prepare(dims, device="cuda")           # or attention="sdpa"
    outs = prog(*[inputs[name] for name in prog.input_names])   # a tuple, in output order

The interpreter runs the same graph that our compiler reads, so torch and our tools can be
compared on it:

- High-level ops are what a PyTorch user writes: `a @ b` (torch.matmul), F.rms_norm,
  F.layer_norm, F.softmax, F.gelu (erf or tanh as the node says), F.silu, torch.exp, ...
  `attention` is written out (q k^T * scale [+ causal mask], softmax, @ v); with
  prepare(..., attention="sdpa") it is F.scaled_dot_product_attention instead.
- Dtypes are the format's: there is no promotion, a node computes in its operands' dtype
  (so bf16 graphs run in bf16 where ours do). The few places where the format defines
  something torch spells differently follow the format:
    where(m, a, b)  a*m + b*(1-m) (an inf or NaN in the branch not taken gives NaN)
    mod             C's fmod (sign of the dividend), torch.fmod, not Python's %
    cast            float -> int truncates and saturates, NaN -> 0; FP8 saturates
                    (torch's own float8 conversion gives NaN / inf on overflow)
    causal_mask     -1e30 above the diagonal, made in f32 and cast to the dtype; in
                    attention it is aligned bottom-right (key j is seen by query i when
                    j <= i + t - s), the same as is_causal when s == t
    rope            rotate-half, inv_freq = base^(-2i/d), positions z + offset, cos/sin
                    computed in f32 then cast to x's dtype
    constants       the JSON number as f32, then cast to the dtype
    scatter         later indexes win, deterministically
- FP8 tensors have almost no torch kernels: ops on them compute in f32 and round back.
- Primitive nodes with explicit views read the producer's stored (row-major) buffer
  through the view: torch.as_strided when every stride evaluates to k*z over its dim,
  otherwise the stride expressions are evaluated over index grids and read with
  torch.take. Such primitives follow docs/hlir.md exactly: f32 arithmetic rounded to
  the node's dtype, and a SumReduce over at most SEQ_SUM_MAX elements adds in index
  order, as the reference does.

Dynamic dims get their values at prepare time. Expressions (sizes, strides, iota) use the
text form of docs/hlir.md: + - * / % (floor), min, max, cdiv, >=, <, > , <=, &, |.

compare() is the one correctness check that the CPU test and the GPU harness share (the
tolerance and its reasoning are in its docstring and in README.md).
"""

import json
import math
import re

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------
# dtypes

DTYPES = {
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "int": torch.int32,
    "i64": torch.int64,
    "bool": torch.bool,
    "f8e4m3": torch.float8_e4m3fn,
    "f8e5m2": torch.float8_e5m2,
    "f64": torch.float64,  # not in the format: widened() uses it for an f64 check
}
NAMES = {v: k for k, v in DTYPES.items()}
FLOATS = ("f32", "f16", "bf16", "f8e4m3", "f8e5m2")
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
FP8_MAX = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
INT_RANGE = {torch.int32: (-(2**31), 2**31 - 1), torch.int64: (-(2**63), 2**63 - 1)}
# A SumReduce primitive over at most this many elements adds in index order in f32,
# exactly as the reference runtime; longer ones use torch.sum in f32.
SEQ_SUM_MAX = 256


def f32(v):
    """A JSON number (or "inf", "-inf", "nan") as the f32 the reader keeps, as a float."""
    if isinstance(v, str):
        v = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]
    return torch.tensor(float(v), dtype=torch.float32).item()


def cast(x, to):
    """x converted to torch dtype `to` by the format's rules (docs/hlir.md, Cast)."""
    src = x.dtype
    if to == torch.bool:
        return x != 0
    if src == torch.bool:
        return x.to(torch.float32).to(to) if to.is_floating_point else x.to(to)
    if to.is_floating_point:
        if src != torch.float32:
            x = x.to(torch.float32)  # narrow floats widen exactly; ints round to f32
        if to in FP8:
            m = FP8_MAX[to]
            x = x.clamp(-m, m)  # saturate (NaN stays NaN)
        return x.to(to)
    if src.is_floating_point:  # truncate toward zero, saturate, NaN -> 0
        lo, hi = INT_RANGE[to]
        xd = torch.nan_to_num(x.to(torch.float64), nan=0.0)
        if to == torch.int64:  # 2^63 - 1 is no double: clamp below 2^63, then saturate
            big = xd >= 2.0**63
            r = xd.clamp(float(lo), 2.0**63 - 1024).trunc().to(to)
            return torch.where(big, torch.full_like(r, hi), r)
        return xd.clamp(lo, hi).trunc().to(to)
    return x.to(to)  # int <-> i64: sign-extend / wrap


def in_f32(fn, *xs):
    """fn applied to tensors xs in f32, the result rounded to the first one's dtype
    (docs/hlir.md: float nodes compute in f32 and round to their dtype's storage)."""
    dt = xs[0].dtype
    if not dt.is_floating_point or dt == torch.float32:
        return fn(*xs)
    return cast(fn(*[t if t is None else t.to(torch.float32) for t in xs]), dt)


def user(fn, *xs):
    """fn as a PyTorch user calls it on xs; FP8 has (almost) no kernels: via f32."""
    if xs[0].dtype in FP8:
        return in_f32(fn, *xs)
    return fn(*xs)


# ---------------------------------------------------------------------------------------
# expressions: the text form of docs/hlir.md

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(>=|<=|[-+*/%<>&|(),]))")


class ExprError(ValueError):
    pass


def parse_expr(text):
    """Parses an expression (a JSON integer or its text form) into a tuple tree."""
    if isinstance(text, bool):
        raise ExprError(f"expected an expression, got {text!r}")
    if isinstance(text, int):
        return ("num", text)
    if not isinstance(text, str):
        raise ExprError(f"expected an expression, got {text!r}")
    toks, pos = [], 0
    text_s = text.rstrip()
    while pos < len(text_s):
        m = _TOKEN.match(text_s, pos)
        if not m or m.end() == pos:
            raise ExprError(f"{text!r}: cannot read at column {pos + 1}")
        pos = m.end()
        if m.group(1):
            toks.append(("num", int(m.group(1))))
        elif m.group(2):
            toks.append(("name", m.group(2)))
        else:
            toks.append(("op", m.group(3)))
    toks.append(("end", None))
    i = 0

    def peek():
        return toks[i]

    def take(op=None):
        nonlocal i
        t = toks[i]
        if op is not None and t != ("op", op):
            raise ExprError(f"{text!r}: expected {op!r}")
        i += 1
        return t

    def p_or():
        e = p_and()
        while peek() == ("op", "|"):
            take()
            e = ("|", e, p_and())
        return e

    def p_and():
        e = p_cmp()
        while peek() == ("op", "&"):
            take()
            e = ("&", e, p_cmp())
        return e

    def p_cmp():
        e = p_add()
        t = peek()
        if t[0] == "op" and t[1] in (">=", "<", ">", "<="):
            take()
            b = p_add()
            e = {">=": (">=", e, b), "<": ("<", e, b), ">": ("<", b, e), "<=": (">=", b, e)}[t[1]]
        return e

    def p_add():
        e = p_mul()
        while peek()[0] == "op" and peek()[1] in "+-" and len(peek()[1]) == 1:
            op = take()[1]
            e = (op, e, p_mul())
        return e

    def p_mul():
        e = p_unary()
        while peek()[0] == "op" and peek()[1] in ("*", "/", "%"):
            op = take()[1]
            e = (op, e, p_unary())
        return e

    def p_unary():
        if peek() == ("op", "-"):
            take()
            return ("neg", p_unary())
        return p_atom()

    def p_atom():
        t = take()
        if t[0] == "num":
            return t
        if t[0] == "name":
            if t[1] in ("min", "max", "cdiv"):
                take("(")
                a = p_or()
                take(",")
                b = p_or()
                take(")")
                return (t[1], a, b)
            if t[1] == "z":
                return ("z",)
            return ("var", t[1])
        if t == ("op", "("):
            e = p_or()
            take(")")
            return e
        raise ExprError(f"{text!r}: unexpected {t[1]!r}")

    e = p_or()
    if peek()[0] != "end":
        raise ExprError(f"{text!r}: unexpected {peek()[1]!r} after the expression")
    return e


def _is_t(v):
    return isinstance(v, torch.Tensor)


def _as01(c):
    return c.to(torch.int64) if _is_t(c) else int(bool(c))


def eval_expr(e, dims, z=None):
    """The value of tree e with the dims (name -> int) and z (an int, an int64 tensor, or
    None where z may not occur). / and % are floor division and modulo; cdiv is ceiling
    division; comparisons and &, | give 0 or 1."""
    k = e[0]
    if k == "num":
        return e[1]
    if k == "var":
        if e[1] not in dims:
            raise ExprError(f"unknown dim {e[1]!r}")
        return dims[e[1]]
    if k == "z":
        if z is None:
            raise ExprError("z is not allowed here")
        return z
    if k == "neg":
        return -eval_expr(e[1], dims, z)
    a, b = eval_expr(e[1], dims, z), eval_expr(e[2], dims, z)
    if k == "+":
        return a + b
    if k == "-":
        return a - b
    if k == "*":
        return a * b
    if k in ("/", "%", "cdiv"):
        if (not _is_t(b) and b == 0) or (_is_t(b) and bool((b == 0).any())):
            raise ExprError("division by zero in an expression")
        if k == "/":
            return a // b
        if k == "%":
            return a % b
        return -((-a) // b)
    if k in ("min", "max"):
        if _is_t(a) or _is_t(b):
            fn = torch.minimum if k == "min" else torch.maximum
            return fn(torch.as_tensor(a), torch.as_tensor(b))
        return min(a, b) if k == "min" else max(a, b)
    if k == ">=":
        return _as01(a >= b)
    if k == "<":
        return _as01(a < b)
    if k == "&":
        return _as01((a != 0) & (b != 0)) if (_is_t(a) or _is_t(b)) else int(a != 0 and b != 0)
    if k == "|":
        return _as01((a != 0) | (b != 0)) if (_is_t(a) or _is_t(b)) else int(a != 0 or b != 0)
    raise ExprError(f"bad expression node {k!r}")


def has_var(e):
    if e[0] == "var":
        return True
    return any(has_var(c) for c in e[1:] if isinstance(c, tuple))


def size_of(v, dims):
    """A size attribute (JSON integer or expression text without z) as an int."""
    return int(eval_expr(parse_expr(v), dims))


# ---------------------------------------------------------------------------------------
# helpers shared by several ops


def _axis(a, nd):
    a = int(a)
    if a < 0:
        a += nd
    if not 0 <= a < max(nd, 1):
        raise ValueError(f"axis {a} out of range for {nd} dims")
    return a


def _sum(x, axes, keepdim):
    if not axes:
        return x
    if x.dtype in FP8:
        return in_f32(lambda t: t.sum(dim=axes, keepdim=keepdim), x)
    r = torch.sum(x, dim=axes, keepdim=keepdim)
    return r.to(x.dtype) if r.dtype != x.dtype else r  # int sums wrap in their dtype


def _amax(x, axes, keepdim):
    if not axes:
        return x
    if any(x.shape[a] == 0 for a in axes):
        shape = [1 if a in axes else s for a, s in enumerate(x.shape)]
        if not keepdim:
            shape = [s for a, s in enumerate(x.shape) if a not in axes]
        fill = -math.inf if x.dtype.is_floating_point else INT_RANGE[x.dtype][0]
        return torch.full(shape, fill, dtype=x.dtype, device=x.device)
    return user(lambda t: torch.amax(t, dim=axes, keepdim=keepdim), x)


def scatter_last_wins(dest, idx, src, check=True):
    """A contiguous copy of dest with flat element idx[i] = src[i], later i winning
    (static shapes throughout, so torch.compile traces it whole)."""
    out = dest.contiguous().reshape(-1)
    idx = idx.reshape(-1).to(torch.int64)
    src = src.reshape(-1)
    n = out.numel()
    if idx.numel() == 0 or n == 0:
        return out.clone().reshape(dest.shape)
    if check and (bool((idx < 0).any()) or bool((idx >= n).any())):
        raise IndexError(f"scatter: an index is outside [0, {n})")
    order = torch.arange(idx.numel(), device=idx.device)
    winner = torch.full((n,), -1, dtype=torch.int64, device=idx.device)
    winner = winner.scatter_reduce(0, idx, order, reduce="amax")
    picked = src[winner.clamp(min=0)]
    return torch.where(winner >= 0, picked, out).reshape(dest.shape)


def take(data, idx, check=True):
    """Row-major element idx[i] of data (any view), shaped as idx."""
    i = idx.to(torch.int64)
    n = data.numel()
    if check and i.numel() and (bool((i < 0).any()) or bool((i >= n).any())):
        raise IndexError(f"gather: an index is outside [0, {n})")
    return torch.take(data, i)


def to_bhsd(x):
    """x [*lead, seq, dim] as 4-D (batch, heads, seq, dim): no lead dims -> (1, 1), one ->
    (1, heads), two as they are, more -> the leading ones merged into batch. A view where
    the strides allow (reshape copies only a merge that no view can express)."""
    lead = x.shape[:-2]
    if len(lead) == 0:
        return x.reshape(1, 1, *x.shape[-2:])
    if len(lead) == 1:
        return x.unsqueeze(0)
    if len(lead) == 2:
        return x
    return x.reshape(-1, lead[-1], *x.shape[-2:])


def sdpa_backend(q, k, v, **kw):
    """Which of SDPA's flash, memory-efficient and math backends accepts
    F.scaled_dot_product_attention(q, k, v, **kw): "flash" when the call succeeds with only
    the flash backend allowed, else "efficient", else "math" (the second value joins the
    refusals' first lines). The default selection may still prefer another backend (cuDNN's
    on Hopper): run_e2e names the kernels that ran. Needs torch.nn.attention."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    why = []
    for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel(be):
                F.scaled_dot_product_attention(q, k, v, **kw)
            return name, "; ".join(why)
        except RuntimeError as e:
            why.append(f"{name}: {str(e).splitlines()[0][:200]}")
    return "math", "; ".join(why)


def causal_mask(s, t, dtype, device):
    """[s, t]: 0 where key j <= query i + (t - s), -1e30 above, made in f32."""
    row = torch.arange(s, device=device).unsqueeze(1)
    col = torch.arange(t, device=device).unsqueeze(0)
    m = torch.where(col > row + (t - s), -1e30, 0.0).to(torch.float32)
    return cast(m, dtype)


# ---------------------------------------------------------------------------------------
# the graph


class GraphError(ValueError):
    pass


class TorchGraph:
    """A parsed graph document. prepare() gives a callable program for given dims."""

    def __init__(self, doc, source="<graph>"):
        if doc.get("format") != "luminal-graph" or doc.get("version") != 1:
            raise GraphError(f"{source}: not a luminal-graph version 1 document")
        self.source = source
        self.doc = doc
        self.name = doc.get("name", source)
        self.dims = doc.get("dims", [])
        self.inputs = doc["inputs"]
        self.outputs = doc["outputs"]
        self.nodes = self._kahn(doc["nodes"])

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls(json.load(f), source=str(path))

    # -- structure --

    @staticmethod
    def _ref_name(ref):
        return ref if isinstance(ref, str) else ref["tensor"]

    def _kahn(self, nodes):
        """Nodes in Kahn order, taking the earliest listed ready node first."""
        names = {n["name"] for n in nodes}
        deps = [{self._ref_name(r) for r in n.get("inputs", [])} & names for n in nodes]
        done, order = set(), []
        left = list(range(len(nodes)))
        while left:
            for k, i in enumerate(left):
                if deps[i] <= done:
                    order.append(nodes[i])
                    done.add(nodes[i]["name"])
                    del left[k]
                    break
            else:
                raise GraphError(f"{self.source}: the nodes form a cycle")
        return order

    @property
    def input_names(self):
        return [i["name"] for i in self.inputs]

    @property
    def output_names(self):
        return [o if isinstance(o, str) else o["name"] for o in self.outputs]

    def dim_values(self, overrides=None, at="profile"):
        """name -> value: each dim at `at` ("profile", "min" or "max") unless overridden."""
        vals = {}
        for d in self.dims:
            v = d.get(at, d["min"]) if at != "profile" else d.get("profile", d["min"])
            vals[d["name"]] = int(v)
        for k, v in (overrides or {}).items():
            if k not in vals:
                raise GraphError(f"{self.source}: no dim named {k!r}")
            d = next(d for d in self.dims if d["name"] == k)
            if not d["min"] <= v <= d["max"]:
                raise GraphError(f"{self.source}: dim {k}={v} outside [{d['min']}, {d['max']}]")
            vals[k] = int(v)
        return vals

    def dims_from_shapes(self, shapes):
        """Dim values read off input shapes (name -> tuple) where a size is a bare dim name;
        the others at their profile value. Checks every input shape against the result."""
        vals = self.dim_values()
        seen = {}
        for spec in self.inputs:
            shape = shapes[spec["name"]]
            for e, s in zip(spec["shape"], shape):
                if isinstance(e, str) and e.strip() in vals:
                    seen.setdefault(e.strip(), int(s))
        vals.update(seen)
        for spec in self.inputs:
            want = tuple(size_of(e, vals) for e in spec["shape"])
            if tuple(shapes[spec["name"]]) != want:
                raise GraphError(f"{self.source}: input {spec['name']!r} has shape "
                                 f"{tuple(shapes[spec['name']])}, the graph wants {want} "
                                 f"with dims {vals}")
        return vals

    def input_specs(self, dims):
        """[(name, torch dtype, shape tuple)] of the inputs at these dims."""
        return [(i["name"], DTYPES[i["dtype"]], tuple(size_of(e, dims) for e in i["shape"]))
                for i in self.inputs]

    def float_dtypes(self):
        """Every float dtype the graph names (inputs, casts, constants, ...)."""
        found = {i["dtype"] for i in self.inputs if i["dtype"] in FLOATS}
        for n in self.nodes:
            dt = n.get("dtype")
            if dt in FLOATS:
                found.add(dt)
            elif n["op"] in ("constant", "causal_mask") and dt is None:
                found.add("f32")
        return found

    def widened(self, to="f32", keep_narrow=False):
        """The same graph computing in `to`: its float inputs, casts, constants and masks
        made `to` (the op mapping checked without rounding to narrow types). With
        keep_narrow, explicit narrow dtypes of nodes (a cast to bf16, a bf16 constant)
        stay, and only f32 and the inputs become `to`: the graph's exact value, rounding
        where the graph itself asks for it (truth() uses this)."""
        doc = json.loads(json.dumps(self.doc))
        for i in doc["inputs"]:
            if i["dtype"] in FLOATS:
                i["dtype"] = to
        for n in doc["nodes"]:
            if n.get("dtype") in FLOATS and (not keep_narrow or n["dtype"] == "f32"):
                n["dtype"] = to
            elif n["op"] in ("constant", "causal_mask") and "dtype" not in n:
                n["dtype"] = to
        return TorchGraph(doc, source=f"{self.source} (widened to {to})")

    def truth(self, dims, inputs, device="cpu"):
        """The graph's outputs computed in f64 from these inputs (in the graph's dtypes):
        what compare() measures each side's error against, to tell a wrong program from
        ill-conditioned data."""
        wide = self.widened("f64", keep_narrow=True)
        ins = [x.to(torch.float64) if x.dtype.is_floating_point else x for x in inputs]
        return wide.prepare(dims, device=device)(*ins)

    def is_attention(self):
        return any(n["op"] == "attention" for n in self.nodes)

    # -- execution --

    def prepare(self, dims, device="cpu", attention="explicit", counter=None):
        """A callable program: prog(*inputs in input order) -> tuple of outputs.
        attention: "explicit" (written out) or "sdpa" (F.scaled_dot_product_attention).
        counter: a dict whose "flops" the program adds matmul and attention flops to."""
        if attention not in ("explicit", "sdpa"):
            raise ValueError("attention is 'explicit' or 'sdpa'")
        return _Program(self, dict(dims), torch.device(device), attention, counter)


class _ViewPlan:
    """How a primitive reads a stored buffer through an explicit view (static per dims):
    as_strided when every stride evaluates to k*z (k >= 0) over its dim, else a tensor of
    positions for torch.take."""

    def __init__(self, ref, dims, device, source):
        self.tensor = ref["tensor"]
        self.shape = [size_of(s, dims) for s in ref["shape"]]
        if len(ref["strides"]) != len(self.shape):
            raise GraphError(f"{source}: a view of {self.tensor!r} has {len(self.shape)} "
                             f"sizes and {len(ref['strides'])} strides")
        offs, strides = [], []
        for s, size in zip(ref["strides"], self.shape):
            z = torch.arange(size, dtype=torch.int64)
            v = eval_expr(parse_expr(s), dims, z)
            v = v if _is_t(v) else torch.full((size,), int(v), dtype=torch.int64)
            offs.append(v)
            k = int(v[1] - v[0]) if size > 1 else 0
            ok = size == 0 or (int(v[0]) == 0 and k >= 0 and torch.equal(v, z * k))
            strides.append(k if ok else None)
        self.empty = any(s == 0 for s in self.shape)
        self.lo = 0 if self.empty else sum(int(o.min()) for o in offs)
        self.hi = -1 if self.empty else sum(int(o.max()) for o in offs)
        self.linear = all(k is not None for k in strides)
        self.strides = strides
        self.pos = None
        if not self.linear and not self.empty:
            pos = torch.zeros(self.shape, dtype=torch.int64)
            for d, o in enumerate(offs):
                sh = [1] * len(self.shape)
                sh[d] = self.shape[d]
                pos = pos + o.reshape(sh)
            self.pos = pos.to(device)
        self.source = source

    def read(self, buf):
        if self.empty:
            return buf.new_empty(self.shape)
        n = buf.numel()
        if self.lo < 0 or self.hi >= n:
            raise IndexError(f"{self.source}: a view of {self.tensor!r} reads position "
                             f"{self.lo if self.lo < 0 else self.hi}, outside its buffer "
                             f"of {n} elements")
        if self.linear:
            return torch.as_strided(buf, self.shape, self.strides)
        return torch.take(buf, self.pos)


class _Program:
    """A graph prepared for fixed dims: a list of steps, one closure per node.

    Each name also has an owner: the name whose contiguous result is its stored buffer
    (itself for a computed node, its source's owner for a view op), which explicit views
    read. A name whose buffer cannot be told (a reshape that torch copies where our
    builder may keep a merged view) has a message as its owner; reading it through an
    explicit view is then an error rather than a guess."""

    def __init__(self, g, dims, device, attention, counter):
        self.g, self.dims, self.device = g, dims, device
        self.attention, self.counter = attention, counter
        self.check = device.type == "cpu"  # data-dependent index checks (they sync a GPU)
        # attention="sdpa": (backend, refusals) per attention node, filled on the first
        # call by sdpa_backend (run_e2e reports it); None otherwise
        self.sdpa_backends = [] if attention == "sdpa" else None
        self._n_attn = sum(1 for n in g.nodes if n["op"] == "attention")
        self.input_names = g.input_names
        self.output_names = g.output_names
        self._steps = [self._compile(n) for n in g.nodes]
        # Owners are tracked only when some explicit view reads a stored buffer.
        self._track = any(not isinstance(r, str) for n in g.nodes for r in n.get("inputs", []))
        self._outs = []
        for o in g.outputs:
            if isinstance(o, str):
                self._outs.append((o, None))
            elif "strides" in o:
                self._outs.append((o["tensor"], _ViewPlan(o, dims, device, g.source)))
                self._track = True
            else:
                self._outs.append((o["tensor"], None))

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise GraphError(f"{self.g.source}: {len(inputs)} inputs given, the graph has "
                             f"{len(self.input_names)}")
        env = dict(zip(self.input_names, inputs))
        owner = {n: n for n in self.input_names}
        for name, fn, kind, src in self._steps:
            y = fn(env, owner)
            env[name] = y
            if not self._track:
                continue
            if kind == "own":
                owner[name] = name
            elif kind == "view":
                owner[name] = owner[src]
            elif kind == "contiguous":  # no copy when already contiguous
                owner[name] = owner[src] if y is env[src] else name
            else:  # a reshape: a view when torch could view it
                owner[name] = owner[src] if y._base is not None or y is env[src] else (
                    "a reshape that torch copies, where our builder may keep a merged view")
        outs = []
        for name, plan in self._outs:
            t = plan.read(self._buffer(env, owner, name)) if plan else env[name]
            outs.append(t.contiguous())
        return tuple(outs)

    def _buffer(self, env, owner, name):
        own = owner[name]
        if own not in env:
            raise GraphError(f"{self.g.source}: an explicit view reads {name!r}, whose "
                             f"stored buffer this interpreter cannot tell: {own}")
        return env[own].contiguous().reshape(-1)

    def _flops(self, n):
        if self.counter is not None:
            self.counter["flops"] = self.counter.get("flops", 0) + int(n)

    def _compile(self, node):
        """(name, fn(env, owner) -> tensor, kind, source name): kind is "own" for a
        computed result, "view", "contiguous" or "reshape" for what may share the
        source's buffer."""
        name = node["name"]
        refs = node.get("inputs", [])
        if any(not isinstance(r, str) for r in refs):
            return name, self._primitive(node), "own", None
        f, kind = self._high_level(node, node["op"])
        ins = list(refs)
        return name, (lambda env, owner: f(*[env[i] for i in ins])), kind, (
            ins[0] if ins else None)

    # -- primitives with explicit views (docs/hlir.md semantics, exactly) --

    def _primitive(self, node):
        op, refs = node["op"], node["inputs"]
        plans = [None if isinstance(r, str) else _ViewPlan(r, self.dims, self.device,
                                                            self.g.source) for r in refs]

        def read(env, owner):
            return [env[r] if p is None else p.read(self._buffer(env, owner, p.tensor))
                    for r, p in zip(refs, plans)]

        if op == "cast":
            to = DTYPES[node.get("dtype", "f32")]
            return lambda env, owner: cast(read(env, owner)[0], to)
        unary = {"exp2": torch.exp2, "log2": torch.log2, "sin": torch.sin,
                 "recip": torch.reciprocal, "sqrt": torch.sqrt}
        if op in unary:
            fn = unary[op]
            return lambda env, owner: in_f32(fn, *read(env, owner))
        if op in ("add", "mul"):
            # torch adds and multiplies f16 / bf16 in f32 and rounds once: the same bits
            # as in_f32, without materialising f32 copies of broadcast operands
            fn = torch.add if op == "add" else torch.mul
            return lambda env, owner: user(fn, *read(env, owner))
        if op == "mod":
            return lambda env, owner: in_f32(torch.fmod, *read(env, owner))
        if op == "less_than":
            def lt(env, owner):
                a, b = read(env, owner)
                if a.dtype.is_floating_point:
                    a, b = a.to(torch.float32), b.to(torch.float32)
                return a < b
            return lt
        if op == "gather":
            def gather(env, owner):
                idx, data = read(env, owner)
                return take(data, idx, self.check)
            return gather
        if op == "scatter":
            def scatter(env, owner):
                dest, idx, src = read(env, owner)
                return scatter_last_wins(dest, idx, src, self.check)
            return scatter
        if op in ("sum_reduce", "max_reduce"):
            ax = node.get("axis", 0)

            def reduce(env, owner):
                (x,) = read(env, owner)
                a = _axis(ax, x.dim())
                if op == "max_reduce":
                    return _amax(x, [a], False)
                if not x.dtype.is_floating_point:
                    return _sum(x, [a], False)
                if x.shape[a] <= SEQ_SUM_MAX:  # in index order, as the reference adds
                    rest = [s for i, s in enumerate(x.shape) if i != a]
                    acc = torch.zeros(rest, dtype=torch.float32, device=x.device)
                    for k in range(x.shape[a]):
                        acc = acc + x.select(a, k).to(torch.float32)
                else:
                    acc = x.sum(dim=a, dtype=torch.float32)
                return cast(acc, x.dtype)
            return reduce
        raise GraphError(f"{self.g.source}: node {node['name']!r}: {op} is not a primitive "
                         f"(view inputs are only for primitives)")

    # -- high-level ops: what a PyTorch user writes --

    def _high_level(self, node, op):
        """(f(*inputs) -> tensor, kind)."""
        dims, dev, g = self.dims, self.device, self.g
        attr = node.get

        un = {
            "neg": torch.neg, "exp": torch.exp, "log": torch.log, "exp2": torch.exp2,
            "log2": torch.log2, "sin": torch.sin, "cos": torch.cos, "sqrt": torch.sqrt,
            "recip": torch.reciprocal, "sigmoid": torch.sigmoid, "silu": F.silu,
            "tanh": torch.tanh, "relu": torch.relu,
        }
        if op in un:
            fn = un[op]
            return (lambda x: user(fn, x)), "own"
        if op == "gelu":
            approx = attr("approximate", "none")
            return (lambda x: user(lambda t: F.gelu(t, approximate=approx), x)), "own"
        bi = {
            "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
            "mod": torch.fmod, "maximum": torch.maximum, "minimum": torch.minimum,
        }
        if op in bi:
            fn = bi[op]
            return (lambda a, b: user(fn, a, b)), "own"
        cmp = {
            "less_than": torch.lt, "greater_than": torch.gt, "less_equal": torch.le,
            "greater_equal": torch.ge, "equal": torch.eq, "not_equal": torch.ne,
        }
        if op in cmp:
            fn = cmp[op]
            return (lambda a, b: fn(a.float(), b.float()) if a.dtype in FP8 else fn(a, b)), "own"
        if op == "where":
            def where(m, a, b):
                return user(lambda x, y, k: x * k + y * (1 - k), a, b, cast(m, a.dtype))
            return where, "own"
        if op == "cast":
            to = DTYPES[attr("dtype")]
            return (lambda x: cast(x, to)), "own"
        if op == "contiguous":
            return (lambda x: x.contiguous()), "contiguous"
        if op == "constant":
            v = f32(attr("value"))
            dt = DTYPES[attr("dtype", "f32")]
            shape = [size_of(s, dims) for s in attr("shape", [])]
            return (lambda: cast(torch.tensor(v, dtype=torch.float32, device=dev), dt)
                    .expand(shape)), "own"
        if op == "iota":
            e = parse_expr(attr("expr"))
            n = size_of(attr("len"), dims)

            def values(device):
                v = eval_expr(e, dims, torch.arange(n, dtype=torch.int64, device=device))
                return v if _is_t(v) else torch.full((n,), int(v), dtype=torch.int64,
                                                     device=device)
            v = values("cpu")  # depends on the dims only: checked once, here
            if v.numel() and (int(v.min()) < -(2**31) or int(v.max()) >= 2**31):
                raise OverflowError(f"{g.source}: iota {node['name']!r}: a value is outside "
                                    f"int32")
            return (lambda: values(dev).to(torch.int32)), "own"
        if op == "arange":
            n = size_of(attr("n"), dims)
            dt = DTYPES[attr("dtype", "int")]
            return (lambda: cast(torch.arange(n, dtype=torch.int32, device=dev), dt)), "own"
        if op in ("sum", "max", "mean"):
            keep = bool(attr("keepdim", False))
            axes_attr = attr("axes")

            def axes_of(x):
                if axes_attr is None:
                    return list(range(x.dim()))
                a = axes_attr if isinstance(axes_attr, list) else [axes_attr]
                return sorted({_axis(k, x.dim()) for k in a})
            if op == "sum":
                return (lambda x: _sum(x, axes_of(x), keep)), "own"
            if op == "max":
                return (lambda x: _amax(x, axes_of(x), keep)), "own"

            def mean(x):
                ax = axes_of(x)
                return x if not ax else user(lambda t: torch.mean(t, dim=ax, keepdim=keep), x)
            return mean, "own"
        if op in ("sum_reduce", "max_reduce"):
            ax = attr("axis")
            red = _sum if op == "sum_reduce" else _amax
            return (lambda x: red(x, [_axis(ax, x.dim())], False)), "own"
        if op in ("softmax", "log_softmax"):
            ax = attr("axis", -1)
            fn = F.softmax if op == "softmax" else F.log_softmax
            return (lambda x: user(lambda t: fn(t, dim=_axis(ax, t.dim())), x)), "own"
        if op == "layer_norm":
            eps = f32(attr("eps", 1e-5))

            def layer_norm(x, w=None, b=None):
                d = x.shape[-1]
                if all(t is None or tuple(t.shape) == (d,) for t in (w, b)):
                    return user(lambda t, w, b: F.layer_norm(t, (d,), w, b, eps), x, w, b)
                y = user(lambda t: F.layer_norm(t, (d,), None, None, eps), x)
                if w is not None:  # weights of another broadcastable shape
                    y = user(torch.mul, y, w)
                return y if b is None else user(torch.add, y, b)
            return layer_norm, "own"
        if op == "rms_norm":
            eps = f32(attr("eps", 1e-5))

            def rms_norm(x, w=None):
                d = x.shape[-1]
                if w is None or tuple(w.shape) == (d,):
                    return user(lambda t, w: F.rms_norm(t, (d,), w, eps), x, w)
                return user(torch.mul, user(lambda t: F.rms_norm(t, (d,), None, eps), x), w)
            return rms_norm, "own"
        if op == "matmul":
            def matmul(a, b):
                if self.counter is not None:
                    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                    m = a.shape[-2] if a.dim() > 1 else 1
                    n = b.shape[-1] if b.dim() > 1 else 1
                    self._flops(2 * math.prod(batch) * m * n * a.shape[-1])
                return user(torch.matmul, a, b)
            return matmul, "own"
        if op == "embedding":
            return (lambda table, ids: user(lambda t: F.embedding(ids, t), table)), "own"
        if op == "gather":
            return (lambda idx, data: take(data, idx, self.check)), "own"
        if op == "scatter":
            return (lambda d, i, s: scatter_last_wins(d, i, s, self.check)), "own"
        if op == "causal_mask":
            n = size_of(attr("n"), dims)
            dt = DTYPES[attr("dtype", "f32")]
            return (lambda: causal_mask(n, n, dt, dev)), "own"
        if op == "attention":
            return self._attention(node), "own"
        if op == "rope":
            return self._rope(node), "own"
        # view ops
        if op == "permute":
            axes = attr("axes")
            return (lambda x: x.permute(*[_axis(a, x.dim()) for a in axes])), "view"
        if op == "transpose":
            axes = attr("axes", [-2, -1])
            return (lambda x: x.transpose(_axis(axes[0], x.dim()),
                                          _axis(axes[1], x.dim()))), "view"
        if op == "reshape":
            shape = [size_of(s, dims) for s in attr("shape")]
            return (lambda x: x.reshape(shape)), "reshape"
        if op == "expand":
            ax, size = int(attr("axis")), size_of(attr("size"), dims)

            def expand(x):
                a = ax + x.dim() + 1 if ax < 0 else ax
                y = x.unsqueeze(a)
                shape = list(y.shape)
                shape[a] = size
                return y.expand(shape)
            return expand, "view"
        if op == "broadcast_to":
            shape = [size_of(s, dims) for s in attr("shape")]
            return (lambda x: torch.broadcast_to(x, shape)), "view"
        if op == "slice":
            start_e = parse_expr(attr("start", 0))
            start = int(eval_expr(start_e, dims))
            end = size_of(attr("end"), dims)
            ax = attr("axis")

            def slice_(x):
                return x.narrow(_axis(ax, x.dim()), start, end - start)
            # from 0 a view of the same buffer; from elsewhere our builder gathers (a copy)
            if start == 0 and not has_var(start_e):
                return slice_, "view"
            return (lambda x: slice_(x).contiguous()), "own"
        if op == "pad":
            ax = attr("axis")
            before = size_of(attr("before", 0), dims)
            after = size_of(attr("after", 0), dims)
            v = f32(attr("value", 0.0))

            def pad(x):
                a = _axis(ax, x.dim())
                p = [0, 0] * (x.dim() - 1 - a) + [before, after]
                fill = cast(torch.tensor(v, dtype=torch.float32), x.dtype)  # as the builder
                if x.dtype.is_floating_point:
                    return user(lambda t: F.pad(t, p, value=float(fill.float())), x)
                return F.pad(x, p, value=int(fill))
            return pad, "own"
        if op == "concat":
            ax = attr("axis")
            return (lambda a, b: torch.cat([a, b], dim=_axis(ax, a.dim()))), "own"
        raise GraphError(f"{g.source}: node {node['name']!r}: unknown op {op!r}")

    def _attention(self, node):
        causal = bool(node.get("causal", False))
        scale_attr = node.get("scale")

        def scale_for(q):  # the reader's f32: the given scale, or 1/sqrt(d)
            return f32(scale_attr if scale_attr is not None else 1.0 / math.sqrt(q.shape[-1]))

        def count(q, k, v):
            if self.counter is None:
                return
            batch = math.prod(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]))
            s, t, d, e = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
            # the (query, key) pairs computed: all, or j <= i + t - s under the mask
            pairs = s * t if not causal else sum(max(0, min(t, i + t - s + 1)) for i in range(s))
            self._flops(batch * pairs * 2 * (d + e))

        def explicit(q, k, v):
            count(q, k, v)
            sc = scale_for(q)

            def f(q, k, v):
                scores = (q @ k.transpose(-1, -2)) * sc
                if causal:
                    scores = scores + causal_mask(q.shape[-2], k.shape[-2], scores.dtype,
                                                  scores.device)
                return F.softmax(scores, dim=-1) @ v
            return user(f, q, k, v)

        def sdpa(q, k, v):
            count(q, k, v)
            sc = scale_for(q)
            batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
            s, t = q.shape[-2], k.shape[-2]

            def f(q, k, v):
                # SDPA's fused backends (flash, memory-efficient) take (batch, heads, seq,
                # dim) tensors only: with 3-D ones it falls back to the math backend, an
                # order of magnitude slower. The leading dims become (batch, heads) as views.
                q, k, v = (to_bhsd(x.expand(*batch, *x.shape[-2:])) for x in (q, k, v))
                if causal and s != t:  # bottom-right aligned, unlike is_causal
                    keep = causal_mask(s, t, torch.float32, q.device) == 0
                    kw = dict(attn_mask=keep, scale=sc)
                else:
                    kw = dict(is_causal=causal, scale=sc)
                if self.sdpa_backends is not None and len(self.sdpa_backends) < self._n_attn:
                    # once per attention node: which backend these tensors select
                    self.sdpa_backends.append(sdpa_backend(q, k, v, **kw))
                o = F.scaled_dot_product_attention(q, k, v, **kw)
                return o.reshape(*batch, *o.shape[-2:])
            return user(f, q, k, v)

        return sdpa if self.attention == "sdpa" else explicit

    def _rope(self, node):
        base = f32(node.get("base", 10000.0))
        offset = size_of(node.get("offset", 0), self.dims)

        def rope(x):
            s, d = x.shape[-2], x.shape[-1]
            half = d // 2
            inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, device=x.device,
                                                    dtype=torch.int64).float() / d))
            pos = torch.arange(s, device=x.device, dtype=torch.float32) + offset
            emb = torch.outer(pos, inv_freq)
            emb = torch.cat([emb, emb], dim=-1)
            cos, sin = cast(emb.cos(), x.dtype), cast(emb.sin(), x.dtype)

            def f(x, cos, sin):
                rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
                return x * cos + rot * sin
            return user(f, x, cos, sin)
        return rope


# ---------------------------------------------------------------------------------------
# correctness

# Tolerances by the narrowest float dtype a graph computes in: (relative RMS error, relative
# max error), both relative to the anchor's RMS. README.md ("Tolerance") says why.
TOLERANCE = {
    "f32": (1e-5, 1e-4),
    "f16": (4e-3, 2e-2),
    "bf16": (3e-2, 1.5e-1),
    "f8e5m2": (1.0, 5.0),
    "f8e4m3": (0.5, 2.5),
    "f64": (1e-12, 1e-11),
}
_PRECISION = ["f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2"]  # widest first


def narrowest(dtypes):
    """The narrowest of these float dtype names, or None when there is none."""
    found = [d for d in _PRECISION if d in dtypes]
    return found[-1] if found else None


def tolerance_for(dtypes):
    """(rms, max) tolerance of a graph computing in these float dtype names; (0, 0) (exact)
    for integer and bool graphs."""
    n = narrowest(dtypes)
    return TOLERANCE[n] if n else (0.0, 0.0)


def compare(ours, ref, tol, truth=None):
    """Compares tensor `ours` with the anchor `ref` (any dtypes and devices; in f64, on
    ref's device).
    tol is (rms, max). Positions where both are equal (infinities and NaNs included) are
    exact; over the others d = |ours - ref|. rel_rms = RMS(d) / RMS(ref) and rel_max =
    max(d) / RMS(ref), with RMS(ref) over ref's finite elements. ok when the shapes agree,
    non-finite values sit at the same positions and both relative errors are within tol.
    With a truth (the same output computed in f64) it also gives each side's error against
    it (anchor_rel_rms, anchor_rel_max for ref; truth_rel_rms, truth_rel_max for ours), the
    evidence of whether a failure is the program's or the data's: on well-conditioned data
    the anchor's own error is well below tol. The truth never changes the bound; data
    whose anchor is not within tol of the truth is fixed in the graph's "init"
    (examples/graphs/README.md), never by a wider tolerance. Returns a dict of plain
    numbers (and a reason when not ok)."""
    if truth is not None:
        r = compare(ours, ref, tol)
        c = compare(ref, truth, (math.inf, math.inf))
        o = compare(ours, truth, (math.inf, math.inf))
        r.update(anchor_rel_rms=c["rel_rms"], anchor_rel_max=c["rel_max"],
                 truth_rel_rms=o["rel_rms"], truth_rel_max=o["rel_max"])
        return r
    tol_rms, tol_max = tol
    dev = ref.device  # on the anchor's device (a GPU's f64 is fast), in f64
    a = ours.detach().to(dev).to(torch.float64)
    b = ref.detach().to(torch.float64)
    res = {"tol_rms": tol_rms, "tol_max": tol_max}
    if tuple(a.shape) != tuple(b.shape):
        res.update(ok=False, max_err=math.inf, rel_max=math.inf, rel_rms=math.inf, rms=0.0,
                   nonfinite_mismatch=0, why=f"shape {tuple(a.shape)} vs {tuple(b.shape)}")
        return res
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    both_finite = torch.isfinite(a) & torch.isfinite(b)
    bad_nonfinite = int((~same & ~both_finite).sum())
    d = torch.where(same | ~both_finite, torch.zeros_like(a), (a - b).abs())
    fin = torch.isfinite(b)
    rms = float(b[fin].pow(2).mean().sqrt()) if bool(fin.any()) else 0.0
    max_err = float(d.max()) if d.numel() else 0.0
    rms_err = float(d.pow(2).mean().sqrt()) if d.numel() else 0.0
    if rms > 0:
        rel_max, rel_rms = max_err / rms, rms_err / rms
    else:
        rel_max = rel_rms = 0.0 if max_err == 0 else math.inf
    ok = bad_nonfinite == 0 and rel_rms <= tol_rms and rel_max <= tol_max
    if ok:
        why = ""
    elif bad_nonfinite:
        why = f"{bad_nonfinite} elements finite in one and not the other (or different infinities)"
    else:
        why = (f"relative RMS error {rel_rms:.3g} (tolerance {tol_rms:g}), relative max error "
               f"{rel_max:.3g} (tolerance {tol_max:g}); RMS of the anchor {rms:.3g}")
    res.update(ok=ok, max_err=max_err, rel_max=rel_max, rel_rms=rel_rms, rms=rms,
               nonfinite_mismatch=bad_nonfinite, why=why)
    return res


def load_npy_as(path, dtype, device="cpu"):
    """A .npy file of our inputs contract (f32 for every float dtype, '<i4', '<i8', '|b1')
    as a tensor of the graph's torch dtype (the narrow values are exact in f32)."""
    import numpy as np
    arr = np.load(path)
    t = torch.from_numpy(np.ascontiguousarray(arr))
    if dtype.is_floating_point:
        if t.dtype != torch.float32:
            raise GraphError(f"{path}: a {NAMES[dtype]} tensor is stored as {arr.dtype}, "
                             f"expected float32")
        t2 = cast(t, dtype)
        if not torch.equal(cast(t2, torch.float32), t) and not bool(torch.isnan(t).any()):
            raise GraphError(f"{path}: values are not exactly representable in "
                             f"{NAMES[dtype]}")
        t = t2
    elif t.dtype != dtype:
        raise GraphError(f"{path}: stored as {arr.dtype}, the graph wants {NAMES[dtype]}")
    return t.to(device)


def main(argv=None):
    """torch_graph.py GRAPH DIR: runs GRAPH on DIR/inputs/*.npy (a ref_dump folder) and
    compares with DIR/outputs/*.npy."""
    import argparse
    import os

    import numpy as np
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("graph")
    ap.add_argument("dir")
    ap.add_argument("--attention", default="explicit", choices=["explicit", "sdpa"])
    args = ap.parse_args(argv)
    g = TorchGraph.load(args.graph)
    with open(os.path.join(args.dir, "manifest.json")) as f:
        man = json.load(f)
    dims = g.dim_values(man["dims"])
    specs = g.input_specs(dims)
    ins = [load_npy_as(os.path.join(args.dir, "inputs", n + ".npy"), dt) for n, dt, _ in specs]
    outs = g.prepare(dims, attention=args.attention)(*ins)
    tol = tolerance_for(g.float_dtypes())
    rc = 0
    for o, name, spec in zip(outs, g.output_names, man["outputs"]):
        ref = torch.from_numpy(np.load(os.path.join(args.dir, spec["file"])))
        r = compare(o, ref, tol)
        print(f"{name}: {'ok' if r['ok'] else 'FAIL'} rms {r['rel_rms']:.3g} max "
              f"{r['rel_max']:.3g} (tolerance {tol}) {r['why']}")
        rc |= not r["ok"]
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
