#!/usr/bin/env python3
"""test_luminal_run.py - luminal_run end to end on a saved program (ctest luminal_run_cli).

    test_luminal_run.py --tool build/tools/luminal_run/luminal_run --prog DIR --work WORK

DIR is the program of data/mixed.json saved by the luminal_run_make fixture (inputs x
bf16 [B, 8], w bf16 [8, 4], h f16 [B, 4], table f32 [6, 3], ids int [B]; outputs s f16,
mm bf16, e f32, neg bool; B = 5 at its profile). Exit 0 when every check passes, 1 on the
first failure (saying which), 77 without numpy.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("test_luminal_run: numpy is not available: skipped")
    sys.exit(77)

INPUTS = {"x": ("bf16", (5, 8)), "w": ("bf16", (8, 4)), "h": ("f16", (5, 4)),
          "table": ("f32", (6, 3)), "ids": ("int", (5,))}
OUTPUTS = {"s": ("f16", (5, 4)), "mm": ("bf16", (5, 4)), "e": ("f32", (5, 3)),
           "neg": ("bool", (5, 3))}

ARGS = None
CHECKS = 0


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def ok(cond, msg):
    global CHECKS
    CHECKS += 1
    if not cond:
        fail(msg)


def run(*argv, rc=0):
    """Runs the tool; asserts its exit status; returns (stdout, stderr)."""
    r = subprocess.run([ARGS.tool, *argv], capture_output=True, text=True, timeout=120)
    if r.returncode != rc:
        fail(f"luminal_run {' '.join(argv)}: exit {r.returncode}, expected {rc}\n"
             f"stdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-2000:]}")
    return r.stdout, r.stderr


def w(*parts):
    return os.path.join(ARGS.work, *parts)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def same_outputs(a, b, what):
    for name in OUTPUTS:
        ok(read_bytes(os.path.join(a, name + ".npy")) == read_bytes(os.path.join(b, name + ".npy")),
           f"{what}: output {name} differs between {a} and {b}")


def bf16_bits(x):
    """f32 values that are exactly bf16 -> their bf16 bits (uint16)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    ok(bool(np.all((u & 0xFFFF) == 0)), "the seeded bf16 values are exact in bf16")
    return (u >> 16).astype(np.uint16)


def write_safetensors(path, tensors, header_patch=None, cut=0):
    """tensors: name -> (safetensors dtype, shape, raw bytes). The format: 8-byte
    little-endian header length, JSON header, data."""
    header, data, off = {"__metadata__": {"by": "test_luminal_run"}}, b"", 0
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    if header_patch:
        header_patch(header)
    text = json.dumps(header).encode()
    blob = struct.pack("<Q", len(text)) + text + data
    with open(path, "wb") as f:
        f.write(blob[:len(blob) - cut] if cut else blob)


def read_safetensors(path):
    blob = read_bytes(path)
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    return header, blob[8 + n:]


