#!/usr/bin/env python3
"""run_e2e.py - the example suite: our compiler against PyTorch on a GPU, in one process.

    python3 bench/e2e/run_e2e.py --bin DIR_WITH_TOOLS --out OUTDIR [--part 1/2]
    python3 bench/e2e/run_e2e.py --merge OUT1 OUT2 --out OUTDIR     (no GPU needed)

For each graph of examples/graphs (at its dims' profile values):
  ours   luminal_search --graph G --limit 20 --time-limit 60 --out OUT/NAME/program --json
         (its progress in OUT/NAME/search.log)
         luminal_run OUT/NAME/program --write-inputs OUT/NAME/inputs --seed 0
         luminal_run OUT/NAME/program --inputs OUT/NAME/inputs --outputs OUT/NAME/outputs
                     --bench --json
  torch  the same graph through torch_graph.py on the same inputs (OUT/NAME/inputs/*.npy):
         eager, torch.compile (default), torch.compile(mode="reduce-overhead") and, for
         attention graphs, F.scaled_dot_product_attention (eager) on 4-D (batch, heads,
         seq, dim) tensors, with the backend it selected (flash for bf16/f16 causal or
         unmasked attention) recorded as torch.sdpa.backend. "best" is the fastest of all
         of these variants.
  check  our outputs against each torch variant's (torch_graph.compare; the anchor, which
         decides "correct", is eager), within the dtype's fixed tolerance; the graph's f64
         value (the truth) gives each side's own error, to tell a wrong program from
         ill-conditioned data (which is fixed in the graph's "init", never by a wider bound).
  time   single-call latency and back-to-back time per call of every torch variant (ours
         come from luminal_run --bench), the floor (bandwidth and compute, measured in this
         run), per-workload wall time.
Writes OUT/results.md (also printed) and OUT/results.json. README.md has the details:
the tools' contract, the inputs, the timing method and the tolerance.
A missing or failing tool, a torch.compile error or a failed check is reported for its
workload; the suite goes on.
"""

import argparse
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

TORCH_VARIANTS = ["eager", "compile", "reduce-overhead", "sdpa", "sdpa-graph", "sdpa-flash",
                  "sdpa-flash-graph"]
# the variants that call F.scaled_dot_product_attention (attention graphs only): the default
# backend (torch picks it: on Hopper often cuDNN's), and the flash backend forced with
# sdpa_kernel(FLASH_ATTENTION), each eager and captured in a CUDA graph (what
# reduce-overhead gives a model, without torch.compile)
SDPA_VARIANTS = ("sdpa", "sdpa-graph", "sdpa-flash", "sdpa-flash-graph")
FLASH_VARIANTS = ("sdpa-flash", "sdpa-flash-graph")


# ---------------------------------------------------------------------------------------
# tools


def find_tool(bin_dir, name):
    """bin_dir/name, or where a build tree keeps it (tools/NAME/NAME, bench/e2e/NAME)."""
    for rel in (name, os.path.join("tools", name, name), os.path.join("bench", "e2e", name)):
        p = os.path.join(bin_dir, rel)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


class ToolError(Exception):
    pass


def run_tool(argv, timeout, want_json=False, stderr_file=None):
    """Runs a tool; returns (parsed stdout JSON or stdout text, seconds). Raises ToolError
    with the exit status and the end of stderr on failure, timeout or unreadable JSON.
    stderr_file: where its stderr goes as well (its progress), kept for the record."""
    t0 = time.time()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if stderr_file:
            with open(stderr_file, "w") as f:
                f.write(r.stderr)
    except subprocess.TimeoutExpired as e:
        tail = (e.stderr or b"")[-2000:]
        tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        raise ToolError(f"{os.path.basename(argv[0])}: timed out after {timeout:.0f} s; "
                        f"stderr: {tail.strip()[-800:]}")
    except OSError as e:
        raise ToolError(f"{argv[0]}: cannot run: {e}")
    secs = time.time() - t0
    if r.returncode != 0:
        raise ToolError(f"{os.path.basename(argv[0])} exited {r.returncode}: "
                        f"{r.stderr.strip()[-1500:]}")
    if not want_json:
        return r.stdout, secs
    try:
        return json.loads(r.stdout), secs
    except json.JSONDecodeError as e:
        raise ToolError(f"{os.path.basename(argv[0])}: stdout is not JSON ({e}): "
                        f"{r.stdout.strip()[:400]!r}")


# ---------------------------------------------------------------------------------------
# timing


