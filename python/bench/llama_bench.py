#!/usr/bin/env python3
"""A Llama-3.2-1B-shaped decoder through luminal_c against torch (eager and
torch.compile mode="reduce-overhead"), on one GPU, in one run (issue 24, point 4).

    python3 python/bench/llama_bench.py [--layers 16] [--prompt 512] [--decode 128] [--limit 20]

The model: 16 layers, d 2048, 32 query and 8 KV heads of 64, SwiGLU 8192, vocab 128256,
bf16, random weights scaled by fan-in (python/tests/models.py's init). Two functions:
prefill (ids[1, T] -> logits of the last token, and the layers' K and V) and decode (one
token with the past K and V as inputs, past length a dynamic dim: the cache is passed in,
not updated in place, since the graph format has no in-place update). Measured: compile
time (luminal_c.compile, search included, cache off), time to first token (prefill at
T = --prompt), decode tokens per second over --decode steps, each against eager and
reduce-overhead on the same card, and the outputs checked against eager (bf16 tolerance).
Prints one JSON object. NOT run by the session that wrote it (no GPU there).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import luminal_c  # noqa: E402
from models import init_fan_in  # noqa: E402


def rope_at(x, start, base=500000.0):
    t, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d))
    pos = torch.arange(t, dtype=torch.float32, device=x.device) + start
    ang = pos[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)
    rot = torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos + rot * sin


class Layer(nn.Module):
    def __init__(s, d, h, kv, f):
        super().__init__()
        s.h, s.kv, s.hd = h, kv, d // h
        s.n1, s.n2 = nn.RMSNorm(d, eps=1e-5), nn.RMSNorm(d, eps=1e-5)
        s.q = nn.Linear(d, h * s.hd, bias=False)
        s.k = nn.Linear(d, kv * s.hd, bias=False)
        s.v = nn.Linear(d, kv * s.hd, bias=False)
        s.o = nn.Linear(h * s.hd, d, bias=False)
        s.g = nn.Linear(d, f, bias=False)
        s.u = nn.Linear(d, f, bias=False)
        s.dn = nn.Linear(f, d, bias=False)

    def forward(s, x, pk=None, pv=None):
        b, t, _ = x.shape
        y = s.n1(x)
        start = 0 if pk is None else pk.shape[2]
        q = rope_at(s.q(y).view(b, t, s.h, s.hd).transpose(1, 2), start)
        k = rope_at(s.k(y).view(b, t, s.kv, s.hd).transpose(1, 2), start)
        v = s.v(y).view(b, t, s.kv, s.hd).transpose(1, 2)
        if pk is not None:
            k, v = torch.cat([pk, k], 2), torch.cat([pv, v], 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=pk is None, enable_gqa=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, -1))
        return x + s.dn(F.silu(s.g(s.n2(x))) * s.u(s.n2(x))), k, v


class Decoder(nn.Module):
    def __init__(s, layers=16, d=2048, h=32, kv=8, f=8192, vocab=128256):
        super().__init__()
        s.emb = nn.Embedding(vocab, d)
        s.layers = nn.ModuleList(Layer(d, h, kv, f) for _ in range(layers))
        s.norm = nn.RMSNorm(d, eps=1e-5)
        s.head = nn.Linear(d, vocab, bias=False)


class Prefill(nn.Module):
    def __init__(s, m):
        super().__init__()
        s.m = m

    def forward(s, ids):
        x = s.m.emb(ids)
        ks, vs = [], []
        for layer in s.m.layers:
            x, k, v = layer(x)
            ks.append(k)
            vs.append(v)
        return s.m.head(s.m.norm(x[:, -1:])), torch.stack(ks), torch.stack(vs)


class Decode(nn.Module):
    def __init__(s, m):
        super().__init__()
        s.m = m

    def forward(s, ids, pk, pv):
        x = s.m.emb(ids)
        ks, vs = [], []
        for i, layer in enumerate(s.m.layers):
            x, k, v = layer(x, pk[i], pv[i])
            ks.append(k[:, :, -1:])
            vs.append(v[:, :, -1:])
        return s.m.head(s.m.norm(x)), torch.stack(ks), torch.stack(vs)


def timed(fn, reps):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        out = fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--limit", type=int, default=20)
    a = ap.parse_args()
    assert torch.cuda.is_available(), "llama_bench needs a GPU"
    torch.manual_seed(0)
    m = init_fan_in(Decoder(layers=a.layers)).to(torch.bfloat16).cuda()
    pre, dec = Prefill(m).eval(), Decode(m).eval()
    ids = torch.randint(0, 128256, (1, a.prompt), device="cuda")
    res = {"device": torch.cuda.get_device_name(), "layers": a.layers, "prompt": a.prompt,
           "decode_tokens": a.decode}
    P = torch.export.Dim("past", min=1, max=a.prompt + a.decode)
    with torch.no_grad():
        want_logits, k0, v0 = pre(ids)
        t = time.perf_counter()
        lpre = luminal_c.compile(pre, (ids,), limit=a.limit, cache=False)
        tok = ids[:, -1:]
        ldec = luminal_c.compile(dec, (tok, k0, v0), limit=a.limit, cache=False,
                                 dynamic_shapes=(None, {3: P}, {3: P}))
        res["luminal_compile_s"] = time.perf_counter() - t
        res["luminal_backend"] = lpre.backend_note
        got = lpre(ids)
        err = (got[0].float() - want_logits.float()).abs().max().item()
        res["prefill_max_err_rel"] = err / want_logits.float().abs().max().item()
        ro_pre = torch.compile(pre, mode="reduce-overhead")
        ro_dec = torch.compile(dec, mode="reduce-overhead", dynamic=True)
        t = time.perf_counter()
        ro_pre(ids), ro_pre(ids)
        res["reduce_overhead_compile_s"] = time.perf_counter() - t
        for name, f in (("eager", pre), ("reduce_overhead", ro_pre), ("luminal", lpre)):
            res["ttft_ms_" + name] = 1e3 * timed(lambda: f(ids), 10)[0]

        def decode_loop(f):
            pk, pv = k0, v0
            nxt = tok
            for _ in range(a.decode):
                logits, k, v = f(nxt, pk, pv)
                pk, pv = torch.cat([pk, k], 3), torch.cat([pv, v], 3)
                nxt = logits[:, -1:].argmax(-1)
            return nxt
        for name, f in (("eager", dec), ("reduce_overhead", ro_dec), ("luminal", ldec)):
            s, _ = timed(lambda: decode_loop(f), 1)
            res["decode_tok_s_" + name] = a.decode / s
    res["decode_vs_reduce_overhead"] = res["decode_tok_s_luminal"] / res["decode_tok_s_reduce_overhead"]
    res["prefill_vs_reduce_overhead"] = res["ttft_ms_reduce_overhead"] / res["ttft_ms_luminal"]
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
