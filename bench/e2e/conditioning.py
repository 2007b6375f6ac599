#!/usr/bin/env python3
"""conditioning.py - how well-conditioned a graph is on its seeded inputs, on the CPU.

    conditioning.py --ref-dump build/bench/e2e/ref_dump --graph G.json [--dim S=16]
                    [--work DIR] [--no-reference] [--json]

Runs G on the CPU reference runtime through ref_dump (our seeded inputs, each input
filled by hl_graph_fill_input: its "init" range or the default), computes G in f64 from
the same inputs (torch_graph's truth) and eager torch in the graph's own dtypes, and
prints:

  scores   per attention node: the standard deviation and the largest magnitude of its
           scaled scores q k^T * scale over the (query, key) pairs it keeps (the causal
           mask's), and the mean over rows of the largest softmax weight (1.0 = one-hot),
           all in f64
  outputs  per output: the reference's error against f64 and eager torch's
           (rel_rms = RMS(x - f64) / RMS(f64), rel_max = max|x - f64| / RMS(f64), as
           torch_graph.compare measures), and the reference against eager torch

examples/graphs/README.md ("Conditioning") gives these numbers for the bundled examples.
--no-reference skips ref_dump (torch alone: fast at the profile sizes) and --json prints
one JSON object instead of the table. Needs torch and numpy.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_graph as tg  # noqa: E402


def last_dim(g, tensor, dims):
    """The last dim of a tensor of g (an input or a node) at dims: g run in f64 on zeros
    with that tensor as its output."""
    zeros = [torch.zeros(sh, dtype=torch.float64 if dt.is_floating_point else dt)
             for _, dt, sh in g.input_specs(dims)]
    doc = json.loads(json.dumps(g.doc))
    doc["outputs"] = [{"name": "probe", "tensor": tensor}]
    probe = tg.TorchGraph(doc, source="probe").widened("f64", keep_narrow=True)
    return probe.prepare(dims)(*zeros)[0].shape[-1]


def with_scores(g, dims):
    """g's document with one more output per attention node: its scaled scores
    q k^T * scale (the node's scale, by default 1/sqrt(d) with d the last dim of q), named
    "scores:<node>"; returns (doc, [(node name, causal)])."""
    doc = json.loads(json.dumps(g.doc))
    found, extra = [], []
    for n in doc["nodes"]:
        if n["op"] != "attention":
            continue
        q, k = n["inputs"][0], n["inputs"][1]
        scale = n.get("scale", 1.0 / last_dim(g, q, dims) ** 0.5)
        b = f"__cond_{n['name']}"
        extra += [
            {"name": b + "_kt", "op": "transpose", "inputs": [k]},
            {"name": b + "_s", "op": "matmul", "inputs": [q, b + "_kt"]},
            {"name": b + "_c", "op": "constant", "value": scale},
            {"name": b + "_ss", "op": "mul", "inputs": [b + "_s", b + "_c"]},
        ]
        doc["outputs"].append({"name": f"scores:{n['name']}", "tensor": b + "_ss"})
        found.append((n["name"], bool(n.get("causal", False))))
    doc["nodes"] += extra
    return doc, found


def score_stats(s, causal):
    """(std, max |s|, mean of the rows' largest softmax weight) over the kept pairs."""
    s = s.to(torch.float64)
    qn, kn = s.shape[-2], s.shape[-1]
    keep = torch.ones(qn, kn, dtype=torch.bool)
    if causal:
        i = torch.arange(qn).unsqueeze(1)
        j = torch.arange(kn).unsqueeze(0)
        keep = j <= i + (kn - qn)
    kept = s[..., keep]
    masked = s.masked_fill(~keep, -float("inf"))
    p = torch.softmax(masked, dim=-1)
    return float(kept.std(unbiased=False)), float(kept.abs().max()), float(p.amax(-1).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-dump", help="the ref_dump program (not needed with --no-reference)")
    ap.add_argument("--graph", required=True)
    ap.add_argument("--dim", action="append", default=[], help="NAME=V (default: profile)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=None, help="the ref_dump folder (default: a temporary one)")
    ap.add_argument("--no-reference", action="store_true", help="torch only (inputs from "
                    "ref_dump --no-run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    g = tg.TorchGraph.load(args.graph)
    over = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    dims = g.dim_values(over)
    work = args.work or tempfile.mkdtemp(prefix="cond_")
    cmd = [args.ref_dump, "--graph", args.graph, "--out", work, "--seed", str(args.seed)]
    for k, v in over.items():
        cmd += ["--dim", f"{k}={v}"]
    if args.no_reference:
        cmd.append("--no-run")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ref_dump failed: {r.stderr.strip()}")
    with open(os.path.join(work, "manifest.json")) as f:
        man = json.load(f)
    specs = g.input_specs(dims)
    ins = [tg.load_npy_as(os.path.join(work, i["file"]), dt)
           for i, (_, dt, _) in zip(man["inputs"], specs)]
    res = {"graph": os.path.basename(args.graph), "dims": dims, "scores": {}, "outputs": {}}

    doc, found = with_scores(g, dims)
    sg = tg.TorchGraph(doc, source=args.graph + " (with scores)")
    truth = sg.truth(dims, ins)
    n_out = len(g.outputs)
    for (name, causal), s in zip(found, truth[n_out:]):
        std, mx, pmax = score_stats(s, causal)
        res["scores"][name] = {"std": std, "max_abs": mx, "mean_max_weight": pmax}
    eager = g.prepare(dims)(*ins)
    for i, name in enumerate(g.output_names):
        row = {}
        t = truth[i]
        e = tg.compare(eager[i], t, (float("inf"), float("inf")))
        row["eager_vs_f64"] = (e["rel_rms"], e["rel_max"])
        row["rms"] = e["rms"]
        if not args.no_reference:
            spec = man["outputs"][i]
            ours = torch.from_numpy(np.load(os.path.join(work, spec["file"])))
            o = tg.compare(ours, t, (float("inf"), float("inf")))
            oe = tg.compare(ours, eager[i], (float("inf"), float("inf")))
            row["ours_vs_f64"] = (o["rel_rms"], o["rel_max"])
            row["ours_vs_eager"] = (oe["rel_rms"], oe["rel_max"])
        res["outputs"][name] = row
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"{res['graph']} at {dims}, seed {args.seed}")
    for name, s in res["scores"].items():
        print(f"  scores of '{name}': std {s['std']:.3g}, max |s| {s['max_abs']:.3g}, mean "
              f"largest softmax weight {s['mean_max_weight']:.3f}")
    for name, row in res["outputs"].items():
        line = f"  output '{name}' (RMS {row['rms']:.3g}):"
        if "ours_vs_f64" in row:
            line += (f" reference vs f64 {row['ours_vs_f64'][0]:.2e} rms / "
                     f"{row['ours_vs_f64'][1]:.2e} max;")
        line += (f" eager torch vs f64 {row['eager_vs_f64'][0]:.2e} / "
                 f"{row['eager_vs_f64'][1]:.2e}")
        if "ours_vs_eager" in row:
            line += (f"; reference vs eager {row['ours_vs_eager'][0]:.2e} / "
                     f"{row['ours_vs_eager'][1]:.2e}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
