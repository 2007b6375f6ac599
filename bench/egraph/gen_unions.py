#!/usr/bin/env python3
"""Writes a rule program of many top-level (union ...) commands, to time rebuilding.

The program declares N leaves (Leaf 0..N-1), N nodes (Node (Leaf i) (Leaf i+1)) and N
alias leaves (Leaf N..2N-1), then makes N unions, each its own command, so the engine
rebuilds after every one: for even i, (Leaf i) with (Leaf i+1), which makes the nodes
around them stale; for odd i, the alias (Leaf N+i) with (Leaf i). Every union merges two
classes, so none is free, and the classes stay small (no union joins everything early).

usage: gen_unions.py [N] > unions.egg      (N defaults to 20000)

Time it with eqsat (e.g. `time eqsat unions.egg`); the program ends with (print-size),
so two engines (or two versions of one) can be checked to agree.
"""
import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    if n < 2:
        sys.exit("gen_unions.py: N must be at least 2")
    out = sys.stdout
    out.write("(datatype T (Leaf i64) (Node T T))\n")
    for i in range(n):
        out.write(f"(Node (Leaf {i}) (Leaf {(i + 1) % n}))\n")
    for i in range(n):
        out.write(f"(Leaf {n + i})\n")
    for i in range(n):
        if i % 2 == 0:
            out.write(f"(union (Leaf {i}) (Leaf {(i + 1) % n}))\n")
        else:
            out.write(f"(union (Leaf {n + i}) (Leaf {i}))\n")
    out.write("(print-size)\n")


if __name__ == "__main__":
    main()
