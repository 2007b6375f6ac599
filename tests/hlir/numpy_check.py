#!/usr/bin/env python3
"""Checks the hlir reference runtime against numpy on random inputs.

Runs hlir_numpy_driver (argv[1]) into a fresh folder (argv[2]), then recomputes every
case's outputs from its inputs with numpy and compares. Exits 0 when all agree, 1 on a
mismatch, 77 (ctest's skip code) when numpy cannot be imported, saying why.
"""
import json
import math
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - CI has numpy
    print(f"SKIPPED: numpy cannot be imported ({e}); install it with pip install numpy")
    sys.exit(77)

f32 = np.float32


def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


def softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    c = x - x.max(axis=axis, keepdims=True)
    return c - np.log(np.exp(c).sum(axis=axis, keepdims=True))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def rope(x, offset, base):
    d = x.shape[-1]
    half = d // 2
    inv = base ** (-2.0 * np.arange(half) / d)
    pos = np.arange(x.shape[-2]) + offset
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def attention(q, k, v, causal):
    d = q.shape[-1]
    sc = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)
    if causal:
        s, t = sc.shape[-2], sc.shape[-1]
        mask = np.arange(t)[None, :] > np.arange(s)[:, None] + (t - s)
        sc = np.where(mask, -np.inf, sc)
    return softmax(sc, -1) @ v


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def halves(x):
    """What the driver does before eq/ne/le/ge: round 2x toward zero, halve (in f32)."""
    return np.trunc(x.astype(f32) * f32(2)).astype(f32) * f32(0.5)


def f16_round(x):
    return x.astype(f32).astype(np.float16).astype(np.float64)


def bf16_round(x):
    """f32 -> bf16 -> f64 with round to nearest even, emulated on the f32 bits."""
    u = np.asarray(x, dtype=f32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(f32).astype(np.float64)


def chain(ins, rnd):
    """recip(a*b + c) and 3*(a*b), each node computed in f32 and rounded to storage."""
    a, b, c = (v.astype(f32) for v in ins)
    ab = rnd((a * b).astype(f32)).astype(f32)
    y = rnd((f32(1) / rnd((ab + c).astype(f32)).astype(f32)).astype(f32))
    s = rnd(((ab + ab).astype(f32) + ab).astype(f32))
    return [y, s]


# ---- low-precision reductions, node by node, as docs/hlir.md ("Precision") states ----

LOG2E = 1.4426950408889634


def f32_sum(x, axis, keepdims=False):
    """SumReduce: f32 accumulation in index order (not numpy's pairwise sum)."""
    x = np.moveaxis(np.asarray(x, dtype=f32), axis, -1)
    acc = np.zeros(x.shape[:-1], dtype=f32)
    for k in range(x.shape[-1]):
        acc = (acc + x[..., k]).astype(f32)
    return np.expand_dims(acc, axis) if keepdims else acc


def f32_dot(a, b):
    """A Mul read only by a SumReduce (a matmul): exact products (f32 holds the product
    of two bf16 or f16 values exactly), accumulated in f32 in k order."""
    a, b = np.asarray(a, dtype=f32), np.asarray(b, dtype=f32)
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=f32)
    for k in range(a.shape[1]):
        acc = (acc + a[:, k : k + 1] * b[k : k + 1, :]).astype(f32)
    return acc


def low(name):
    """The rounding to the storage format of a case named ..._bf16 or ..._f16, as f32."""
    rnd = bf16_round if name.endswith("bf16") else f16_round
    return lambda x: rnd(np.asarray(x, dtype=f32)).astype(f32)


def low_mean(x, axis, r, keepdims=False):
    """mean = sum (rounded) times the rounded constant 1/count (rounded)."""
    inv = r(f32(1.0 / x.shape[axis]))
    return r(r(f32_sum(x, axis, keepdims)) * inv)


def low_norms(x, r):
    """softmax, rms_norm and layer_norm over the last axis, every primitive rounded."""
    m = x.max(-1, keepdims=True)
    c = r(x + r(m * f32(-1)))
    e = r(np.exp2(r(c * r(f32(LOG2E))).astype(np.float64)).astype(f32))
    softmax = r(e * r(f32(1) / r(f32_sum(e, -1, keepdims=True))))
    eps = r(f32(1e-5))

    def mean_sq(v):  # mean(v * v): the Mul is read only by the sum, so exact products
        inv = r(f32(1.0 / v.shape[-1]))
        return r(r(f32_sum(v * v, -1, keepdims=True)) * inv)

    rms = r(x * r(f32(1) / r(np.sqrt(r(mean_sq(x) + eps)))))
    cen = r(x + r(low_mean(x, -1, r, keepdims=True) * f32(-1)))
    ln = r(cen * r(f32(1) / r(np.sqrt(r(mean_sq(cen) + eps)))))
    return [softmax, rms, ln]


