#!/usr/bin/env python3
"""test_torch_graph.py - the PyTorch interpreter of the graph format (torch_graph.py)
against our CPU reference runtime (through ref_dump), on the CPU.

    test_torch_graph.py --ref-dump build/bench/e2e/ref_dump --work DIR

What it checks (each line of its report is one check; README.md explains the tolerances):

  examples   every graph in examples/graphs (their number is asserted), with every
             dynamic dim at 1 and at 3:
               native    the graph in its own dtypes, torch vs ours, tolerance of the
                         narrowest float dtype it computes in;
               f32       the graph with every float dtype widened to f32 (ref_dump runs the
                         widened file too), tolerance f32: the tight check of the op mapping
                         (only summation order and libm differ);
               sdpa      attention graphs again with F.scaled_dot_product_attention;
             and at dims 3 the canonical form (ref_dump --canonical: primitives only,
             every view explicit), which exercises the explicit-view path on real graphs.
  generated  20 graphs of hl_graph_generate (seeds 0..19; odd seeds with a dynamic dim,
             seeds 10..19 with 30 ops), in their canonical form, at their profile dims.
  machinery  hand-written primitives: strides that are not k*z (merged, reversed, min,
             cdiv, comparisons), an output read through its own view, and an iota using
             every operator of the expression language; they must match exactly.
  sdpa       the sdpa variant's tensors are 4-D views (a broadcast K too) and the
             backend SDPA selects is recorded once per attention node.
  compare    the comparison itself fails on a wrong answer (a perturbed output, a NaN
             where there was none, a wrong shape), and an f64 truth never widens its bound.

Exit status: 0 when every check passes, 1 when one fails, 77 (skipped) when torch or
numpy cannot be imported.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:  # CI without torch: skipped, with the reason
    print(f"skip: {e} (the interpreter test needs torch and numpy)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch_graph as tg  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples", "graphs")
N_EXAMPLES = 17  # examples/graphs/README.md lists seventeen
N_GENERATED = 20

torch.manual_seed(0)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


class Runner:
    def __init__(self, ref_dump, work):
        self.ref_dump, self.work = ref_dump, work
        self.passed, self.failed = 0, []

    def ref(self, graph_path, out_dir, dims=None, extra=()):
        cmd = [self.ref_dump, "--graph", graph_path, "--out", out_dir, *extra]
        for k, v in (dims or {}).items():
            cmd += ["--dim", f"{k}={v}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"ref_dump failed ({r.returncode}): {r.stderr.strip()}")
        with open(os.path.join(out_dir, "manifest.json")) as f:
            return json.load(f)

    def record(self, label, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed.append(label)

    def check_graph(self, label, g, graph_path, dims, attention="explicit", tol=None,
                    out_dir=None, reuse=None, truth=True):
        """Runs graph_path on the reference (dims given; or reuses the ref_dump folder
        `reuse`, whose inputs are the same), g on the same inputs in torch, and compares
        every output (with the f64 truth of g unless truth is False). One recorded check
        per output."""
        out_dir = reuse or out_dir or os.path.join(
            self.work, label.replace(" ", "_").replace("/", "_"))
        t0 = time.time()
        try:
            if reuse:
                with open(os.path.join(out_dir, "manifest.json")) as f:
                    man = json.load(f)
            else:
                man = self.ref(graph_path, out_dir, dims)
            vals = g.dim_values(man["dims"])
            specs = g.input_specs(vals)
            if [(n, tg.NAMES[dt], list(sh)) for n, dt, sh in specs] != [
                    (i["name"], i["dtype"], i["shape"]) for i in man["inputs"]]:
                raise RuntimeError(f"the inputs differ: torch {specs}, ours {man['inputs']}")
            ins = [tg.load_npy_as(os.path.join(out_dir, i["file"]), dt)
                   for i, (_, dt, _) in zip(man["inputs"], specs)]
            t1 = time.time()
            outs = g.prepare(vals, attention=attention)(*ins)
            exact = g.truth(vals, ins) if truth and g.float_dtypes() else [None] * len(outs)
            t2 = time.time()
        except Exception as e:  # a crash of the interpreter or the reference is a failure
            self.record(label, False, f"{type(e).__name__}: {e}")
            return
        tol = tol or tg.tolerance_for(g.float_dtypes())
        for t, x, spec in zip(outs, exact, man["outputs"]):
            ours = torch.from_numpy(np.load(os.path.join(out_dir, spec["file"])))
            r = tg.compare(ours, t, tol, truth=x)
            shape_dtype_ok = (list(t.shape) == spec["shape"] and
                              tg.NAMES[t.dtype] == spec["dtype"])
            if not shape_dtype_ok:
                r["ok"] = False
                r["why"] = (f"torch gives {tg.NAMES.get(t.dtype)} {list(t.shape)}, ours "
                            f"{spec['dtype']} {spec['shape']}")
            cond = ""
            if x is not None:
                cond = (f"; vs f64: torch {r['anchor_rel_rms']:.1e} / {r['anchor_rel_max']:.1e},"
                        f" ours {r['truth_rel_rms']:.1e} / {r['truth_rel_max']:.1e}")
            self.record(f"{label} {spec['name']}", r["ok"],
                        f"rms {r['rel_rms']:.1e} max {r['rel_max']:.1e} of RMS {r['rms']:.3g} "
                        f"(tolerance {tol[0]:g} / {tol[1]:g}{cond}) [{t1 - t0:.1f}+"
                        f"{t2 - t1:.1f} s] {r['why']}")


def run_examples(R):
    files = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".json"))
    R.record("examples count", len(files) == N_EXAMPLES,
             f"{len(files)} graphs in examples/graphs, expected {N_EXAMPLES}")
    for f in files:
        path = os.path.join(EXAMPLES, f)
        name = f[:-5]
        g = tg.TorchGraph.load(path)
        last = None
        for small in ((1, 3) if g.dims else (None,)):  # a static graph runs once
            dims = {d["name"]: min(small, d["max"]) for d in g.dims} if small else {}
            tag = f"{name} dims={small}" if small else name
            last = os.path.join(R.work, f"{name}_{small}")
            R.check_graph(f"examples/{tag} native", g, path, dims, out_dir=last)
            if g.is_attention():
                R.check_graph(f"examples/{tag} sdpa", g, path, dims, attention="sdpa",
                              reuse=last)
        # every float dtype widened to f32, at the larger dims
        wide = g.widened("f32")
        if wide.float_dtypes() != g.float_dtypes():
            wpath = os.path.join(R.work, f"{name}_f32.json")
            with open(wpath, "w") as fh:
                json.dump(wide.doc, fh)
            R.check_graph(f"examples/{tag} f32", wide, wpath, dims)
        # the canonical form (primitives with explicit views) on the same inputs
        cpath = os.path.join(R.work, f"{name}_canonical.json")
        r = subprocess.run([R.ref_dump, "--graph", path, "--canonical", cpath],
                           capture_output=True, text=True)
        if r.returncode != 0:
            R.record(f"examples/{tag} canonical", False, r.stderr.strip())
            continue
        R.check_graph(f"examples/{tag} canonical", tg.TorchGraph.load(cpath), cpath, dims,
                      reuse=last)


def run_generated(R):
    for seed in range(N_GENERATED):
        gpath = os.path.join(R.work, f"gen{seed}.json")
        cmd = [R.ref_dump, "--generate", str(seed), "--write-graph", gpath]
        if seed % 2:
            cmd.append("--dynamic")
        if seed >= 10:
            cmd += ["--ops", "30"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            R.record(f"generated/{seed}", False, r.stderr.strip())
            continue
        g = tg.TorchGraph.load(gpath)
        R.check_graph(f"generated/{seed} ({len(g.nodes)} nodes)", g, gpath, None,
                      out_dir=os.path.join(R.work, f"gen{seed}"))


# Hand-written primitives whose views are not k*z, so they take the index-grid path.
MACHINERY = {
    "format": "luminal-graph", "version": 1,
    "dims": [{"name": "N", "min": 1, "max": 8, "profile": 5}],
    "inputs": [{"name": "a", "dtype": "f32", "shape": [4, 3]},
               {"name": "b", "dtype": "f32", "shape": [12]},
               {"name": "c", "dtype": "bf16", "shape": ["N", 4]}],
    "nodes": [
        # a read transposed and merged: element k of [12] is a[k % 4, k / 4]
        {"name": "t", "op": "add", "inputs": [
            {"tensor": "a", "shape": [12], "strides": ["(z%4)*3 + z/4"]},
            {"tensor": "b", "shape": [12], "strides": ["11 - z"]}]},
        # min, max, cdiv and comparisons in strides
        {"name": "u", "op": "mul", "inputs": [
            {"tensor": "t", "shape": [3, 4], "strides": ["min(z, 2)*4", "max(z, 1) - (z >= 1)"]},
            {"tensor": "t", "shape": [3, 4], "strides": ["cdiv(z*5, 2)", "(z < 2) + 2*z"]}]},
        {"name": "r", "op": "max_reduce", "axis": 0, "inputs": [
            {"tensor": "u", "shape": [4, 3], "strides": ["z", "z*4"]}]},
        # a bf16 tensor with a dynamic dim, read reversed along it, summed in bf16
        {"name": "cs", "op": "sum_reduce", "axis": 1, "inputs": [
            {"tensor": "c", "shape": ["N", 4], "strides": ["(N - 1 - z)*4", "z"]}]},
        # every operator of the expression language, in an iota
        {"name": "i", "op": "iota", "len": 16, "expr":
            "min(z, 7)*3 - max(z % 5, 2) + cdiv(z, 3) + (z >= 4)*10 + (z < 9) "
            "+ (z > 2)*(z <= 11) + ((z >= 3) & (z < 6))*100 + ((z < 2) | (z >= 14))*1000 "
            "+ (z - 20)/3 + (z - 20)%7 + -z + N*2"},
        {"name": "fi", "op": "cast", "dtype": "f32", "inputs": ["i"]},
        {"name": "j", "op": "iota", "len": 16, "expr": "(z*7 + N) % 16"},
        {"name": "g", "op": "gather", "inputs": [
            {"tensor": "j", "shape": [5], "strides": ["z*3 % 16"]},
            {"tensor": "fi", "shape": [16], "strides": ["z"]}]},
    ],
    "outputs": ["t", "u", "r", "cs", "fi", "g",
                {"name": "u_t", "tensor": "u", "shape": [4, 3], "strides": ["z", "z*4"]},
                {"name": "t_strided", "tensor": "t", "shape": [2, 3],
                 "strides": ["z*6", "(z*5) % 6"]}],
}


def run_machinery(R):
    path = os.path.join(R.work, "machinery.json")
    with open(path, "w") as f:
        json.dump(MACHINERY, f)
    g = tg.TorchGraph(MACHINERY, source=path)
    for n in (1, 5, 8):
        # exact: these primitives are emulated as docs/hlir.md defines them
        R.check_graph(f"machinery N={n}", g, path, {"N": n}, tol=(0.0, 0.0),
                      out_dir=os.path.join(R.work, f"machinery_{n}"), truth=False)
    plans = [tg._ViewPlan(r, {"N": 5}, torch.device("cpu"), "machinery")
             for n in MACHINERY["nodes"] for r in n.get("inputs", []) if isinstance(r, dict)]
    n_grid = sum(not p.linear for p in plans)
    R.record("machinery views", n_grid >= 5 and any(p.linear for p in plans),
             f"{n_grid} of {len(plans)} views read through index grids, the rest as_strided")


def run_sdpa_shapes(R):
    """The sdpa variant hands SDPA 4-D (batch, heads, seq, dim) tensors (3-D ones select
    the math backend on a GPU), as views, and records one backend per attention node."""
    shapes = {(): (1, 1, 5, 8), (3,): (1, 3, 5, 8), (2, 3): (2, 3, 5, 8), (2, 2, 3): (4, 3, 5, 8)}
    for lead, want in shapes.items():
        x = torch.randn(*lead, 5, 8)
        y = tg.to_bhsd(x)
        ok = tuple(y.shape) == want and (len(lead) > 2 or y.data_ptr() == x.data_ptr())
        R.record(f"sdpa 4-D: lead {lead}", ok, f"{tuple(x.shape)} -> {tuple(y.shape)}")
    # a broadcast K (GQA) stays a view: no copy of K per query head
    k = torch.randn(1, 5, 8).expand(6, 5, 8)
    kb = tg.to_bhsd(k)
    R.record("sdpa 4-D: broadcast K stays a view", kb.stride(1) == 0 and kb.dim() == 4,
             f"strides {kb.stride()}")
    g = tg.TorchGraph.load(os.path.join(EXAMPLES, "causal_attention_bf16.json"))
    dims = {"S": 3}
    prog = g.prepare(dims, attention="sdpa")
    ins = [torch.randn(*shape).to(dt) for _, dt, shape in g.input_specs(dims)]
    out = prog(*ins)[0]
    be = prog.sdpa_backends
    R.record("sdpa backend recorded", len(be) == 1 and be[0][0] in ("flash", "efficient", "math")
             and tuple(out.shape) == (32, 3, 64), f"{be}, output {tuple(out.shape)}")


def bump(t, i, v):
    """t with element i increased by v (or set to NaN)."""
    t = t.clone()
    t[i] = v if v != v else t[i] + v
    return t


def run_compare_selftest(R):
    ref = torch.linspace(-1, 1, 1000)
    tol = tg.TOLERANCE["f32"]
    cases = [
        ("identical", ref.clone(), True),
        ("within tolerance", ref * (1 + 1e-7), True),
        ("one element off by 1e-3 x RMS", bump(ref, 7, 6e-4), False),
        ("NaN where there was none", bump(ref, 3, float("nan")), False),
        ("wrong shape", ref[:999], False),
        ("every element off by 2e-5 x RMS", ref + 1.2e-5, False),
        ("an infinity where there was a number", bump(ref, 5, float("inf")), False),
    ]
    for name, t, want in cases:
        got = tg.compare(t, ref, tol)["ok"]
        R.record(f"compare: {name}", got == want, f"ok={got}, expected {want}")
    # a truth never widens the bound: an anchor 1e-3 (of the RMS) off the truth still
    # allows only the f32 tolerance, and both sides' errors against the truth are reported
    truth = ref.double()
    anchor = ref + 1e-3 * torch.sign(ref) * 0.58
    for name, t, want in [("the anchor itself, off the truth", anchor.clone(), True),
                          ("within 4x the anchor's own error, beyond tol", anchor + 1.5e-3,
                           False)]:
        r = tg.compare(t, anchor, tol, truth=truth)
        reported = (abs(r["anchor_rel_rms"] - 1e-3) < 1e-4 and
                    (r["truth_rel_rms"] > 2e-3) == (not want))
        R.record(f"compare: {name}", r["ok"] == want and reported,
                 f"ok={r['ok']}, expected {want}; vs the truth: anchor "
                 f"{r['anchor_rel_rms']:.2e}, ours {r['truth_rel_rms']:.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-dump", required=True, help="the ref_dump program")
    ap.add_argument("--work", required=True, help="a folder for the files (emptied first)")
    ap.add_argument("--only", default=None, help="run only the checks whose group has this prefix")
    args = ap.parse_args()
    if not os.access(args.ref_dump, os.X_OK):
        print(f"error: {args.ref_dump} is not an executable program (build ref_dump first)")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    R = Runner(os.path.abspath(args.ref_dump), args.work)
    t0 = time.time()
    groups = [("compare", run_compare_selftest), ("machinery", run_machinery),
              ("sdpa", run_sdpa_shapes),
              ("generated", run_generated), ("examples", run_examples)]
    for name, fn in groups:
        if args.only and not name.startswith(args.only):
            continue
        t = time.time()
        fn(R)
        print(f"-- {name}: {time.time() - t:.1f} s", flush=True)
    print(f"torch {torch.__version__}, {time.time() - t0:.1f} s in all")
    for f in R.failed:
        print(f"failed: {f}")
    print(f"{R.passed} passed, {len(R.failed)} failed")
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