def sync():
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_single(fn, min_calls=10, max_calls=200, budget_s=1.0):
    """Single-call latency: synchronize, one call, synchronize, wall clock; the median
    over at least min_calls calls (more while within budget_s, at most max_calls)."""
    times = []
    t_end = time.perf_counter() + budget_s
    while len(times) < max_calls and (len(times) < min_calls or time.perf_counter() < t_end):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), len(times)


def time_back_to_back(fn, per_call_ms, trials=5, trial_ms=20.0, max_n=1000):
    """Back-to-back time per call: N calls between two CUDA events (N so that a trial
    takes about trial_ms), elapsed / N; the median of the trials."""
    import torch
    n = int(min(max_n, max(3, math.ceil(trial_ms / max(per_call_ms, 1e-3)))))
    res = []
    for _ in range(trials):
        if torch.cuda.is_available():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            res.append(start.elapsed_time(end) / n)
        else:  # CPU (a local dry run): wall clock
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            res.append((time.perf_counter() - t0) * 1e3 / n)
    return statistics.median(res), n


def machine_rates(device):
    """Copy bandwidth (GB/s, bytes read plus written, 1 GiB device-to-device) and matmul
    rates (TFLOP/s, 8192^3 in bf16 and f32, TF32 off) measured now, as
    bench/cuda_rt/torch_matmul.py does."""
    import torch
    out = {}
    if device.type != "cuda":
        return {"copy_gbs": None, "matmul_tflops": {}, "note": "not measured off the GPU"}
    src = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    ms, _ = time_back_to_back(lambda: dst.copy_(src), 1.0, trials=15, trial_ms=10)
    out["copy_gbs"] = 2 * (1 << 30) / (ms * 1e-3) / 1e9
    del src, dst
    out["matmul_tflops"] = {}
    for name, dt in (("bf16", torch.bfloat16), ("f16", torch.float16), ("f32", torch.float32)):
        n = 8192
        a = (torch.rand(n, n, device=device) * 2 - 1).to(dt)
        b = (torch.rand(n, n, device=device) * 2 - 1).to(dt)
        c = torch.empty(n, n, device=device, dtype=dt)
        for _ in range(3):
            torch.matmul(a, b, out=c)
        ms, _ = time_back_to_back(lambda: torch.matmul(a, b, out=c), 10.0, trials=7,
                                  trial_ms=50)
        out["matmul_tflops"][name] = 2 * n**3 / (ms * 1e-3) / 1e12
        del a, b, c
    torch.cuda.empty_cache()
    return out


# ---------------------------------------------------------------------------------------
# one workload


def nbytes(t):
    return t.numel() * t.element_size()


def run_ours(res, gpath, wdir, tools, args, deadline):
    """Our compiler and runner on gpath. Fills res["ours"]; returns the inputs folder
    holding our seeded inputs, or None when luminal_run could not write them."""
    ours = res["ours"] = {}
    prog, inp, outp = (os.path.join(wdir, d) for d in ("program", "inputs", "outputs"))
    if not tools.get("luminal_search"):
        ours["error"] = f"luminal_search not found in {args.bin}"
    else:
        t = max(10.0, min(args.search_timeout, deadline - time.time() - 60))
        # the search's own wall-clock limit, well inside the kill timeout: a slow search
        # still ends with its best candidate checked and saved
        tl = max(5.0, min(args.search_time_limit, t - 40))
        try:
            summary, secs = run_tool([tools["luminal_search"], "--graph", gpath, "--limit",
                                      str(args.limit), "--time-limit", f"{tl:.0f}", "--out",
                                      prog, "--json"], t, want_json=True,
                                     stderr_file=os.path.join(wdir, "search.log"))
            ours["search"] = summary
            ours["search_wall_s"] = secs
        except ToolError as e:
            ours["error"] = f"search: {e}"
    if not tools.get("luminal_run"):
        ours.setdefault("error", f"luminal_run not found in {args.bin}")
        return None
    if "search" not in ours:
        return None
    # --dim: the program (searched at the profile values) runs at these dims
    run_dims = [a for k, v in res.get("run_dims", {}).items() for a in ("--dim", f"{k}={v}")]
    try:
        _, secs = run_tool([tools["luminal_run"], prog, "--write-inputs", inp, "--seed", "0"]
                           + run_dims, args.run_timeout)
        ours["write_inputs_s"] = secs
    except ToolError as e:
        ours["error"] = f"write-inputs: {e}"
        return None
    try:
        bench, secs = run_tool([tools["luminal_run"], prog, "--inputs", inp, "--outputs", outp,
                                "--bench", "--json"] + run_dims, args.run_timeout,
                               want_json=True)
        ours["bench"] = bench
        ours["run_wall_s"] = secs
        for k in ("single_call_ms", "back_to_back_ms"):
            if not isinstance(bench.get(k), (int, float)):
                raise ToolError(f"luminal_run --bench --json gave no number {k!r}: {bench}")
        ours["single_call_ms"] = float(bench["single_call_ms"])
        ours["back_to_back_ms"] = float(bench["back_to_back_ms"])
    except ToolError as e:
        ours["error"] = f"run: {e}"
    return inp


