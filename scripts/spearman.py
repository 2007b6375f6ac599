#!/usr/bin/env python3
"""spearman.py - how well the cost model ranks what the GPU measured.

    python3 scripts/spearman.py DIR [DIR ...]

Finds every search.jsonl under the folders (a luminal_search --out DIR, the folders of
scripts/search_gpu.sh or bench/e2e/run_e2e.py), takes every candidate that was
measured on the GPU and has a modelled time, and prints Spearman's rank correlation
between modelled_ms and measured ms, per search and pooled over all of them (ties get
mean ranks; plain python3, no numpy).

Two samples: "complete" holds the candidates timed in full (status ok; the reference
lowering included, the check replays excluded); "with probes" adds those stopped early
by the cutoff (status too-slow), whose time is the median of a 3-replay probe. The
complete sample alone is truncated from above (the slowest candidates are the ones the
cutoff stops), so both are reported. Exits 1 when no log holds a measured candidate.
"""
import json
import math
import os
import sys


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    if len(x) < 3:
        return float("nan")
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def logs(roots):
    for root in roots:
        for d, _, files in sorted(os.walk(root)):
            if "search.jsonl" in files:
                yield os.path.join(d, "search.jsonl")


def read(path):
    """(name, complete pairs, probe pairs, statuses) of one log; pairs are (modelled, ms)."""
    complete, probes, statuses, measured = [], [], {}, True
    for line in open(path):
        c = json.loads(line)
        if c.get("type") == "header":
            measured = bool(c.get("measured"))
            name = os.path.splitext(os.path.basename(c.get("graph", path)))[0]
        if c.get("type") != "candidate" or not c.get("evaluated"):
            continue
        statuses[c["status"]] = statuses.get(c["status"], 0) + 1
        if c.get("role") == "check" or not c.get("ms") or not c.get("modelled_ms"):
            continue
        pair = (c["modelled_ms"], c["ms"])
        if c["status"] == "ok":
            complete.append(pair)
        elif c["status"] == "too-slow":
            probes.append(pair)
    return (name if measured else None), complete, probes, statuses


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    pooled_c, pooled_p, statuses, per = [], [], {}, []
    for path in logs(sys.argv[1:]):
        name, complete, probes, st = read(path)
        if name is None:
            continue  # ranked by the cost model: nothing measured to compare with
        for k, v in st.items():
            statuses[k] = statuses.get(k, 0) + v
        both = complete + probes
        rho_c = spearman(*zip(*complete)) if len(complete) >= 3 else float("nan")
        rho_b = spearman(*zip(*both)) if len(both) >= 3 else float("nan")
        ratio = sorted(b / a for a, b in both)
        med = ratio[len(ratio) // 2] if ratio else float("nan")
        per.append((name, len(complete), rho_c, len(both), rho_b, med))
        pooled_c += complete
        pooled_p += both
    if not per:
        print("spearman.py: no search log with measured candidates under " + " ".join(sys.argv[1:]),
              file=sys.stderr)
        return 1
    print("== the cost model against the GPU: Spearman's rank correlation, modelled vs measured ms")
    print(f"  {'search':30s} {'complete':>8s} {'rho':>6s} {'+probes':>8s} {'rho':>6s} "
          f"{'measured/modelled median':>25s}")
    for name, nc, rc, nb, rb, med in per:
        print(f"  {name:30s} {nc:8d} {rc:6.3f} {nb:8d} {rb:6.3f} {med:25.3g}")
    def summary(label, pairs, idx):
        finite = [p[idx] for p in per if not math.isnan(p[idx])]
        rho = spearman(*zip(*pairs)) if len(pairs) >= 3 else float("nan")
        print(f"  {label}: {len(pairs)} candidates, rho {rho:.3f} pooled over the searches; "
              f"mean of per-search rho {sum(finite) / max(len(finite), 1):.3f} over "
              f"{len(finite)} searches")
    summary("complete", pooled_c, 2)
    summary("with probes", pooled_p, 4)
    print(f"  results by status: {dict(sorted(statuses.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
