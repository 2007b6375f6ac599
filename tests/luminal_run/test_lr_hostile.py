#!/usr/bin/env python3
"""test_lr_hostile.py - luminal_run on hostile saved programs and input files (ctest
luminal_run_hostile; issue 21). Each case is a fault that a careless or hostile user hit:
the tool must refuse it with a clear message and exit 1, never crash, write outside the
directory it was given, or read without bound.

    test_lr_hostile.py --tool build/tools/luminal_run/luminal_run --prog DIR --work WORK

DIR is the program of data/mixed.json saved by the luminal_run_make fixture (inputs x, w,
h, table, ids; outputs s, mm, e, neg). Needs no numpy.
"""

import argparse
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import time

ARGS = None
CHECKS = 0
FAILED = []


def fail(msg):
    """Every case runs: a failure is kept and reported at the end (exit 1), so one run
    shows which faults are back."""
    print(f"FAIL: {msg}")
    FAILED.append(msg)


def ok(cond, msg):
    global CHECKS
    CHECKS += 1
    if not cond:
        fail(msg)
    return cond


def bounded():
    """The tool runs with its memory capped at 4 GiB, so that a fault that reads without
    bound fails this test instead of taking the machine's memory: an address-space limit
    for a plain build, the sanitizer's largest allocation for an ASan one (which reserves
    terabytes of address space and cannot run under an address-space limit)."""
    env = dict(os.environ)
    with open(ARGS.tool, "rb") as f:
        asan = b"__asan_init" in f.read()
    if asan:
        extra = "allocator_may_return_null=1:max_allocation_size_mb=4096"
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":" + extra).lstrip(":")
        return env, None
    return env, lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def run(*argv, timeout=60):
    env, limit = bounded()
    t0 = time.monotonic()
    try:
        r = subprocess.run([ARGS.tool, *argv], capture_output=True, text=True, timeout=timeout,
                           env=env, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return -999, "", f"(timed out after {timeout} s)", time.monotonic() - t0
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def refused(argv, *needles, timeout=30):
    """The tool exits 1 with every needle in stderr (no crash: a signal is a negative code,
    a sanitizer report is not a refusal)."""
    rc, out, err, secs = run(*argv, timeout=timeout)
    if not ok(rc == 1, f"luminal_run {' '.join(argv)}: exit {rc}, expected 1 (refused)\n"
              f"{err[-1500:]}"):
        return err, secs
    ok("runtime error" not in err and "Sanitizer" not in err,
       f"luminal_run {' '.join(argv)}: a sanitizer report:\n{err[-3000:]}")
    for s in needles:
        ok(s in err, f"luminal_run {' '.join(argv)}: stderr lacks {s!r}:\n{err}")
    return err, secs


def w(*parts):
    return os.path.join(ARGS.work, *parts)


def edited_program(tag, edit_plan=None, edit_llir=None):
    """A copy of the program with plan.json and llir.json edited, and the llir hash in
    plan.json brought up to date (the loader names the file's real hash when it differs),
    so that the loader really reads the edited llir.json."""
    d = w(tag)
    shutil.copytree(ARGS.prog, d)
    os.remove(os.path.join(d, "graph.json"))  # the program alone: the loader is under test
    plan = json.load(open(os.path.join(d, "plan.json")))
    llir = json.load(open(os.path.join(d, "llir.json")))
    if edit_plan:
        edit_plan(plan)
    if edit_llir:
        edit_llir(llir)
        json.dump(llir, open(os.path.join(d, "llir.json"), "w"))
    json.dump(plan, open(os.path.join(d, "plan.json"), "w"))
    _, _, err, _ = run(d, "--quiet")
    m = re.search(r"its XXH3-128 is ([0-9a-f]{32})", err)
    if m:
        plan["llir"]["xxh3_128"] = m.group(1)
        json.dump(plan, open(os.path.join(d, "plan.json"), "w"))
    return d


def llir_node(llir, kind, name):
    for n in llir["nodes"]:
        if n["kind"] == kind and n.get("prim", {}).get("name") == name:
            return n
    print(f"FAIL: llir.json has no {kind} '{name}'")
    sys.exit(1)


def write_st(path, entries, data):
    text = json.dumps(entries).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ARGS = ap.parse_args()
    shutil.rmtree(ARGS.work, ignore_errors=True)
    os.makedirs(ARGS.work)
    P = ARGS.prog

    # fault 1: an llir.json with "nodes": [] (its hash updated) is refused by the loader,
    # not run (it crashed in describe_outputs); so is one that is another program's
    def no_nodes(l):
        l["nodes"] = []
    d = edited_program("empty_llir", edit_llir=no_nodes)
    refused([d, "--quiet"], "LLIR graph has no nodes")

    def rename_llir_input(l):
        llir_node(l, "input", "x")["prim"]["name"] = "y"
    d = edited_program("foreign_llir", edit_llir=rename_llir_input)
    refused([d, "--quiet"], "input 0 is 'x'", "'y'", "not this plan's")

    def no_outputs(p):
        p["outputs"] = []
    d = edited_program("no_outputs", edit_plan=no_outputs)
    refused([d, "--quiet"], "program")

    # fault 9: two inputs of one name (plan and LLIR agreeing) are refused
    def dup_plan(p):
        p["inputs"][2]["name"] = "x"

    def dup_llir(l):
        llir_node(l, "input", "h")["prim"]["name"] = "x"
    d = edited_program("dup_inputs", edit_plan=dup_plan, edit_llir=dup_llir)
    refused([d, "--quiet"], "inputs 0 and 2 are both named 'x'")

    def dup_out_plan(p):
        p["outputs"][1]["name"] = "s"

    def dup_out_llir(l):
        llir_node(l, "output", "mm")["prim"]["name"] = "s"
    d = edited_program("dup_outputs", edit_plan=dup_out_plan, edit_llir=dup_out_llir)
    refused([d, "--quiet"], "outputs 0 and 1 are both named 's'")

    # fault 10: names that are paths are refused, and nothing is written outside the
    # directories given
    for tag, side, idx, kind, old, new in (
            ("trav_out", "outputs", 0, "output", "s", "../escaped_out"),
            ("trav_in", "inputs", 0, "input", "x", "../escaped_in"),
            ("abs_out", "outputs", 2, "output", "e", "/tmp/lr_hostile_abs"),
            ("dotdot_in", "inputs", 1, "input", "w", "..")):
        def ep(p, side=side, idx=idx, new=new):
            p[side][idx]["name"] = new

        def el(l, kind=kind, old=old, new=new):
            llir_node(l, kind, old)["prim"]["name"] = new
        d = edited_program(tag, edit_plan=ep, edit_llir=el)
        refused([d, "--outputs", w(tag + "_o", "sub"), "--write-inputs", w(tag + "_i", "sub"),
                 "--quiet"], "is not a tensor name")
    ok(not any(f.startswith("escaped") for f in os.listdir(w())) and
       not os.path.exists(w("trav_out_o", "escaped_out.npy")) and
       not os.path.exists("/tmp/lr_hostile_abs.npy"), "nothing was written outside")

    # fault 4: unbounded reads. x.npy a link to /dev/zero: refused after reading at most
    # what an .npy of x's shape can hold, quickly
    ind = w("in")
    rc, _, err, _ = run(P, "--write-inputs", ind, "--quiet")
    ok(rc == 0, f"--write-inputs: {err}")
    os.remove(os.path.join(ind, "x.npy"))
    os.symlink("/dev/zero", os.path.join(ind, "x.npy"))
    _, secs = refused([P, "--inputs", ind, "--quiet"], "x.npy", "input 'x'", "limit")
    ok(secs < 30, f"refusing x.npy -> /dev/zero took {secs:.1f} s")
    # a regular .npy far larger than x can be is refused from its size
    big = w("in_big")
    shutil.copytree(w("in"), big, symlinks=True)
    os.remove(os.path.join(big, "x.npy"))
    with open(os.path.join(big, "x.npy"), "wb") as f:
        f.truncate(8 << 30)  # sparse: 8 GiB
    refused([P, "--inputs", big, "--quiet"], "x.npy", "8589934592 bytes", "limit")
    # safetensors that are /dev/zero, as --weights and as --inputs
    os.symlink("/dev/zero", w("zero.safetensors"))
    _, secs = refused([P, "--weights", w("zero.safetensors"), "--quiet"], "zero.safetensors",
                      "safetensors header")
    ok(secs < 30, f"refusing --weights /dev/zero took {secs:.1f} s")
    refused([P, "--inputs", w("zero.safetensors"), "--quiet"], "zero.safetensors")
    # a header that puts data far past the file's end is refused before the data is read
    write_st(w("lying.safetensors"),
             {"x": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 4 << 40]}}, b"")
    refused([P, "--weights", w("lying.safetensors"), "--quiet"], "lying.safetensors",
            "truncated")

    # fault 13: overlapping or identical data_offsets are refused, as the reference
    # loader refuses them; so are gaps and bytes after the last tensor
    t = {"dtype": "F32", "shape": [6, 3]}
    write_st(w("same.safetensors"),
             {"table": dict(t, data_offsets=[0, 72]), "unused": dict(t, data_offsets=[0, 72])},
             b"\0" * 72)
    refused([P, "--weights", w("same.safetensors"), "--quiet"], "same.safetensors", "overlap")
    write_st(w("overlap.safetensors"),
             {"table": dict(t, data_offsets=[0, 72]), "unused": dict(t, data_offsets=[8, 80])},
             b"\0" * 80)
    refused([P, "--weights", w("overlap.safetensors"), "--quiet"], "'table' and 'unused' overlap")
    write_st(w("gap.safetensors"), {"table": dict(t, data_offsets=[8, 80])}, b"\0" * 80)
    refused([P, "--weights", w("gap.safetensors"), "--quiet"], "belong to no tensor")
    write_st(w("tail.safetensors"), {"table": dict(t, data_offsets=[0, 72])}, b"\0" * 80)
    refused([P, "--weights", w("tail.safetensors"), "--quiet"], "longer than its header says")
    write_st(w("good.safetensors"), {"table": dict(t, data_offsets=[0, 72]),
                                     "empty": {"dtype": "F32", "shape": [0],
                                               "data_offsets": [72, 72]}}, b"\0" * 72)
    rc, _, err, _ = run(P, "--weights", w("good.safetensors"), "--quiet")
    ok(rc == 0, f"a well-formed safetensors file is taken: {err}")
    if FAILED:
        print(f"test_lr_hostile: {len(FAILED)} of {CHECKS} checks failed")
        return 1
    print(f"test_lr_hostile: {CHECKS} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
