#!/usr/bin/env python3
"""attn_torch.py - torch's F.scaled_dot_product_attention on attn_gpu's workloads, and the
table of ours against it (one run, one card).

    attn_torch.py --ours RESULTS [--ours RESULTS2 ...] [--out FILE]

RESULTS holds attn_gpu's "RESULT workload tile single_ms b2b_ms tflops" lines. For each
workload torch runs on identical shapes as 4-D (batch, heads, seq, dim) bf16 tensors, random
N(0, 1) data:
  causal_S<S>_D<D>    q, k, v (1, 32, S, D), is_causal=True
  decode_kv4096_gqa   q (1, 32, 1, 128), k, v (1, 8, 4096, 128), enable_gqa=True
in these variants: "flash" (eager, under sdpa_kernel(FLASH_ATTENTION): the backend is
confirmed by the call succeeding), "cudnn" (eager, under sdpa_kernel(CUDNN_ATTENTION)),
"default" (eager, the backend torch picks), "flash-compile", "compile" (torch.compile of
the flash / default call) and "flash-graph", "graph" (torch.compile mode="reduce-overhead",
CUDA graphs). A variant that fails is reported and left out. Times by CUDA events, medians:
single = one call between two events after a synchronize (30 trials), b2b = 20 calls
back to back per trial (10 trials) divided by 20, as attn_gpu times ours. The table gives
per workload ours (best tile by b2b, and best by single) against the best flash-backend
variant and against the best variant of all, and the ratios ours / torch.
"""

import argparse
import os
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

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, **kw)

    variants = {"flash": flash, "cudnn": cudnn, "default": call}
    try:
        variants["flash-compile"] = torch.compile(flash)
        variants["flash-graph"] = torch.compile(flash, mode="reduce-overhead")
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
    ap.add_argument("--ours", required=True, action="append",
                    help="attn_gpu --results FILE; given more than once (two builds of the "
                    "template), each gets its rows against the same torch times")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    runs = {}  # label (the file's name) -> workload -> [(tile, single, b2b, tflops)]
    for path in args.ours:
        ours = runs.setdefault(os.path.basename(path), {})
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 6 and p[0] == "RESULT":
                    ours.setdefault(p[1], []).append((p[2], float(p[3]), float(p[4]),
                                                      float(p[5])))
    lines = [f"{torch.cuda.get_device_name()}; torch {torch.__version__}", "",
             "flash: the best of the variants that run SDPA's flash backend (flash, "
             "flash-compile, flash-graph); best: the best of every variant (cuDNN's included).",
             "",
             "| workload | ours best b2b (tile) | ours best single (tile) | flash b2b / single "
             "(variant) | ours/flash b2b; single | best b2b / single (variant) | "
             "ours/best b2b; single | TFLOP/s ours, flash, best (b2b) |",
             "|---|---|---|---|---|---|---|---|"]
    per_tile = []
    for name, w in WORKLOADS.items():
        if not any(name in ours for ours in runs.values()):
            continue
        t = torch_times(w)
        if not t:
            continue
        flops = 4.0 * w["h"] * w["s"] * w["t"] * w["d"] * (0.5 if w["causal"] else 1.0)
        tb = min((v[1], k) for k, v in t.items())
        ts = min((v[0], k) for k, v in t.items())
        fl = {k: v for k, v in t.items() if k.startswith("flash")}
        fb = min((v[1], k) for k, v in fl.items()) if fl else (float("nan"), "-")
        fs = min((v[0], k) for k, v in fl.items()) if fl else (float("nan"), "-")
        per_tile.append(f"{name}: torch " + ", ".join(
            f"{k} {v[0]:.4f}/{v[1]:.4f}" for k, v in t.items()))
        for label, ours in runs.items():
            if name not in ours:
                continue
            ob = min(ours[name], key=lambda r: r[2])
            os_ = min(ours[name], key=lambda r: r[1])
            tag = f" ({label})" if len(runs) > 1 else ""
            lines.append(f"| {name}{tag} | {ob[2]:.4f} ms ({ob[0]}) | {os_[1]:.4f} ms ({os_[0]}) | "
                         f"{fb[0]:.4f} ({fb[1]}) / {fs[0]:.4f} ({fs[1]}) | "
                         f"{ob[2] / fb[0]:.2f}; {os_[1] / fs[0]:.2f} | "
                         f"{tb[0]:.4f} ({tb[1]}) / {ts[0]:.4f} ({ts[1]}) | "
                         f"{ob[2] / tb[0]:.2f}; {os_[1] / ts[0]:.2f} | "
                         f"{flops / ob[2] / 1e9:.0f}, {flops / fb[0] / 1e9:.0f}, "
                         f"{flops / tb[0] / 1e9:.0f} |")
            for r in sorted(ours[name], key=lambda r: r[2]):
                per_tile.append(f"  ours{tag} {r[0]:<18} single {r[1]:.4f} b2b {r[2]:.4f} ms "
                                f"({r[3]:.0f} TFLOP/s) b2b vs best torch {r[2] / tb[0]:.2f}")
    text = "\n".join(per_tile + [""] + lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