def expected_low(name, ins):
    """The low-precision cases (names ending _bf16 or _f16, but not the chains), or None."""
    if not name.endswith(("_bf16", "_f16")) or name.startswith(("chain_", "cast_")):
        return None
    r = low(name)
    ins = [np.asarray(v, dtype=f32) for v in ins]
    if name.startswith("matmul_bt_"):
        return [r(f32_dot(ins[0], ins[1].T))]
    if name.startswith("matmul_"):
        return [r(f32_dot(ins[0], ins[1]))]
    if name.startswith("dot_rows_"):
        a, b = ins
        acc = np.zeros(a.shape[0], dtype=f32)
        for k in range(a.shape[1]):
            acc = (acc + a[:, k] * b[:, k]).astype(f32)
        return [r(acc)]
    if name.startswith("reduce_"):
        x = ins[0]
        return [r(f32_sum(x, 1)), r(f32_sum(x, 0)), x.max(1), low_mean(x, 1, r)]
    if name.startswith("norms_"):
        return low_norms(ins[0], r)
    return None


UNARY = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "sigmoid": sigmoid,
    "silu": lambda x: x * sigmoid(x), "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "relu": lambda x: np.maximum(x, 0), "neg": lambda x: -x, "sqrt": np.sqrt,
    "recip": lambda x: 1 / x, "exp2": np.exp2, "log2": np.log2,
}

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "lt": np.less, "gt": np.greater,
    "le": lambda a, b: np.less_equal(halves(a), halves(b)),
    "ge": lambda a, b: np.greater_equal(halves(a), halves(b)),
    "eq": lambda a, b: np.equal(halves(a), halves(b)),
    "ne": lambda a, b: np.not_equal(halves(a), halves(b)),
}


def expected(name, ins):
    """numpy's outputs for a case, and the tolerance (rtol=atol) to compare with."""
    got = expected_low(name, ins)
    if got is not None:
        return got, 0  # bit for bit
    if name.startswith("unary_"):
        return [UNARY[name[6:]](ins[0])], 2e-6
    if name.startswith("binary_"):
        return [BINARY[name[7:]](ins[0], ins[1]).astype(np.float64)], 2e-6
    if name == "where":
        a, b = ins
        return [np.where(a < 0, b, a)], 0
    if name == "reduce":
        x = ins[0]
        return [x.sum((0, 2)), x.max((0, 2), keepdims=True), x.mean(1)], 2e-6
    if name == "softmax":
        return [softmax(ins[0], 1), log_softmax(ins[0], -1)], 2e-6
    if name == "norms":
        x, w, b = ins
        return [layer_norm(x, w, b, 1e-5), rms_norm(x, w, 1e-6)], 1e-5
    if name in ("matmul_batched", "matmul_2d"):
        return [ins[0] @ ins[1]], 1e-5
    if name == "attention_causal":
        return [attention(*ins, causal=True)], 1e-5
    if name == "rope":
        return [rope(ins[0], 3, 10000.0)], 1e-5
    if name == "embedding":
        table, ids = ins
        return [table[ids.astype(np.int64)]], 0
    if name == "movement":
        x = ins[0]
        pad = np.pad(x, ((0, 0), (0, 0), (2, 1)), constant_values=0.5)
        return [x[:, 1:3, :], pad, np.concatenate([x, x[:, :, 1:3]], axis=2)], 0
    if name == "permute_reshape":
        return [np.transpose(ins[0], (2, 0, 1)).reshape(8, 3)], 0
    if name == "chain_bf16":
        return chain(ins, bf16_round), 0
    if name == "chain_f16":
        return chain(ins, f16_round), 0
    if name == "cast_f16":
        return None, 0  # checked bit-exactly from the driver's own 'src' output below
    raise KeyError(f"no numpy reference for case '{name}'")


def load(outdir, t):
    a = np.fromfile(os.path.join(outdir, t["file"]), dtype="<f8")
    return a.reshape(t["shape"])


def main():
    driver, outdir = sys.argv[1], sys.argv[2]
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    subprocess.run([driver, outdir], check=True)
    with open(os.path.join(outdir, "manifest.json")) as f:
        cases = json.load(f)["cases"]
    failures, checked = 0, 0
    for case in cases:
        name = case["name"]
        ins = [load(outdir, t) for t in case["inputs"]]
        outs = [load(outdir, t) for t in case["outputs"]]
        want, tol = expected(name, ins)
        if name == "cast_f16":
            src = outs[0]
            want = [src, f16_round(src), f16_round(src * np.float64(f32(1e-9)))]
            # the 'tiny' output multiplies in f32 first, as the runtime does
            want[2] = f16_round((src.astype(f32) * f32(1e-9)).astype(np.float64))
            tol = 0
        for i, (got, exp) in enumerate(zip(outs, want)):
            exp = np.asarray(exp, dtype=np.float64)
            checked += 1
            if got.shape != exp.shape:
                print(f"FAIL {name} output {i}: shape {got.shape}, numpy {exp.shape}")
                failures += 1
                continue
            ok = np.isclose(got, exp, rtol=tol, atol=tol, equal_nan=True) | (got == exp)
            if not ok.all():
                bad = np.argwhere(~ok)[0]
                idx = tuple(int(j) for j in bad)
                print(f"FAIL {name} output {i} at {idx}: runtime {got[idx]!r}, numpy {exp[idx]!r}")
                failures += 1
    print(f"{checked} outputs of {len(cases)} cases checked against numpy {np.__version__}, "
          f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
