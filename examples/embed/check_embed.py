#!/usr/bin/env python3
"""Runs the embedding example and checks what it prints and the JSON it writes.

usage: check_embed.py EMBED_BINARY OUT_JSON

The expected numbers were cross-checked against egglog (the PyPI package) on the same
program: after saturation egglog's print-size gives Add 3, Mul 4, Num 3, Shl 1, Var 1,
and (extract root) gives (Shl (Var "x") 1), whose tree cost is 4 (Shl, Var, "x", 1).
"""
import json
import subprocess
import sys


def fail(msg):
    print("check_embed: FAIL: " + msg)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    binary, out_json = sys.argv[1], sys.argv[2]
    run = subprocess.run([binary, out_json], capture_output=True, text=True, timeout=60)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        fail("embed exited with status %d" % run.returncode)

    kv = {}
    rows = []
    for line in run.stdout.splitlines():
        key, _, value = line.partition(": ")
        if key.startswith("row "):
            rows.append((key, value.split()))
        else:
            kv[key] = value

    expected = {
        "stop": "saturated",
        "nodes before": "9",
        "nodes after": "12",
        "table Num": "3",
        "table Var": "1",
        "table Add": "3",
        "table Mul": "4",
        "table Shl": "1",
        "best": '(Shl (Var "x") 1)',
        "cost": "4",
        "root is x*2": "yes",
        "classes": "9",
        "serialized nodes": "16",
        "roots": "1",
    }
    for key, want in expected.items():
        got = kv.get(key)
        if got != want:
            fail("%r: expected %r, got %r" % (key, want, got))

    # The one Shl row is (Shl x 1) whose output is the root's class: the union from C
    # and the rules joined them.
    if len(rows) != 1 or rows[0][0] != "row Shl[0]":
        fail("expected exactly one Shl row, got %r" % rows)
    cols = rows[0][1]
    if len(cols) != 3 or cols[1] != "1" or cols[2] != kv.get("root class"):
        fail("Shl row %r: expected (x, 1) -> root class %s" % (cols, kv.get("root class")))
    # provenance: the Shl term was added from C, so its origin is the API
    if kv.get("origin Shl[0]") != "api":
        fail("Shl row origin %r, expected 'api'" % kv.get("origin Shl[0]"))

    with open(out_json) as f:
        doc = json.load(f)
    check_serialized(doc, int(kv["serialized nodes"]), int(kv["classes"]))
    print("check_embed: ok")


def check_serialized(doc, n_nodes, n_classes):
    """The egraph-serialize shape: nodes by id with op, children (node ids), eclass and
    cost; root_eclasses naming classes that have nodes."""
    if not isinstance(doc, dict) or "nodes" not in doc or "root_eclasses" not in doc:
        fail("JSON lacks 'nodes' or 'root_eclasses'")
    nodes = doc["nodes"]
    if not isinstance(nodes, dict) or len(nodes) != n_nodes:
        fail("JSON has %s nodes, expected %d" % (len(nodes), n_nodes))
    classes = set()
    ops = {}
    for nid, node in nodes.items():
        for field in ("op", "children", "eclass"):
            if field not in node:
                fail("node %s lacks %r" % (nid, field))
        if not isinstance(node["op"], str) or not isinstance(node["children"], list):
            fail("node %s: op must be a string and children a list" % nid)
        for child in node["children"]:
            if child not in nodes:
                fail("node %s: child %r is not a node id" % (nid, child))
        if "cost" in node and not isinstance(node["cost"], (int, float)):
            fail("node %s: cost is not a number" % nid)
        classes.add(node["eclass"])
        ops[node["op"]] = ops.get(node["op"], 0) + 1
        # provenance (asked for with eg_serialize_opts.origins): every node of a
        # constructor names who made it; the rules' nodes name their rewrite's position
        if node["op"] in ("Num", "Var", "Add", "Mul", "Shl") and not isinstance(node.get("origin"), str):
            fail("node %s lacks its origin" % nid)
    if len(classes) != n_classes:
        fail("JSON has %d classes, expected %d" % (len(classes), n_classes))
    roots = doc["root_eclasses"]
    if not isinstance(roots, list) or len(roots) != 1 or roots[0] not in classes:
        fail("root_eclasses %r must name one class of the nodes" % (roots,))
    # The root class holds Add, Mul and Shl nodes (x + x, 2 * x, x * 2, x << 1).
    root_ops = sorted(n["op"] for n in nodes.values() if n["eclass"] == roots[0])
    if root_ops != ["Add", "Mul", "Mul", "Shl"]:
        fail("root class ops %r, expected Add, Mul, Mul, Shl" % root_ops)
    rule_made = [n for n in nodes.values() if n.get("origin", "").startswith("embed-rules:")]
    if not rule_made:
        fail("no node names a rule of embed-rules as its origin")
    want_ops = {"Num": 3, "Var": 1, "Add": 3, "Mul": 4, "Shl": 1}
    for op, count in want_ops.items():
        if ops.get(op) != count:
            fail("JSON has %s %s nodes, expected %d" % (ops.get(op), op, count))


if __name__ == "__main__":
    main()
