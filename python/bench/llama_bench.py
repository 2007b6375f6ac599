#!/usr/bin/env python3
"""A Llama-3.2-1B-shaped decoder through luminal_c against torch (eager and
torch.compile mode="reduce-overhead"), on one GPU, in one run (issue 24, point 4).

    python3 python/bench/llama_bench.py [--layers 16] [--prompt 512] [--decode 128] [--limit 20]

The model: 16 layers, d 2048, 32 query and 8 KV heads of 64, SwiGLU 8192, vocab 128256,
bf16, random weights scaled by fan-in (python/tests/models.py's init). Two functions:
prefill (ids[1, T] -> logits of the last token, and the layers' K and V) and decode with a
static KV cache: one token, its position, and the caches k_cache, v_cache[layers, 1, 8,
MAX, 64] (MAX = prompt + decode) in; the token's logits and its K and V rows out. Inside,
the new rows are put at the position (a where over the cache) and attention reads the
whole cache with a mask of the positions up to it; the caller writes the rows into the
cache (torch indexing on the GPU), which the program reads by device pointer, so every
step has the same shapes and nothing is copied. torch runs the same functions. Measured: compile
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


def rope_pos(x, pos, base=500000.0):
    """Rotary embedding of x[B, H, T, D] at positions pos .. pos+T-1 (pos an int64
    tensor [1])."""
    t, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d))
    p = torch.arange(t, dtype=torch.float32, device=x.device) + pos.float()
    ang = p[:, None] * inv[None, :]
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

    def mlp(s, x):
        y = s.n2(x)
        return x + s.dn(F.silu(s.g(y)) * s.u(y))

    def prefill(s, x, pos):
        b, t, _ = x.shape
        y = s.n1(x)
        q = rope_pos(s.q(y).view(b, t, s.h, s.hd).transpose(1, 2), pos)
        k = rope_pos(s.k(y).view(b, t, s.kv, s.hd).transpose(1, 2), pos)
        v = s.v(y).view(b, t, s.kv, s.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return s.mlp(x + s.o(a.transpose(1, 2).reshape(b, t, -1))), k, v

    def decode(s, x, pos, kc, vc):
        """One token at position pos over the static caches kc, vc[1, kv, MAX, hd]."""
        b, t, _ = x.shape
        y = s.n1(x)
        q = rope_pos(s.q(y).view(b, t, s.h, s.hd).transpose(1, 2), pos)
        k = rope_pos(s.k(y).view(b, t, s.kv, s.hd).transpose(1, 2), pos)
        v = s.v(y).view(b, t, s.kv, s.hd).transpose(1, 2)
        idx = torch.arange(kc.shape[2], device=x.device)
        here = (idx == pos)[None, None, :, None]
        kk = torch.where(here, k, kc)
        vv = torch.where(here, v, vc)
        seen = (idx <= pos)[None, None, None, :]
        a = F.scaled_dot_product_attention(q, kk, vv, attn_mask=seen, enable_gqa=True)
        return s.mlp(x + s.o(a.transpose(1, 2).reshape(b, t, -1))), k, v


class Decoder(nn.Module):
    def __init__(s, layers=16, d=2048, h=32, kv=8, f=8192, vocab=128256):
        super().__init__()
        s.emb = nn.Embedding(vocab, d)
        s.layers = nn.ModuleList(Layer(d, h, kv, f) for _ in range(layers))
        s.norm = nn.RMSNorm(d, eps=1e-5)
        s.head = nn.Linear(d, vocab, bias=False)


class Prefill(nn.Module):
    """ids[1, T] -> (logits of the last token, K and V [layers, 1, kv, T, hd])."""

    def __init__(s, m):
        super().__init__()
        s.m = m

    def forward(s, ids):
        x = s.m.emb(ids)
        pos = torch.zeros(1, dtype=torch.int64, device=ids.device)
        ks, vs = [], []
        for layer in s.m.layers:
            x, k, v = layer.prefill(x, pos)
            ks.append(k)
            vs.append(v)
        return s.m.head(s.m.norm(x[:, -1:])), torch.stack(ks), torch.stack(vs)


class Decode(nn.Module):
    """(ids[1, 1], pos[1], k_cache, v_cache [layers, 1, kv, MAX, hd]) -> (logits, the
    token's K and V rows [layers, 1, kv, 1, hd])."""

    def __init__(s, m):
        super().__init__()
        s.m = m

    def forward(s, ids, pos, kc, vc):
        x = s.m.emb(ids)
        ks, vs = [], []
        for i, layer in enumerate(s.m.layers):
            x, k, v = layer.decode(x, pos, kc[i], vc[i])
            ks.append(k)
            vs.append(v)
        return s.m.head(s.m.norm(x)), torch.stack(ks), torch.stack(vs)


def generate(decode, logits, kc, vc, start, steps):
    """steps tokens greedily from position start; the caches updated in place (by the
    caller: torch indexing), every step the same shapes."""
    nxt = logits[:, -1:].argmax(-1)
    pos = torch.tensor([start], dtype=torch.int64, device=kc.device)
    toks = []
    for _ in range(steps):
        logits, k, v = decode(nxt, pos, kc, vc)
        kc[:, :, :, pos] = k
        vc[:, :, :, pos] = v
        nxt = logits[:, -1:].argmax(-1)
        toks.append(nxt)
        pos = pos + 1
    return torch.cat(toks, 1)


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
    MAX = a.prompt + a.decode
    with torch.no_grad():
        want_logits, k0, v0 = pre(ids)

        def caches():
            kc = torch.zeros(k0.shape[:3] + (MAX, k0.shape[4]), dtype=k0.dtype, device="cuda")
            vc = torch.zeros_like(kc)
            kc[:, :, :, :a.prompt] = k0
            vc[:, :, :, :a.prompt] = v0
            return kc, vc
        kc, vc = caches()
        tok = ids[:, -1:]
        pos = torch.tensor([a.prompt], dtype=torch.int64, device="cuda")
        t = time.perf_counter()
        lpre = luminal_c.compile(pre, (ids,), limit=a.limit, cache=False)
        ldec = luminal_c.compile(dec, (tok, pos, kc, vc), limit=a.limit, cache=False)
        res["luminal_compile_s"] = time.perf_counter() - t
        res["luminal_backend"] = lpre.backend_note
        got = lpre(ids)
        res["prefill_max_err_rel"] = ((got[0].float() - want_logits.float()).abs().max().item()
                                      / want_logits.float().abs().max().item())
        wd = dec(tok, pos, kc, vc)[0].float()
        res["decode_max_err_rel"] = ((ldec(tok, pos, kc, vc)[0].float() - wd).abs().max().item()
                                     / wd.abs().max().item())
        ro_pre = torch.compile(pre, mode="reduce-overhead")
        ro_dec = torch.compile(dec, mode="reduce-overhead")
        t = time.perf_counter()
        ro_pre(ids), ro_pre(ids)
        ro_dec(tok, pos, kc, vc), ro_dec(tok, pos, kc, vc)
        res["reduce_overhead_compile_s"] = time.perf_counter() - t
        for name, f in (("eager", pre), ("reduce_overhead", ro_pre), ("luminal", lpre)):
            res["ttft_ms_" + name] = 1e3 * timed(lambda: f(ids), 10)[0]
        toks = {}
        for name, f in (("eager", dec), ("reduce_overhead", ro_dec), ("luminal", ldec)):
            kc, vc = caches()
            s, toks[name] = timed(lambda: generate(f, want_logits, kc, vc, a.prompt, a.decode), 1)
            res["decode_tok_s_" + name] = a.decode / s
        # greedy tokens agree with eager's up to the first bf16 near-tie
        same = (toks["luminal"] == toks["eager"]).int().cumprod(1).sum().item()
        res["decode_tokens_equal_to_eager_prefix"] = same
    res["decode_vs_reduce_overhead"] = res["decode_tok_s_luminal"] / res["decode_tok_s_reduce_overhead"]
    res["prefill_vs_reduce_overhead"] = res["ttft_ms_reduce_overhead"] / res["ttft_ms_luminal"]
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