def check_inputs_contract(res, gpath, inp, tools, g, dims):
    """When ref_dump is at hand, its seeded inputs must equal luminal_run's, bit for bit."""
    import numpy as np
    if not tools.get("ref_dump"):
        res["inputs_contract"] = "not checked (ref_dump not found)"
        return
    tmp = os.path.join(os.path.dirname(inp), "ref_inputs")
    argv = [tools["ref_dump"], "--graph", gpath, "--out", tmp, "--no-run", "--seed", "0"]
    for k, v in dims.items():
        argv += ["--dim", f"{k}={v}"]
    try:
        run_tool(argv, 300)
    except ToolError as e:
        res["inputs_contract"] = f"not checked: {e}"
        return
    bad = []
    for name in g.input_names:
        a = np.load(os.path.join(inp, name + ".npy"))
        b = np.load(os.path.join(tmp, "inputs", name + ".npy"))
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            bad.append(f"{name}: luminal_run {a.dtype}{list(a.shape)} vs ref_dump "
                       f"{b.dtype}{list(b.shape)}{'' if a.shape != b.shape else ', values differ'}")
    shutil.rmtree(tmp, ignore_errors=True)
    res["inputs_contract"] = "ok" if not bad else "MISMATCH: " + "; ".join(bad)


def torch_inputs_fallback(g, dims, wdir, tools):
    """Our seeded inputs from ref_dump --no-run when luminal_run could not write them."""
    if not tools.get("ref_dump"):
        return None, "no inputs: luminal_run did not write them and ref_dump is not found"
    out = os.path.join(wdir, "ref_inputs")
    argv = [tools["ref_dump"], "--graph", g.source, "--out", out, "--no-run", "--seed", "0"]
    for k, v in dims.items():
        argv += ["--dim", f"{k}={v}"]
    try:
        run_tool(argv, 300)
    except ToolError as e:
        return None, f"no inputs: {e}"
    return os.path.join(out, "inputs"), "inputs from ref_dump --no-run (luminal_run did not write them)"


def torch_generated_inputs(g, dims, wdir):
    """Seeded inputs from torch's own generator, written as .npy in our contract, when
    neither luminal_run nor ref_dump can give ours: each input uniform in its "init" range
    [lo, hi) when it has one, else floats uniform in [-1, 1) (then rounded to the dtype),
    int and i64 in [0, 4), bool 0 or 1, as hl_graph_fill_input's ranges (not its bytes).
    Only torch is measured then."""
    import numpy as np
    import torch
    import torch_graph as tg
    out = os.path.join(wdir, "torch_inputs")
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator().manual_seed(0)
    for spec, (name, dt, shape) in zip(g.inputs, g.input_specs(dims)):
        lo, hi = spec.get("init", {}).get("uniform", (None, None))
        if dt.is_floating_point:
            lo, hi = (-1.0, 1.0) if lo is None else (float(lo), float(hi))
            u = torch.rand(shape, generator=gen, dtype=torch.float64)
            x = tg.cast((lo + (hi - lo) * u).float(), dt).to(torch.float32).numpy()
        elif dt == torch.bool:
            lo, hi = (0, 2) if lo is None else (int(lo), int(hi))
            x = torch.randint(lo, hi, shape, generator=gen).bool().numpy()
        else:
            lo, hi = (0, 4) if lo is None else (int(lo), int(hi))
            x = torch.randint(lo, hi, shape, generator=gen).to(dt).numpy()
        np.save(os.path.join(out, name + ".npy"), x)
    return out


