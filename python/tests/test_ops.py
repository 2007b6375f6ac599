"""Every supported op against torch: a one-op (or few-op) module per case, exported,
compiled with the cost model, run on the CPU executor and compared with torch eager; the
cases with a Dim run at a second size through the same program (dynamic dims)."""
import math

import pytest
import torch
import torch.nn.functional as F

import luminal_c
from util import assert_close

Dim = torch.export.Dim


class Fn(torch.nn.Module):
    def __init__(self, fn, params=None):
        super().__init__()
        self.fn = fn
        for k, v in (params or {}).items():
            self.register_parameter(k, torch.nn.Parameter(v, requires_grad=False))

    def forward(self, *args):
        return self.fn(self, *args)


def r(*shape, lo=-1.0, hi=1.0):
    return torch.empty(*shape).uniform_(lo, hi)


def pos(*shape):
    return torch.empty(*shape).uniform_(0.5, 2.0)


# (id, fn(self, *args), args, dynamic_shapes or None, second args or None, params)
B = Dim("B", min=1, max=16)
CASES = [
    ("add", lambda s, a, b: a + b, (r(4, 8), r(8)), None, None),
    ("add_alpha_scalar", lambda s, a: torch.add(a, 2.5, alpha=2) + 1, (r(4, 8),), None, None),
    ("sub", lambda s, a, b: a - b, (r(4, 8), r(4, 1)), None, None),
    ("rsub", lambda s, a: 1.0 - a, (r(4, 8),), None, None),
    ("mul", lambda s, a, b: a * b, (r(3, 4, 8), r(4, 8)), None, None),
    ("div", lambda s, a, b: a / b, (r(4, 8), pos(4, 8)), None, None),
    ("remainder_fmod", lambda s, a, b: torch.remainder(a, b) + torch.fmod(a, b) * 3 + a % 2.0,
     (r(4, 8, lo=-9, hi=9), torch.tensor([2.0, -3.0, 1.5, -0.75, 4.0, -2.5, 3.0, -1.25])), None, None),
    ("maximum_minimum", lambda s, a, b: torch.maximum(a, b) + torch.minimum(a, b) * 2, (r(4, 8), r(4, 8)), None, None),
    ("neg_abs", lambda s, a: -a + a.abs(), (r(4, 8),), None, None),
    ("exp_log", lambda s, a, b: torch.exp(a) + torch.log(b), (r(4, 8), pos(4, 8)), None, None),
    ("sqrt_rsqrt_recip", lambda s, a: torch.sqrt(a) + torch.rsqrt(a) + torch.reciprocal(a), (pos(4, 8),), None, None),
    ("sin_cos", lambda s, a: torch.sin(a) * torch.cos(a), (r(4, 8, lo=-3, hi=3),), None, None),
    ("sigmoid_tanh", lambda s, a: torch.sigmoid(a) + torch.tanh(a), (r(4, 8, lo=-3, hi=3),), None, None),
    ("relu_silu", lambda s, a: F.relu(a) + F.silu(a), (r(4, 8, lo=-3, hi=3),), None, None),
    ("gelu", lambda s, a: F.gelu(a), (r(4, 8, lo=-3, hi=3),), None, None),
    ("gelu_tanh", lambda s, a: F.gelu(a, approximate="tanh"), (r(4, 8, lo=-3, hi=3),), None, None),
    ("pow_square", lambda s, a: a ** 2 + a.pow(3) + torch.square(a) + a ** 0.5, (pos(4, 8),), None, None),
    ("scalar_pow", lambda s, a: 10000.0 ** a, (r(8),), None, None),
    ("clamp", lambda s, a: torch.clamp(a, -0.5, 0.25) + a.clamp(min=0.1), (r(4, 8),), None, None),
    ("compare_where", lambda s, a, b: torch.where(a > b, a, b) + torch.where(a <= 0, 1.0, 0.0), (r(4, 8), r(4, 8)), None, None),
    ("compare_all", lambda s, a, b: ((a < b).float() + (a >= b).float() * 2 + (a == a).float()
                                     + (a != b).float()), (r(4, 8), r(4, 8)), None, None),
    ("masked_fill", lambda s, a, m: a.masked_fill(m, -5.0), (r(4, 8), r(4, 8) > 0), None, None),
    ("masked_fill_inf_softmax", lambda s, a, m: torch.softmax(a.masked_fill(m, float("-inf")), -1),
     (r(4, 8), torch.arange(8).expand(4, 8) > 5), None, None),
    ("logical", lambda s, a, b: ((a > 0) & (b > 0)).float() + ((a > 0) | (b > 0)).float() + (~(a > 0)).float(),
     (r(4, 8), r(4, 8)), None, None),
    ("softmax", lambda s, a: torch.softmax(a * 3, dim=-1), (r(4, 16),), ({0: B},), (r(9, 16),)),
    ("softmax_axis0", lambda s, a: F.softmax(a, dim=0), (r(6, 5),), None, None),
    ("log_softmax", lambda s, a: F.log_softmax(a, dim=-1), (r(4, 16),), ({0: B},), (r(3, 16),)),
    ("sum_mean", lambda s, a: a.sum(-1) + a.mean(dim=(0,)).sum() + a.sum(), (r(4, 8),), None, None),
    ("sum_keepdim", lambda s, a: a.sum(dim=1, keepdim=True) * a, (r(4, 8),), ({0: B},), (r(11, 8),)),
    ("amax_max", lambda s, a: a.amax(-1) + a.max(dim=-1).values + a.max(), (r(4, 8),), None, None),
    ("var_std", lambda s, a: a.var(-1) + a.std(-1, keepdim=True).squeeze(-1), (r(4, 8),), None, None),
    ("linear", lambda s, x: F.linear(x, s.w, s.b), (r(5, 16),), ({0: B},), (r(2, 16),),
     {"w": r(8, 16) / 4, "b": r(8) / 10}),
    ("linear_nobias_3d", lambda s, x: F.linear(x, s.w), (r(2, 5, 16),), None, None, {"w": r(8, 16) / 4}),
    ("matmul_bmm_mm", lambda s, a, b: torch.bmm(a, b).sum(0) + torch.mm(a[0], b[0]) + torch.matmul(a, b)[1],
     (r(2, 4, 8), r(2, 8, 3)), None, None),
    ("matmul_broadcast", lambda s, a, b: a @ b, (r(2, 3, 4, 8), r(8, 5)), None, None),
    ("addmm", lambda s, a: torch.addmm(s.b, a, s.w), (r(4, 8),), None, None, {"w": r(8, 6), "b": r(6)}),
    ("layer_norm", lambda s, x: F.layer_norm(x, (16,), s.w, s.b, eps=1e-5), (r(3, 16) * 4 + 1,), ({0: B},),
     (r(7, 16) * 4 + 1,), {"w": pos(16), "b": r(16)}),
    ("layer_norm_plain", lambda s, x: F.layer_norm(x, (16,)), (r(3, 16) * 4,), None, None),
    ("rms_norm", lambda s, x: F.rms_norm(x, (16,), s.w, eps=1e-6), (r(3, 16) * 4,), ({0: B},), (r(5, 16),),
     {"w": pos(16)}),
    ("embedding", lambda s, ids: F.embedding(ids, s.w), (torch.randint(0, 10, (3, 5)),), ({1: Dim("T", max=32)},),
     (torch.randint(0, 10, (3, 9)),), {"w": r(10, 8)}),
    ("index_select", lambda s, ids: torch.index_select(s.w, 0, ids) + torch.index_select(s.w.t(), 1, ids).t(),
     (torch.tensor([3, 0, 7, 7, 1]),), None, None, {"w": r(10, 8)}),
    ("cat", lambda s, a, b: torch.cat([a, b, a], dim=-1), (r(4, 3), r(4, 5)), ({0: B}, {0: B}), (r(2, 3), r(2, 5))),
    ("stack", lambda s, a, b: torch.stack([a, b, a], dim=1) + torch.stack([b, a, b]).transpose(0, 1),
     (r(4, 3), r(4, 3)), None, None),
    ("slice_select", lambda s, a: a[1:, 2:6] + a[:-1, -4:] + a[2, :4], (r(5, 8),), None, None),
    ("slice_dynamic", lambda s, a: a[:, 1:] * 2, (r(5, 8),), ({0: B},), (r(12, 8),)),
    ("split_chunk", lambda s, a: a.split(3, dim=-1)[1] + a.chunk(2, dim=-1)[0][..., :3], (r(4, 6),), None, None),
    ("view_reshape_flatten", lambda s, a: a.view(4, 2, 4).reshape(8, 4).flatten() , (r(4, 8),), None, None),
    ("reshape_dynamic", lambda s, a: a.reshape(a.shape[0], 2, 4).sum(1), (r(3, 8),), ({0: B},), (r(6, 8),)),
    ("permute_transpose", lambda s, a: a.permute(2, 0, 1).transpose(0, 1).contiguous() + 0, (r(2, 3, 4),), None, None),
    ("t", lambda s, a: a.t() * 1, (r(3, 5),), None, None),
    ("expand_unsqueeze_squeeze", lambda s, a: a.unsqueeze(0).expand(3, 4, 8).sum(0) + a[:, None, :].squeeze(1),
     (r(4, 8),), None, None),
    ("repeat_interleave", lambda s, a: a.repeat_interleave(2, dim=1), (r(2, 3, 4),), None, None),
    ("casts", lambda s, a: a.to(torch.bfloat16).float() + a.half().float() + a.int().float() + (a > 0).float(),
     (r(4, 8) * 5,), None, None),
    ("type_as_long", lambda s, a, i: a + i.type_as(a) + i.long().float(), (r(4, 8), torch.randint(-3, 3, (4, 8), dtype=torch.int32)), None, None),
    ("arange", lambda s, a: a + torch.arange(a.shape[-1], dtype=torch.float32) + torch.arange(1, 2 * a.shape[-1] + 1, 2).float(),
     (r(4, 8),), ({1: Dim("N", min=2, max=64)},), (r(4, 13),)),
    ("full_zeros_ones", lambda s, a: a + torch.full((4, 8), 0.25) + torch.zeros(8) + torch.ones_like(a) * 2 + torch.zeros_like(a),
     (r(4, 8),), None, None),
    ("triu_tril", lambda s, a: torch.triu(a, 1) + torch.tril(a, -1) * 2 + torch.triu(a), (r(6, 6),), None, None),
    ("causal_mask_full_triu", lambda s, a: torch.softmax(a + torch.triu(torch.full((a.shape[-1], a.shape[-1]), float("-inf")), 1), -1),
     (r(5, 5),), None, None),
    ("sdpa_causal", lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     (r(2, 4, 6, 8), r(2, 4, 6, 8), r(2, 4, 6, 8)), None, None),
    ("sdpa_plain_scale", lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.2),
     (r(2, 4, 6, 8), r(2, 4, 5, 8), r(2, 4, 5, 8)), None, None),
    ("sdpa_bool_mask", lambda s, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
     (r(2, 2, 4, 8), r(2, 2, 6, 8), r(2, 2, 6, 8), torch.arange(6).expand(2, 1, 4, 6) < 4), None, None),
    ("sdpa_causal_decode", lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     (r(1, 2, 3, 8), r(1, 2, 7, 8), r(1, 2, 7, 8)), None, None),
    ("sdpa_gqa", lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
     (r(1, 4, 6, 8), r(1, 2, 6, 8), r(1, 2, 6, 8)), None, None),
    ("sdpa_dynamic", lambda s, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     (r(1, 2, 6, 8), r(1, 2, 6, 8), r(1, 2, 6, 8)),
     ({2: Dim("S", min=2, max=32)}, {2: Dim("S", min=2, max=32)}, {2: Dim("S", min=2, max=32)}),
     (r(1, 2, 11, 8), r(1, 2, 11, 8), r(1, 2, 11, 8))),
]


