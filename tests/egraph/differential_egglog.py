#!/usr/bin/env python3
"""Differential test: random rule programs run by eqsat and by egglog must print the same
table sizes.

Each seed generates a program over a small datatype (constructors, a relation, functions
with :merge) with random rewrites (nested patterns, :when, :subsume), rules (joins,
set/delete/subsume/union, primitives), globals, unions, schedules (run, rulesets,
repeat, saturate, :until) and push/pop, ending with (print-size). Both engines run it;
programs egglog rejects are skipped. Exit 0 only if every compared program agrees.

Usage: differential_egglog.py EQSAT [FIRST_SEED] [COUNT]
Skips (exit 0, with a message) when the egglog Python package is not installed.
"""
import os, random, subprocess, sys, tempfile

def term(r, d):
    if d == 0 or r.random() < 0.3:
        return r.choice(['(N %d)' % r.randint(0, 3), '(V "x")', '(V "y")'])
    k = r.choice(["A", "M", "U"])
    if k == "U":
        return "(U %s)" % term(r, d - 1)
    return "(%s %s %s)" % (k, term(r, d - 1), term(r, d - 1))

def pattern(r, d, vs):
    if d == 0 or r.random() < 0.3:
        if r.random() < 0.7:
            v = r.choice("abc"); vs.add(v); return v
        return "(N %d)" % r.randint(0, 3)
    k = r.choice(["A", "M", "U"])
    if k == "U":
        return "(U %s)" % pattern(r, d - 1, vs)
    return "(%s %s %s)" % (k, pattern(r, d - 1, vs), pattern(r, d - 1, vs))

def rhs(r, d, vs):
    if d == 0 or r.random() < 0.35:
        if vs and r.random() < 0.8:
            return r.choice(sorted(vs))
        return "(N %d)" % r.randint(0, 3)
    k = r.choice(["A", "M", "U"])
    if k == "U":
        return "(U %s)" % rhs(r, d - 1, vs)
    return "(%s %s %s)" % (k, rhs(r, d - 1, vs), rhs(r, d - 1, vs))

FIXED_RULES = [
    "(rewrite (A a b) (A b a)RS)",
    "(rewrite (M a (A b c)) (A (M a b) (M a c))RS)",
    "(rewrite (A (N a) (N b)) (N (+ a b))RS)",
    "(rewrite (U x) (A x (N 0)) :subsume RS)",
    "(rule ((= e (A a b))) ((set (g e) (M b a)))RS)",
    "(rule ((= e (N n))) ((set (f e) n) (S n))RS)",
    "(rule ((= e (A a b)) (= x (f a)) (= y (f b))) ((set (f e) (+ x y)))RS)",
    "(rule ((S n) (< n 20)) ((S (+ n 3)) (set (h (% n 4)) n))RS)",
    "(rule ((= e (M a b)) (R a b)) ((delete (R a b)))RS)",
    "(rule ((= e (A a b)) (!= a b)) ((R a b))RS)",
    "(rule ((R a b) (R b c)) ((R a c))RS)",
    "(rule ((= e (M a a))) ((union e (U a)))RS)",
    "(rule ((= x (h k)) (= y (h (+ k 1)))) ((S (+ x y)))RS)",
    "(rule ((= e (U a)) (= (f a) v) (> v 2)) ((subsume (U a)))RS)",
]