def cuda_graph_of(fn, ins):
    """fn(*ins) captured in a CUDA graph (after two warm-up calls on a side stream, as
    torch's documentation does it); the callable replays it and returns its outputs."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn(*ins)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = fn(*ins)

    def replay(*_):
        graph.replay()
        return outs
    return replay


def make_variant(g, dims, device, variant, ins=None):
    """(callable, compile_s or None) for a torch variant; cloning outputs is the caller's.
    The CUDA-graph variants are captured on ins (the inputs every timed call passes)."""
    import torch
    attention = "sdpa" if variant in SDPA_VARIANTS else "explicit"
    prog = g.prepare(dims, device=device, attention=attention)
    if variant in ("eager", "sdpa"):
        return prog, None
    if variant in SDPA_VARIANTS:
        fn = prog
        if variant in FLASH_VARIANTS:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            def fn(*xs):
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    return prog(*xs)
        if variant.endswith("-graph"):
            fn = cuda_graph_of(fn, ins)
        return fn, None
    mode = "reduce-overhead" if variant == "reduce-overhead" else "default"
    compiled = torch.compile(prog, mode=mode, dynamic=False)
    if variant == "reduce-overhead" and hasattr(torch, "compiler") and hasattr(
            torch.compiler, "cudagraph_mark_step_begin"):
        def fn(*xs):
            torch.compiler.cudagraph_mark_step_begin()
            return compiled(*xs)
        return fn, True
    return compiled, True


def cuda_kernel_names(call):
    """The names of the CUDA kernels one call launches (torch.profiler), shortened."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    names = []
    for ev in prof.key_averages():
        if getattr(ev, "device_type", None) is not None and "CUDA" in str(ev.device_type):
            n = ev.key
            names.append(n if len(n) <= 80 else n[:77] + "...")
    return names