def _dims_shared(ds):
    """torch wants one Dim object per name: the sdpa_dynamic case shares 'S'."""
    if ds is None:
        return None
    seen = {}
    out = []
    for spec in ds:
        d = {}
        for ax, dim in spec.items():
            d[ax] = seen.setdefault(dim.__name__, dim)
        out.append(d)
    return tuple(out)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op(case):
    name, fn, args, ds, args2 = case[:5]
    params = case[5] if len(case) > 5 else None
    torch.manual_seed(0)
    model = Fn(fn, params).eval()
    with torch.no_grad():
        want = model(*args)
    ds = _dims_shared(ds)
    # forward(*args): torch.export wants the specs as one tuple for the varargs
    ex = luminal_c.export(model, args, dynamic_shapes=(ds,) if ds else None, name=name)
    run = luminal_c.compile(ex, limit=4, evaluator="cost_model", quiet=True)
    assert_close(run(*args), want, name)
    if ds is not None:
        assert ex.dims, "%s: the Dim did not become a graph dim" % name
        with torch.no_grad():
            want2 = model(*args2)
        assert_close(run(*args2), want2, name + " (second size)")


def test_supported_ops_table_covers_the_issue():
    """The issue's list of ops, each in the table."""
    need = ["linear", "matmul", "bmm", "add", "mul", "exp", "gelu", "silu", "softmax",
            "log_softmax", "sum", "mean", "amax", "rms_norm", "layer_norm", "embedding",
            "index_select", "cat", "slice", "view", "reshape", "permute", "transpose",
            "expand", "unsqueeze", "where", "masked_fill", "scaled_dot_product_attention",
            "_to_copy", "arange", "full", "triu"]
    missing = [n for n in need if n not in luminal_c.SUPPORTED_OPS]
    assert not missing, missing


def test_dims_keep_torch_ranges():
    m = Fn(lambda s, a: a * 2).eval()
    ex = luminal_c.export(m, (r(5, 4),), dynamic_shapes=(({0: Dim("rows", min=3, max=40)},),))
    assert ex.dims == [{"name": "rows", "min": 3, "max": 40, "profile": 5}]
    assert ex.graph["inputs"][-1]["shape"] == ["rows", 4]
