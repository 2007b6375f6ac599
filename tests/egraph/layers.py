#!/usr/bin/env python3
"""Checks the layering of egraph's files (docs/architecture.md, "egraph's files").

File A depends on file B when A's object uses a symbol B's object defines (nm over the
module's static library). The files of the bottom layer (the allocation and error doors,
strings, union-find, names, provenance, scoped buffers, limits, the reader, big numbers)
must not be in any dependency cycle, and the one cycle that stays (the engine's mutually
recursive core, argued for in docs/architecture.md) must not grow past the files named
there.

usage: layers.py LIBEGRAPH.a
"""
import collections
import subprocess
import sys

BOTTOM = {"eg_mem", "eg_err", "eg_str", "eg_uf", "eg_names", "eg_origin", "eg_scoped",
          "eg_limit", "eg_sexp", "eg_big"}
CORE = {"eg_api", "eg_cmd", "eg_compile", "eg_compile_act", "eg_cont", "eg_cont_prim",
        "eg_decl", "eg_exec", "eg_extract", "eg_prim", "eg_rebuild", "eg_table"}


def graph(lib):
    out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True, check=True).stdout
    defs, uses = {}, collections.defaultdict(set)
    for line in out.splitlines():
        where, _, rest = line.rpartition(":")
        obj = where.rsplit(":", 1)[-1].replace(".c.o", "").replace(".o", "")
        p = rest.split()
        if len(p) == 3 and p[1] in "TDBR":
            defs[p[2]] = obj
        elif len(p) == 2 and p[0] == "U":
            uses[obj].add(p[1])
        elif p:
            uses.setdefault(obj, set())
    g = {o: {defs[s] for s in ss if s in defs and defs[s] != o} for o, ss in uses.items()}
    return g


def sccs(g):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    g = graph(sys.argv[1])
    missing = BOTTOM - set(g)
    if missing:
        print("layers: files not in the library: %s" % ", ".join(sorted(missing)))
        return 1
    bad = 0
    for comp in sccs(g):
        print("layers: cycle of %d files: %s" % (len(comp), " ".join(sorted(comp))))
        if comp & BOTTOM:
            print("layers: FAILED: bottom-layer files in a cycle: %s" %
                  " ".join(sorted(comp & BOTTOM)))
            bad = 1
        if comp - CORE:
            print("layers: FAILED: the cycle grew past the argued core: %s" %
                  " ".join(sorted(comp - CORE)))
            bad = 1
    for f in sorted(BOTTOM):
        print("layers: %s -> %s" % (f, " ".join(sorted(g[f])) or "(nothing)"))
    return bad


if __name__ == "__main__":
    sys.exit(main())