def run_workload(gpath, args, tools, rates, device, deadline):
    import numpy as np
    import torch
    import torch._dynamo
    import torch_graph as tg

    t_start = time.time()
    name = os.path.splitext(os.path.basename(gpath))[0]
    res = {"name": name, "graph": os.path.relpath(gpath, ROOT), "errors": []}
    wdir = os.path.join(args.out, name)
    shutil.rmtree(wdir, ignore_errors=True)
    os.makedirs(wdir)
    g = tg.TorchGraph.load(gpath)
    names = {d["name"] for d in g.dims}
    dims = g.dim_values({k: v for k, v in args.dim if k in names})
    res["dims"] = dims
    res["run_dims"] = {k: v for k, v in args.dim if k in names}
    res["attention"] = g.is_attention()
    res["outputs"] = g.output_names
    dtypes = g.float_dtypes()
    tol = tg.tolerance_for(dtypes)
    res["tolerance"] = {"rms": tol[0], "max": tol[1], "dtype": tg.narrowest(dtypes)}

    # (a), (b): ours
    inp = None
    if not args.skip_ours:
        try:
            inp = run_ours(res, gpath, wdir, tools, args, deadline)
        except Exception as e:  # noqa: BLE001 - reported, the suite goes on
            res["ours"] = {"error": f"{type(e).__name__}: {e}"}
    else:
        res["ours"] = {"error": "skipped (--skip-ours)"}
    if inp is None:
        inp, how = torch_inputs_fallback(g, dims, wdir, tools)
        if inp is None:
            inp = torch_generated_inputs(g, dims, wdir)
            how += "; inputs from torch's generator instead (torch is measured, not checked)"
        res["inputs"] = how
    else:
        res["inputs"] = "luminal_run --write-inputs --seed 0"

    # inputs on the device, in the graph's dtypes
    try:
        shapes = {n: np.load(os.path.join(inp, n + ".npy"), mmap_mode="r").shape
                  for n in g.input_names}
        dims = g.dims_from_shapes(shapes)
        res["dims"] = dims
        if res["inputs"].startswith("luminal_run"):
            check_inputs_contract(res, gpath, inp, tools, g, dims)
        specs = g.input_specs(dims)
        ins = [tg.load_npy_as(os.path.join(inp, n + ".npy"), dt, device) for n, dt, _ in specs]
    except Exception as e:  # noqa: BLE001
        res["errors"].append(f"inputs: {type(e).__name__}: {e}")
        res["wall_s"] = time.time() - t_start
        return res

    # our outputs, if we have them
    ours_out = None
    if "back_to_back_ms" in res["ours"]:
        try:
            outd = os.path.join(wdir, "outputs")
            files = {n: os.path.join(outd, n + ".npy") for n in g.output_names}
            listed = res["ours"].get("bench", {}).get("outputs")
            if isinstance(listed, list):  # luminal_run may name its files
                for o in listed:
                    if isinstance(o, dict) and o.get("name") in files and o.get("file"):
                        f = o["file"]
                        files[o["name"]] = f if os.path.isabs(f) else os.path.join(outd, f)
            ours_out = [torch.from_numpy(np.load(files[n])).to(device) for n in g.output_names]
        except Exception as e:  # noqa: BLE001
            res["ours"]["error"] = f"outputs: {type(e).__name__}: {e}"

    # the truth (f64) and the floors
    counter = {}
    truth = None
    try:
        t0 = time.time()
        truth = list(g.truth(dims, ins, device=device))
        res["truth_s"] = time.time() - t0
    except Exception as e:  # noqa: BLE001
        res["errors"].append(f"f64 truth: {type(e).__name__}: {e}")

    # (c): torch variants
    variants = [v for v in TORCH_VARIANTS if v not in SDPA_VARIANTS or g.is_attention()]
    if device.type != "cuda":  # CUDA graphs need the GPU
        variants = [v for v in variants if not v.endswith("-graph")]
    variants = [v for v in variants if v in args.variants]
    res["torch"] = {}
    outs_by_variant = {}
    counter_done = None
    for v in variants:
        ent = res["torch"][v] = {}
        if time.time() > deadline - 20:
            ent["error"] = "skipped: the time budget is spent"
            continue
        try:
            if v == "eager":
                prog = g.prepare(dims, device=device, counter=counter)
                t0 = time.time()
                outs = [o.clone() for o in prog(*ins)]
                sync()
                ent["first_call_s"] = time.time() - t0
                counter_done = dict(counter)
                fn_raw = g.prepare(dims, device=device)
            else:
                if v == "reduce-overhead":
                    # the inputs stay where they are, as a model's parameters would: CUDA
                    # graphs need not copy them into their own buffers on every call
                    for x in ins:
                        try:
                            torch._dynamo.mark_static_address(x)
                        except Exception:  # noqa: BLE001 - an older torch: copies are timed
                            ent["static_inputs"] = False
                fn_raw, compiled = make_variant(g, dims, device, v, ins)
                t0 = time.time()
                outs = [o.clone() for o in fn_raw(*ins)]
                sync()
                ent["compile_s" if compiled else "first_call_s"] = time.time() - t0
            if v == "sdpa":  # which backend ran (flash, unless the tensors rule it out)
                be = getattr(fn_raw, "sdpa_backends", None) or []
                ent["backend"] = ", ".join(b for b, _ in be)
                why = "; ".join(w for _, w in be if w)
                if why:
                    ent["backend_refusals"] = why
            for _ in range(3):  # warm-up (CUDA graphs record on the first calls)
                fn_raw(*ins)
            sync()
            if v == "sdpa" and device.type == "cuda":
                # the kernels the default backend launches, by name (flash, cuDNN, ...)
                try:
                    ent["kernels"] = cuda_kernel_names(lambda: fn_raw(*ins))
                except Exception as e:  # noqa: BLE001 - a profiler problem is only a note
                    ent["kernels"] = [f"(the profiler failed: {type(e).__name__}: {e})"[:200]]
            outs = [o.clone() for o in fn_raw(*ins)]
            sync()
            outs_by_variant[v] = outs
            del outs

            def call(fn_raw=fn_raw):
                fn_raw(*ins)
            single, n1 = time_single(call)
            b2b, n2 = time_back_to_back(call, single)
            ent.update(single_call_ms=single, single_calls=n1, back_to_back_ms=b2b,
                       back_to_back_n=n2)
        except Exception as e:  # noqa: BLE001 - a compile failure must not kill the suite
            ent["error"] = f"{type(e).__name__}: {str(e)[:600]}"
            ent["traceback"] = traceback.format_exc()[-3000:]
        finally:
            sync()
    res["flops"] = counter_done.get("flops", 0) if counter_done is not None else None

    # correctness: ours against every variant; eager is the anchor
    res["check"] = {}
    if ours_out is not None:
        for v, outs in outs_by_variant.items():
            per_out = []
            for i, (o, t) in enumerate(zip(ours_out, outs)):
                x = truth[i] if truth else None
                r = tg.compare(o, t, tol, truth=x.to(t.device) if x is not None else None)
                per_out.append({k: r[k] for k in ("ok", "rel_rms", "rel_max", "rms", "why",
                                                  "anchor_rel_rms", "anchor_rel_max",
                                                  "truth_rel_rms", "truth_rel_max") if k in r})
            res["check"][v] = per_out
        if truth is not None:
            res["ours_vs_truth"] = [tg.compare(o, t, (math.inf, math.inf))["rel_max"]
                                    for o, t in zip(ours_out, truth)]
            res["eager_vs_truth"] = [tg.compare(o, t, (math.inf, math.inf))["rel_max"]
                                     for o, t in zip(outs_by_variant.get("eager", []), truth)]
        eager = res["check"].get("eager")
        res["correct"] = (all(c["ok"] for c in eager) if eager else None)
        if eager:
            res["max_err"] = max(c["rel_max"] for c in eager)
            # well-conditioned data leaves eager well inside the tolerance of the truth
            res["ill_conditioned"] = any(
                c.get("anchor_rel_rms", 0) > tol[0] / 2 or c.get("anchor_rel_max", 0) > tol[1] / 2
                for c in eager)

    # (d): floors
    in_bytes = sum(nbytes(x) for x in ins)
    some = next(iter(outs_by_variant.values()), None) or ours_out or []
    out_bytes = sum(nbytes(o) for o in some)
    res["bytes"] = in_bytes + out_bytes
    fl = {}
    if rates.get("copy_gbs"):
        fl["bandwidth_ms"] = res["bytes"] / (rates["copy_gbs"] * 1e9) * 1e3
    flops = res.get("flops", 0)
    mm_dt = tg.narrowest({i["dtype"] for i in g.inputs if i["dtype"] in tg.FLOATS}) or "f32"
    rate = rates.get("matmul_tflops", {}).get(mm_dt if mm_dt in ("bf16", "f16") else "f32")
    if flops and rate:
        fl["compute_ms"] = flops / (rate * 1e12) * 1e3
        fl["compute_rate"] = f"{mm_dt if mm_dt in ('bf16', 'f16') else 'f32'} matmul"
    if fl:
        kind = max((k for k in ("bandwidth_ms", "compute_ms") if k in fl), key=lambda k: fl[k])
        fl["floor_ms"] = fl[kind]
        fl["kind"] = kind.split("_")[0]
    res["floor"] = fl

    del ins, outs_by_variant, truth, ours_out
    try:
        torch._dynamo.reset()
    except Exception:  # noqa: BLE001
        pass
    if device.type == "cuda":
        torch.cuda.empty_cache()
    res["wall_s"] = time.time() - t_start
    return res


