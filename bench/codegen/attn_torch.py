#!/usr/bin/env python3
"""attn_torch.py - torch's F.scaled_dot_product_attention on attn_gpu's workloads, and the
table of ours against it (one run, one card).

    attn_torch.py --ours RESULTS [--out FILE]

RESULTS holds attn_gpu's "RESULT workload tile single_ms b2b_ms tflops" lines. For each
workload torch runs on identical shapes as 4-D (batch, heads, seq, dim) bf16 tensors, random
N(0, 1) data:
  causal_S<S>_D<D>    q, k, v (1, 32, S, D), is_causal=True
  decode_kv4096_gqa   q (1, 32, 1, 128), k, v (1, 8, 4096, 128), enable_gqa=True
in these variants: "flash" (eager, under sdpa_kernel(FLASH_ATTENTION): the backend is
confirmed by the call succeeding), "default" (eager, the backend torch picks), "compile"
(torch.compile of the call) and "graph" (torch.compile mode="reduce-overhead", CUDA
graphs). A variant that fails is reported and left out. Times by CUDA events, medians:
single = one call between two events after a synchronize (30 trials), b2b = 20 calls
back to back per trial (10 trials) divided by 20, as attn_gpu times ours. The table gives
per workload ours (best tile by b2b, and best by single) against torch's best variant in
each, and the ratios ours / torch.
"""

import argparse
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

WORKLOADS = {
    "causal_S1024_D64": dict(h=32, hkv=32, s=1024, t=1024, d=64, causal=True),
    "causal_S4096_D64": dict(h=32, hkv=32, s=4096, t=4096, d=64, causal=True),
    "causal_S1024_D128": dict(h=32, hkv=32, s=1024, t=1024, d=128, causal=True),
    "causal_S4096_D128": dict(h=32, hkv=32, s=4096, t=4096, d=128, causal=True),
    "decode_kv4096_gqa": dict(h=32, hkv=8, s=1, t=4096, d=128, causal=False),
}


def timed(fn, trials, reps):
    out = []
    for _ in range(trials):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / reps)
    return statistics.median(out)


def torch_times(w):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, w["h"], w["s"], w["d"], device="cuda", generator=g).bfloat16()
    k = torch.randn(1, w["hkv"], w["t"], w["d"], device="cuda", generator=g).bfloat16()
    v = torch.randn(1, w["hkv"], w["t"], w["d"], device="cuda", generator=g).bfloat16()
    kw = dict(is_causal=w["causal"])
    if w["hkv"] != w["h"]:
        kw["enable_gqa"] = True

    def call():
        return F.scaled_dot_product_attention(q, k, v, **kw)

    def flash():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, **kw)

    variants = {"flash": flash, "default": call}
    try:
        variants["compile"] = torch.compile(call)
        variants["graph"] = torch.compile(call, mode="reduce-overhead")
    except Exception as e:  # noqa: BLE001
        print(f"torch.compile unavailable: {e}")
    res = {}
    for name, fn in variants.items():
        try:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            res[name] = (timed(fn, 30, 1), timed(fn, 10, 20))
        except Exception as e:  # noqa: BLE001 - reported, the rest goes on
            print(f"  torch {name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ours", required=True)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ours = {}
    with open(args.ours) as f:
        for line in f:
            p = line.split()
            if len(p) == 6 and p[0] == "RESULT":
                ours.setdefault(p[1], []).append((p[2], float(p[3]), float(p[4]), float(p[5])))
    lines = [f"{torch.cuda.get_device_name()}; torch {torch.__version__}", "",
             "| workload | ours best b2b (tile) | ours best single (tile) | torch b2b (variant) | "
             "torch single (variant) | ours/torch b2b | ours/torch single | ours TFLOP/s | "
             "torch TFLOP/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    per_tile = []
    for name, w in WORKLOADS.items():
        if name not in ours:
            continue
        t = torch_times(w)
        if not t:
            continue
        flops = 4.0 * w["h"] * w["s"] * w["t"] * w["d"] * (0.5 if w["causal"] else 1.0)
        tb = min((v[1], k) for k, v in t.items())
        ts = min((v[0], k) for k, v in t.items())
        ob = min(ours[name], key=lambda r: r[2])
        os_ = min(ours[name], key=lambda r: r[1])
        lines.append(f"| {name} | {ob[2]:.4f} ms ({ob[0]}) | {os_[1]:.4f} ms ({os_[0]}) | "
                     f"{tb[0]:.4f} ms ({tb[1]}) | {ts[0]:.4f} ms ({ts[1]}) | "
                     f"{ob[2] / tb[0]:.2f} | {os_[1] / ts[0]:.2f} | "
                     f"{flops / ob[2] / 1e9:.0f} | {flops / tb[0] / 1e9:.0f} |")
        per_tile.append(f"{name}: torch " + ", ".join(
            f"{k} {v[0]:.4f}/{v[1]:.4f}" for k, v in t.items()))
        for r in sorted(ours[name], key=lambda r: r[2]):
            per_tile.append(f"  ours {r[0]:<18} single {r[1]:.4f} b2b {r[2]:.4f} ms "
                            f"({r[3]:.0f} TFLOP/s) b2b ratio {r[2] / tb[0]:.2f}")
    text = "\n".join(per_tile + [""] + lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