def expect_error(argv, *needles):
    _, err = run(*argv, rc=1)
    for s in needles:
        ok(s in err, f"luminal_run {' '.join(argv)}: stderr lacks {s!r}:\n{err}")
    return err


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

    # --- the e2e suite's two calls (bench/e2e/run_e2e.py) and the round trip ---
    out, err = run(P, "--write-inputs", w("in"), "--seed", "0")
    ok("inputs written" in out and not os.path.exists(w("out")), "--write-inputs alone writes")
    for name, (dt, shape) in INPUTS.items():
        a = np.load(w("in", name + ".npy"))
        want = {"int": np.int32, "bool": np.bool_}.get(dt, np.float32)
        ok(a.dtype == want and a.shape == shape,
           f"input {name}: {a.dtype}{a.shape}, expected {np.dtype(want)}{shape}")
    ok(bool(np.all((np.load(w("in", "ids.npy")) >= 0) & (np.load(w("in", "ids.npy")) < 6))),
       "ids follow their init range [0, 6)")
    ok(float(np.abs(np.load(w("in", "w.npy"))).max()) <= 0.5, "w follows its init range")
    run(P, "--outputs", w("out_seeded"), "--seed", "0", "--quiet")
    doc = json.loads(run(P, "--inputs", w("in"), "--outputs", w("out_in"), "--bench", "--json",
                         "--quiet")[0])
    same_outputs(w("out_seeded"), w("out_in"), "--write-inputs then --inputs")
    for k in ("single_call_ms", "back_to_back_ms", "single_call_io_ms"):
        ok(isinstance(doc.get(k), float) and doc[k] > 0, f"--bench --json: {k} = {doc.get(k)}")
    ok(doc["backend"] == "cpu" and doc["bench"]["backend"] == "cpu", "--bench on the CPU says cpu")
    ok(doc["ok"] is True and [o["name"] for o in doc["outputs"]] == list(OUTPUTS),
       "the JSON lists the outputs")
    ok(all(o["file"] == o["name"] + ".npy" for o in doc["outputs"]), "outputs name their files")
    ok(doc["dims"] == {"B": 5} and doc["inputs"][0]["source"].endswith("x.npy"),
       "the JSON gives dims and input sources")
    # another seed gives other inputs and outputs
    run(P, "--outputs", w("out_seed1"), "--seed", "1", "--quiet")
    ok(read_bytes(w("out_seed1", "s.npy")) != read_bytes(w("out_seeded", "s.npy")),
       "--seed 1 differs from --seed 0")

    # --- the outputs in numpy ---
    for name, (dt, shape) in OUTPUTS.items():
        a = np.load(w("out_in", name + ".npy"))
        want = np.bool_ if dt == "bool" else np.float32
        ok(a.dtype == want and a.shape == shape,
           f"output {name}: {a.dtype}{a.shape}, expected {np.dtype(want)}{shape}")
    e = np.load(w("out_in", "e.npy"))
    table, ids = np.load(w("in", "table.npy")), np.load(w("in", "ids.npy"))
    ok(np.array_equal(e, table[ids]), "output e is the embedding of the inputs")
    ok(np.array_equal(np.load(w("out_in", "neg.npy")), e < 0), "output neg is e < 0")
    x = np.load(w("in", "x.npy")).astype(np.float64)
    wt = np.load(w("in", "w.npy")).astype(np.float64)
    mm = np.load(w("out_in", "mm.npy"))
    ok(float(np.abs(mm - x @ wt).max()) <= 2 ** -7 * max(1.0, float(np.abs(x @ wt).max())),
       "output mm is x @ w within bf16 rounding")

    # --npy-native: f16 as '<f2', bf16 as raw bits; read back as inputs too
    run(P, "--inputs", w("in"), "--outputs", w("out_native"), "--npy-native",
        "--write-inputs", w("in_native"), "--quiet")
    s16 = np.load(w("out_native", "s.npy"))
    ok(s16.dtype == np.float16 and np.array_equal(s16.astype(np.float32),
                                                  np.load(w("out_in", "s.npy"))),
       "--npy-native writes f16 as float16, the same values")
    mmv = np.load(w("out_native", "mm.npy"))
    ok(mmv.dtype == np.dtype("V2") and mmv.shape == (5, 4), "--npy-native writes bf16 as '<V2'")
    bits = np.frombuffer(mmv.tobytes(), dtype=np.uint16).astype(np.uint32) << 16
    ok(np.array_equal(bits.view(np.float32).reshape(5, 4), np.load(w("out_in", "mm.npy"))),
       "the '<V2' bits are the bf16 values")
    ok(np.load(w("in_native", "x.npy")).dtype == np.dtype("V2"), "native inputs are '<V2'")
    run(P, "--inputs", w("in_native"), "--outputs", w("out_from_native"), "--quiet")
    same_outputs(w("out_seeded"), w("out_from_native"), "native inputs")

    # --- --check ---
    out, _ = run(P, "--inputs", w("in"), "--check")
    for name in OUTPUTS:
        ok(f"check {name}: max error" in out and "tolerance" in out, f"--check prints {name}")
    ok(out.count(": ok") == len(OUTPUTS), f"--check: every output ok:\n{out}")
    doc = json.loads(run(P, "--check", "--json", "--quiet", "--seed", "3")[0])
    ok(doc["check"]["ok"] is True and all(o["check"]["ok"] for o in doc["outputs"]),
       "--check --json says ok per output")
    ok(all("max_err" in o["check"] and "tol" in o["check"] for o in doc["outputs"]),
       "--check --json gives errors and tolerances")
    # a program whose outputs disagree: graph.json swapped for one that computes else
    bad = w("prog_bad")
    shutil.copytree(P, bad)
    g = json.load(open(os.path.join(P, "graph.json")))
    for n in g["nodes"]:
        if n["name"] == "s":
            n["op"] = "sub"
    json.dump(g, open(os.path.join(bad, "graph.json"), "w"))
    out, err = run(bad, "--check", rc=1)
    ok("check s:" in out and "FAIL" in out and "--check" in err, "--check fails on a disagreement")
    ok("check e:" in out and out.count(": ok") == len(OUTPUTS) - 1, "the other outputs still ok")
    # --check without graph.json: a clear error
    nog = w("prog_nograph")
    shutil.copytree(P, nog)
    os.remove(os.path.join(nog, "graph.json"))
    expect_error([nog, "--check"], "graph.json", "--check needs")
    out, _ = run(nog, "--quiet")  # without it, seeded inputs still work (no "init")
    ok("no graph.json" in out, "seeded without graph.json says so")

    # --- dims ---
    out, _ = run(P, "--dim", "B=3", "--check", "--write-inputs", w("in_b3"))
    ok("dims B=3" in out and out.count(": ok") == len(OUTPUTS), "--dim B=3 --check")
    ok(np.load(w("in_b3", "x.npy")).shape == (3, 8), "--dim B=3 sizes the inputs")
    expect_error([P, "--inputs", w("in_b3")], "x.npy", "input 'x'", "[5, 8]", "[3, 8]", "--dim")
    run(P, "--inputs", w("in_b3"), "--dim", "B=3", "--quiet")
    expect_error([P, "--dim", "B=99"], "B")
    expect_error([P, "--dim", "Q=3"], "Q")

    # --- corrupted inputs: clear errors naming the file and the input ---
    def corrupt(tag, name, fn):
        d = w("in_" + tag)
        shutil.copytree(w("in"), d)
        fn(os.path.join(d, name + ".npy"))
        return d

    d = corrupt("shape", "x", lambda p: np.save(p, np.zeros((5, 7), np.float32)))
    expect_error([P, "--inputs", d], "x.npy", "input 'x'", "[5, 8]", "[5, 7]")
    d = corrupt("rank", "ids", lambda p: np.save(p, np.zeros((5, 1), np.int32)))
    expect_error([P, "--inputs", d], "ids.npy", "[5]", "[5, 1]")
    d = corrupt("dtype", "table", lambda p: np.save(p, np.zeros((6, 3), np.float64)))
    expect_error([P, "--inputs", d], "table.npy", "input 'table'", "f32", "'<f8'")
    d = corrupt("dtype_int", "ids", lambda p: np.save(p, np.zeros(5, np.int64)))
    expect_error([P, "--inputs", d], "ids.npy", "input 'ids'", "int", "'<i8'")
    d = corrupt("inexact", "x", lambda p: np.save(p, np.full((5, 8), 0.1, np.float32)))
    expect_error([P, "--inputs", d], "x.npy", "not exactly a bf16")

    def truncate(p):
        b = read_bytes(p)
        open(p, "wb").write(b[:-9])
    d = corrupt("trunc", "h", truncate)
    expect_error([P, "--inputs", d], "h.npy", "truncated")

    def cut_header(p):
        b = read_bytes(p)
        open(p, "wb").write(b[:40])
    d = corrupt("trunc_header", "h", cut_header)
    expect_error([P, "--inputs", d], "h.npy", "truncated")

    def longer(p):
        open(p, "ab").write(b"\0\0\0\0")
    d = corrupt("longer", "table", longer)
    expect_error([P, "--inputs", d], "table.npy", "longer than its header")
    d = corrupt("magic", "w", lambda p: open(p, "wb").write(b"not numpy at all"))
    expect_error([P, "--inputs", d], "w.npy", "not a .npy file")
    d = corrupt("fortran", "x", lambda p: np.save(p, np.asfortranarray(np.zeros((5, 8),
                                                                            np.float32))))
    expect_error([P, "--inputs", d], "x.npy", "Fortran")
    d = corrupt("bigend", "table", lambda p: np.save(p, np.zeros((6, 3), ">f4")))
    expect_error([P, "--inputs", d], "table.npy", "big-endian")
    d = corrupt("bool", "ids", lambda p: None)
    os.remove(os.path.join(d, "h.npy"))
    expect_error([P, "--inputs", d], "input 'h' is not given", "h.npy")
    expect_error([P, "--inputs", w("nowhere")], "not a directory")
    expect_error([P, "--inputs", w("x.npz")], ".npz")

    # --- safetensors by name ---
    xin, win = np.load(w("in", "x.npy")), np.load(w("in", "w.npy"))
    hin, tin = np.load(w("in", "h.npy")), np.load(w("in", "table.npy"))
    tens = {"x": ("BF16", xin.shape, bf16_bits(xin).tobytes()),
            "h": ("F16", hin.shape, hin.astype(np.float16).tobytes()),
            "table": ("F32", tin.shape, tin.tobytes()),
            "ids": ("I32", ids.shape, ids.astype(np.int32).tobytes()),
            "w": ("F32", win.shape, win.tobytes())}  # bf16 values given as F32: exact
    write_safetensors(w("all.safetensors"), tens)
    run(P, "--inputs", w("all.safetensors"), "--outputs", w("out_st"), "--quiet")
    same_outputs(w("out_seeded"), w("out_st"), "--inputs FILE.safetensors")
    # --weights for w, the rest from .npy files
    write_safetensors(w("w.safetensors"), {"w": ("BF16", win.shape, bf16_bits(win).tobytes()),
                                           "unused": ("F32", (2,), b"\0" * 8)})
    d = w("in_no_w")
    shutil.copytree(w("in"), d)
    os.remove(os.path.join(d, "w.npy"))
    _, err = run(P, "--weights", w("w.safetensors"), "--inputs", d, "--outputs", w("out_wt"))
    same_outputs(w("out_seeded"), w("out_wt"), "--weights + --inputs")
    ok("not inputs of the program" in err, "an unused tensor is said")
    expect_error([P, "--weights", w("w.safetensors"), "--inputs", w("in")], "input 'w'", "both")
    # --weights alone: the rest seeded (and said)
    _, err = run(P, "--weights", w("w.safetensors"), "--outputs", w("out_w_only"))
    ok("seeded: x, h, table, ids" in err, f"--weights alone says what is seeded: {err}")
    same_outputs(w("out_seeded"), w("out_w_only"), "--weights alone")
    # wrong dtype, wrong shape, malformed files
    write_safetensors(w("bad_dtype.safetensors"),
                      {**tens, "table": ("F64", (6, 3), tin.astype(np.float64).tobytes())})
    expect_error([P, "--inputs", w("bad_dtype.safetensors")], "tensor 'table'", "'F64'", "f32")
    write_safetensors(w("bad_shape.safetensors"), {**tens, "w": ("F32", (4, 8), win.tobytes())})
    expect_error([P, "--inputs", w("bad_shape.safetensors")], "tensor 'w'", "[8, 4]", "[4, 8]")
    write_safetensors(w("trunc.safetensors"), tens, cut=5)
    expect_error([P, "--inputs", w("trunc.safetensors")], "trunc.safetensors", "truncated")

    def offsets(h):
        h["table"]["data_offsets"][1] -= 4
    write_safetensors(w("offsets.safetensors"), tens, header_patch=offsets)
    expect_error([P, "--inputs", w("offsets.safetensors")], "tensor 'table'", "data_offsets")

    def no_shape(h):
        del h["x"]["shape"]
    write_safetensors(w("noshape.safetensors"), tens, header_patch=no_shape)
    expect_error([P, "--inputs", w("noshape.safetensors")], "tensor 'x'", "'shape'")
    open(w("json.safetensors"), "wb").write(struct.pack("<Q", 5) + b"{oops")
    expect_error([P, "--inputs", w("json.safetensors")], "json.safetensors", "header")
    open(w("huge.safetensors"), "wb").write(struct.pack("<Q", 1 << 60) + b"{}")
    expect_error([P, "--weights", w("huge.safetensors")], "huge.safetensors", "header length")
    open(w("tiny.safetensors"), "wb").write(b"\1\2")
    expect_error([P, "--weights", w("tiny.safetensors")], "not a safetensors file")
    # --outputs FILE.safetensors: every output in its own dtype
    run(P, "--inputs", w("in"), "--outputs", w("outs.safetensors"), "--quiet")
    hdr, data = read_safetensors(w("outs.safetensors"))
    want = {"s": "F16", "mm": "BF16", "e": "F32", "neg": "BOOL"}
    ok({k: v["dtype"] for k, v in hdr.items()} == want, f"safetensors outputs' dtypes: {hdr}")
    b, en = hdr["e"]["data_offsets"]
    ok(np.array_equal(np.frombuffer(data[b:en], np.float32).reshape(5, 3),
                      np.load(w("out_in", "e.npy"))), "safetensors output e equals the .npy")
    b, en = hdr["s"]["data_offsets"]
    ok(np.array_equal(np.frombuffer(data[b:en], np.float16).astype(np.float32).reshape(5, 4),
                      np.load(w("out_in", "s.npy"))), "safetensors output s equals the .npy")

    # --- --bench text on the CPU, the backend note, usage errors ---
    out, err = run(P, "--bench", "--backend", "cpu")
    ok("bench (CPU" in out and " us " in out and "back to back" in out, f"--bench text: {out}")
    ok("CPU" in err, f"the backend note is on stderr: {err}")
    out, err = run(P, "--quiet")
    ok(err == "", "--quiet keeps stderr empty")
    _, err = run(P)
    ok(("CPU" in err) or ("GPU" in err), "the default backend is said")
    for argv in (["--bogus"], [], [P, "--seed", "x"], [P, "--dim", "B"], [P, "--backend", "tpu"],
                 [P, "--weights", "w.npy"], [P, "--check", "--check"]):
        _, err = run(*argv, rc=2)
        ok("see --help" in err, f"usage error {argv}: {err}")
    out, _ = run("--help")
    ok("--inputs" in out and "--bench" in out, "--help")
    doc = json.loads(run(w("no_such_prog"), "--json", rc=1)[0])
    ok(doc["ok"] is False and "error" in doc, "--json reports an error as JSON")
    print(f"test_luminal_run: {CHECKS} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