# ---------------------------------------------------------------------------------------
# report


def fmt_ms(x):
    if x is None:
        return "–"
    return f"{x:.4f}" if x < 0.1 else f"{x:.3f}" if x < 10 else f"{x:.1f}"


def best_torch(res, key, among=None):
    vals = [(e[key], v) for v, e in res.get("torch", {}).items()
            if isinstance(e.get(key), float) and (among is None or v in among)]
    return min(vals) if vals else (None, None)


def render(doc):
    lines = []
    m = doc.get("machine", {})
    lines.append(f"# luminal-c vs PyTorch: the example suite")
    lines.append("")
    lines.append(f"{m.get('device', '?')}; torch {m.get('torch', '?')}; copy "
                 f"{m.get('copy_gbs') and round(m['copy_gbs'])} GB/s; matmul 8192^3 " +
                 ", ".join(f"{k} {v:.0f} TFLOP/s" for k, v in m.get("matmul_tflops", {}).items()))
    lines.append("")
    lines.append("Times in ms: single call / back-to-back per call. ratio = ours / best torch "
                 "(back-to-back; single call); ratio to flash = ours / the best variant running "
                 "SDPA's flash backend (forced). floor = max(bandwidth, compute). correct: ours "
                 "vs eager (relative max error; ! = eager itself is more than half the tolerance "
                 "from the f64 value: the data is ill-conditioned, see the notes).")
    lines.append("")
    shown = [v for v in TORCH_VARIANTS
             if v not in SDPA_VARIANTS or any(v in r.get("torch", {}) for r in doc["workloads"])]
    hdr = ["workload", "ours"] + shown + ["ratio", "ratio to flash", "floor", "ours/floor",
                                          "correct", "wall s"]
    lines.append("| " + " | ".join(hdr) + " |")
    lines.append("|" + "---|" * len(hdr))
    for r in doc["workloads"]:
        o = r.get("ours", {})
        cells = [r["name"]]
        cells.append(f"{fmt_ms(o.get('single_call_ms'))} / {fmt_ms(o.get('back_to_back_ms'))}"
                     if "back_to_back_ms" in o else "error")
        for v in shown:
            e = r.get("torch", {}).get(v)
            if e is None:
                cells.append("")
            elif "back_to_back_ms" in e:
                be = f" ({e['backend']})" if e.get("backend") else ""
                cells.append(f"{fmt_ms(e['single_call_ms'])} / {fmt_ms(e['back_to_back_ms'])}{be}")
            else:
                cells.append("error")
        bt, _ = best_torch(r, "back_to_back_ms")
        bs, _ = best_torch(r, "single_call_ms")
        if "back_to_back_ms" in o and bt:
            cells.append(f"{o['back_to_back_ms'] / bt:.2f}; {o['single_call_ms'] / bs:.2f}")
        else:
            cells.append("–")
        ft, _ = best_torch(r, "back_to_back_ms", FLASH_VARIANTS)
        fs, _ = best_torch(r, "single_call_ms", FLASH_VARIANTS)
        if "back_to_back_ms" in o and ft:
            cells.append(f"{o['back_to_back_ms'] / ft:.2f}; {o['single_call_ms'] / fs:.2f}")
        else:
            cells.append("–")
        fl = r.get("floor", {})
        cells.append(f"{fmt_ms(fl.get('floor_ms'))} ({fl.get('kind')})" if fl.get("floor_ms")
                     else "–")
        cells.append(f"{o['back_to_back_ms'] / fl['floor_ms']:.2f}"
                     if fl.get("floor_ms") and "back_to_back_ms" in o else "–")
        if r.get("correct") is None:
            cells.append("–")
        else:
            mark = "!" if r.get("ill_conditioned") else ""
            cells.append(f"{'yes' if r['correct'] else 'NO'} ({r['max_err']:.1e}{mark})")
        cells.append(f"{r.get('wall_s', 0):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    notes = []
    for r in doc["workloads"]:
        o = r.get("ours", {})
        if o.get("error"):
            notes.append(f"- {r['name']}: ours: {o['error'][:300]}")
        for v, e in r.get("torch", {}).items():
            if e.get("error"):
                notes.append(f"- {r['name']}: torch {v}: {e['error'][:300]}")
        for e in r.get("errors", []):
            notes.append(f"- {r['name']}: {e[:300]}")
        if r.get("inputs_contract", "ok") not in ("ok",) and "MISMATCH" in r.get("inputs_contract", ""):
            notes.append(f"- {r['name']}: inputs contract: {r['inputs_contract'][:300]}")
        for v, cs in r.get("check", {}).items():
            for name, c in zip(r.get("outputs", []) or [f"#{i}" for i in range(len(cs))], cs):
                if not c["ok"]:
                    notes.append(f"- {r['name']}: ours vs {v}, output {name}: {c['why'][:300]}")
        ec = r.get("check", {}).get("eager", [])
        if (r.get("ill_conditioned") or r.get("correct") is False) and ec and \
                "anchor_rel_rms" in ec[0]:
            what = ("ill-conditioned at these inputs (fix the data: the inputs' \"init\", "
                    "examples/graphs/README.md)" if r.get("ill_conditioned")
                    else "eager is close to the f64 value, so the difference is ours")
            notes.append(f"- {r['name']}: against the f64 value: eager "
                         + ", ".join(f"{c['anchor_rel_rms']:.1e} rms / {c['anchor_rel_max']:.1e}"
                                     f" max" for c in ec)
                         + "; ours " + ", ".join(f"{c['truth_rel_rms']:.1e} rms / "
                                                 f"{c['truth_rel_max']:.1e} max" for c in ec)
                         + f": {what}")
        ks = r.get("torch", {}).get("sdpa", {}).get("kernels")
        if ks:
            notes.append(f"- {r['name']}: torch sdpa (default backend) launches: "
                         + ", ".join(ks[:4]))
        comp = [f"{v} {e['compile_s']:.0f} s" for v, e in r.get("torch", {}).items()
                if "compile_s" in e]
        if comp:
            notes.append(f"- {r['name']}: torch.compile time " + ", ".join(comp))
        s = o.get("search", {})
        if s:
            def ms(v):
                return f"{v:.4g} ms" if isinstance(v, (int, float)) else "-"
            st = {k: v for k, v in (s.get("by_status") or {}).items() if v and k != "ok"}
            notes.append(f"- {r['name']}: search ({s.get('evaluator')}): winner "
                         f"{ms(s.get('best_ms'))} ({s.get('winner_kernels')} kernels + "
                         f"{s.get('winner_blas')} cuBLASLt), first {ms(s.get('first_ms'))}, "
                         f"reference lowering {ms(s.get('reference_ms'))}; "
                         f"{s.get('evaluated')} evaluated, {s.get('ok')} ok"
                         + (", " + ", ".join(f"{v} {k}" for k, v in sorted(st.items())) if st else "")
                         + f", {s.get('screened', 0)} screened out; "
                         f"{o.get('search_wall_s', 0):.0f} s"
                         + (" (stopped by the time limit)" if s.get("time_up") else ""))
    if notes:
        lines.append("Notes:")
        lines.append("")
        lines.extend(notes)
    return "\n".join(lines) + "\n"


def write_report(doc, out):
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    md = render(doc)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md)
    return md