def generate(seed):
    r = random.Random(seed)
    out = ["(datatype E (N i64) (V String) (A E E) (M E E) (U E))",
           "(relation R (E E))", "(relation S (i64))",
           "(function f (E) i64 :merge (min old new))",
           "(function g (E) E :merge old)",
           "(function h (i64) i64 :merge (max old new))",
           "(ruleset r1)", "(ruleset r2)"]
    seen = set()
    def add_rule(text):
        if text not in seen:
            seen.add(text); out.append(text)
    for x in r.sample(FIXED_RULES, r.randint(1, 7)):
        add_rule(x.replace("RS", r.choice(["", " :ruleset r1", " :ruleset r2"])))
    for _ in range(r.randint(0, 4)):
        vs = set()
        lhs = pattern(r, r.randint(1, 3), vs)
        if not lhs.startswith("("):
            lhs = "(U %s)" % lhs
        opt = " :subsume" if r.random() < 0.15 else ""
        if vs and r.random() < 0.2:
            opt += " :when ((!= %s (N 0)))" % r.choice(sorted(vs))
        add_rule("(rewrite %s %s%s)" % (lhs, rhs(r, r.randint(0, 3), vs), opt))
    for i in range(r.randint(1, 4)):
        out.append("(let $t%d %s)" % (i, term(r, r.randint(1, 4))))
    if r.random() < 0.3:
        out.append("(union $t0 %s)" % term(r, 2))
    schedules = ["(run %d)" % r.randint(1, 4), "(run r1 %d)" % r.randint(1, 3),
                 "(run-schedule (repeat %d (run r1) (run r2) (run)))" % r.randint(1, 3),
                 "(run-schedule (saturate r2) (repeat 2 (run)))",
                 "(run %d :until (= $t0 (N 3)))" % r.randint(1, 5),
                 "(run-schedule (repeat 2 (saturate (run r1)) (run)))"]
    for _ in range(r.randint(1, 3)):
        out.append(r.choice(schedules))
    if r.random() < 0.3:
        out += ["(push)", r.choice(schedules), "(print-size)", "(pop)"]
    if r.random() < 0.5:
        out.append("(extract $t0)")
    out.append("(print-size)")
    return "\n".join(out) + "\n"

def sizes(text):
    return "\n".join(l for l in text.splitlines() if l.strip())

def run_egglog(path):
    # table sizes as printed; an extracted term becomes its tree cost (every constructor
    # here costs 1, every literal 1), printed as eqsat --snapshot prints it
    code = ("import egglog.bindings as b, re, sys\n"
            "e = b.EGraph()\n"
            "for o in e.run_program(*e.parse_program(open(sys.argv[1]).read())):\n"
            "    s = str(o).strip()\n"
            "    if s.startswith('(('): print(s)\n"
            "    elif s.startswith('(') and '\\n' not in s:\n"
            "        toks = re.findall(r'\\(|\\)|\"[^\"]*\"|[^\\s()]+', s)\n"
            "        n = sum(1 for i, t in enumerate(toks) if t not in '()' and toks[i-1] != '(')\n"
            "        print('(extraction-costs %d)' % (s.count('(') + n))\n")
    try:
        p = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                           timeout=60)
    except subprocess.TimeoutExpired:
        return None  # too big to compare in time: skipped
    return sizes(p.stdout) if p.returncode == 0 else None

def main():
    if len(sys.argv) < 2:
        print(__doc__); return 2
    eqsat = sys.argv[1]
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    try:
        import egglog.bindings  # noqa: F401
    except Exception:
        print("skip: the egglog Python package is not installed; differential test not run")
        return 77  # ctest's skip code: nothing was compared
    tmp = tempfile.mkdtemp(prefix="eg-diff-")
    compared = bad = 0
    for seed in range(first, first + count):
        path = os.path.join(tmp, "p%d.egg" % seed)
        with open(path, "w") as f:
            f.write(generate(seed))
        want = run_egglog(path)
        if want is None:
            continue
        compared += 1
        try:
            p = subprocess.run([eqsat, "--snapshot", path], capture_output=True, text=True,
                               timeout=120)
            got = sizes(p.stdout) if p.returncode == 0 else "exit %d: %s" % (p.returncode, p.stderr)
        except subprocess.TimeoutExpired:
            got = "timeout"
        if got != want:
            bad += 1
            print("MISMATCH seed %d (%s)\n--- egglog\n%s\n--- eqsat\n%s" % (seed, path, want, got))
        else:
            os.remove(path)
    print("%d compared, %d mismatched" % (compared, bad))
    return 1 if bad or compared == 0 else 0

if __name__ == "__main__":
    sys.exit(main())