# ---------------------------------------------------------------------------------------


def parse_part(s):
    try:
        k, n = (int(x) for x in s.split("/"))
        assert 1 <= k <= n
        return k, n
    except Exception:  # noqa: BLE001
        raise argparse.ArgumentTypeError(f"--part wants K/N with 1 <= K <= N, got {s!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="folder with luminal_search, luminal_run (and ref_dump); "
                                  "a build tree works too")
    ap.add_argument("--out", required=True, help="output folder (results.md, results.json)")
    ap.add_argument("--graphs", default=os.path.join(ROOT, "examples", "graphs"))
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--part", type=parse_part, default=(1, 1), help="K/N: every N-th graph")
    ap.add_argument("--limit", type=int, default=20, help="luminal_search --limit")
    ap.add_argument("--search-timeout", type=float, default=120.0,
                    help="seconds before a luminal_search call is killed")
    ap.add_argument("--search-time-limit", type=float, default=60.0,
                    help="luminal_search --time-limit (at most the timeout less 40 s)")
    ap.add_argument("--run-timeout", type=float, default=120.0)
    ap.add_argument("--budget", type=float, default=540.0,
                    help="seconds for the whole run; later workloads are skipped past it")
    ap.add_argument("--variants", default=",".join(TORCH_VARIANTS))
    ap.add_argument("--skip-ours", action="store_true")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu for a dry run")
    ap.add_argument("--dim", action="append", default=[], type=lambda s: (
        s.split("=")[0], int(s.split("=")[1])), help="NAME=V: both sides run at this value of dim NAME (the search still "
        "measures at the profile value, and luminal_run runs its program with --dim)")
    ap.add_argument("--merge", nargs="+", help="result folders to merge into --out (no GPU)")
    args = ap.parse_args()
    args.variants = [v for v in args.variants.split(",") if v]
    os.makedirs(args.out, exist_ok=True)

    if args.merge:
        docs = []
        for d in args.merge:
            with open(os.path.join(d, "results.json")) as f:
                docs.append(json.load(f))
        doc = {"machine": docs[0].get("machine", {}), "parts": [d.get("run") for d in docs],
               "workloads": sorted((w for d in docs for w in d["workloads"]),
                                   key=lambda w: w["name"])}
        print(write_report(doc, args.out), end="")
        return 0

    t0 = time.time()
    deadline = t0 + args.budget
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 is f32 (the default, said aloud)
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("run_e2e: CUDA is not available to torch (use --device cpu for a dry run)")
        return 2
    tools = {}
    if args.bin:
        for t in ("luminal_search", "luminal_run", "ref_dump"):
            tools[t] = find_tool(args.bin, t)
    missing = [t for t in ("luminal_search", "luminal_run") if not tools.get(t)]
    if missing and not args.skip_ours:
        print(f"run_e2e: not found in {args.bin!r}: {', '.join(missing)}; their columns will "
              f"say so", flush=True)

    files = sorted(glob.glob(os.path.join(args.graphs, "*.json")))
    if args.only:
        want = set(args.only.split(","))
        files = [f for f in files if os.path.splitext(os.path.basename(f))[0] in want]
    k, n = args.part
    files = files[k - 1::n]

    machine = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
               "torch": torch.__version__, "cuda": torch.version.cuda}
    t = time.time()
    machine.update(machine_rates(device))
    machine["rates_s"] = time.time() - t
    print(f"run_e2e: {machine['device']}, torch {machine['torch']}, copy "
          f"{machine.get('copy_gbs')} GB/s, matmul {machine.get('matmul_tflops')}", flush=True)
    doc = {"machine": machine, "run": {"part": f"{k}/{n}", "argv": sys.argv[1:],
                                       "tools": tools}, "workloads": []}
    for f in files:
        name = os.path.splitext(os.path.basename(f))[0]
        if time.time() > deadline - 30:
            doc["workloads"].append({"name": name, "errors": ["skipped: the time budget is spent"],
                                     "wall_s": 0})
            continue
        print(f"run_e2e: {name} ...", flush=True)
        try:
            res = run_workload(f, args, tools, machine, device, deadline)
        except Exception as e:  # noqa: BLE001 - one workload never ends the suite
            res = {"name": name, "errors": [f"{type(e).__name__}: {e}"],
                   "traceback": traceback.format_exc()[-3000:], "wall_s": 0}
        doc["workloads"].append(res)
        print(f"run_e2e: {name}: {res.get('wall_s', 0):.1f} s, correct {res.get('correct')}",
              flush=True)
        write_report(doc, args.out)  # what is done survives a kill
    doc["run"]["wall_s"] = time.time() - t0
    print(write_report(doc, args.out), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
