#!/usr/bin/env python3
"""Times the e-graph engine's runner (eqsat) against egglog on the same program text.

For each program (default: math-microbenchmark.egg, llama.egg, luminal-llama.egg from
DIR/tests, DIR = ../shared/conformance/egglog beside the repository), both engines run
the program text with "(print-size)" appended, with DIR as the working directory so
include and input paths resolve. Each engine runs in a child process of its own, once
as a warm-up and then --runs (eqsat) or --egglog-runs (egglog) times; the table gives
the median (--best: the best) of:

  wall     eqsat: the whole process (start to exit, so it includes loading the binary);
           egglog: EGraph() + parse_program + run_program inside the child, so Python's
           start-up and the import of egglog are not counted against egglog.
  peak RSS the child's maximum resident set (getrusage of the child). The egglog child
           includes the Python interpreter; --egglog-baseline shows how much that is.
  rows     the total of the (print-size) table sizes: every row of every constructor,
           function and relation (the e-nodes and function entries). Both engines must
           agree; a mismatch is printed as a warning.
  nodes/s  rows / wall.
  cpu      user + system CPU seconds of the same span: eqsat's whole process (getrusage
           of the child), egglog's time.process_time() around the same calls as its wall.
           On a machine shared with other jobs, CPU time moves less than wall time.

egglog is the PyPI package (python3 -m pip install egglog); when it cannot be imported
the script says so and times eqsat alone.

usage: bench_egraph.py [--eqsat PATH] [--before PATH] [--dir DIR] [--runs N]
                       [--egglog-runs N] [--warmup N] [--best] [--no-egglog] [--markdown]
                       [PROGRAM.egg ...]

--best reports the best of the measured runs instead of the median; --before PATH times
an earlier eqsat binary in the same run (rows "eqsat (before)").
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_PROGRAMS = ["math-microbenchmark.egg", "llama.egg", "luminal-llama.egg"]

# The egglog child: reads the program from stdin, prints wall seconds and the print-size
# output on stdout.
EGGLOG_CHILD = r"""
import sys, time
from egglog import bindings
name = sys.argv[1]
text = sys.stdin.read()
t0, c0 = time.perf_counter(), time.process_time()
eg = bindings.EGraph()
cmds = eg.parse_program(text, filename=name)
out = eg.run_program(*cmds)
t1, c1 = time.perf_counter(), time.process_time()
sys.stdout.write("WALL %.9f %.9f\n" % (t1 - t0, c1 - c0))
sizes = [o for o in out if hasattr(o, "sizes")]
sys.stdout.write(str(sizes[-1]) if sizes else "")
"""

EGGLOG_BASELINE = r"""
from egglog import bindings
eg = bindings.EGraph()
eg.run_program(*eg.parse_program("(datatype X (A))"))
"""


def run_measured(argv, cwd, stdin_text=None, timeout=None):
    """Runs argv in cwd, reaping it with wait4 to get its own peak RSS and CPU time. Returns
    (wall seconds, peak RSS MiB, exit status, stdout, stderr, CPU seconds)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd,
                         stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Feed stdin and drain the pipes without reaping, then reap with wait4.
    bufs = {}

    def drain(name, stream):
        bufs[name] = stream.read()

    threads = [threading.Thread(target=drain, args=("out", p.stdout)),
               threading.Thread(target=drain, args=("err", p.stderr))]
    for t in threads:
        t.start()
    if stdin_text is not None:
        p.stdin.write(stdin_text.encode())
        p.stdin.close()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if deadline is not None and time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.002)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    for t in threads:
        t.join()
    return (wall, ru.ru_maxrss / 1024.0, p.returncode,
            bufs.get("out", b"").decode(errors="replace"),
            bufs.get("err", b"").decode(errors="replace"), ru.ru_utime + ru.ru_stime)


def print_size_total(text):
    """Sums the '(Name count)' entries of the last print-size output in text (it starts
    with a line '((Name count)'), or None."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("((")]
    if not starts:
        return None
    total = 0
    found = False
    for line in lines[starts[-1]:]:
        s = line.strip().lstrip("(").rstrip(")").split()
        if len(s) == 2 and s[1].isdigit():
            total += int(s[1])
            found = True
    return total if found else None


def egglog_available():
    r = subprocess.run([sys.executable, "-c", "import egglog.bindings"],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip().splitlines()[-1:] or [""]


def bench_eqsat(eqsat, path, text, cwd, n, warmup, timeout):
    runs = []
    tmp = os.path.join(cwd, ".bench-eqsat-%d.egg" % os.getpid())
    # eqsat reads a file; write the program text (with print-size) beside the original
    # so include paths stay relative to DIR.
    with open(tmp, "w") as f:
        f.write(text)
    try:
        for i in range(warmup + n):
            wall, rss, rc, out, err, cpu = run_measured([eqsat, tmp], cwd, timeout=timeout)
            if rc != 0:
                raise RuntimeError("eqsat failed on %s (exit %d): %s" % (path, rc, err.strip()[-500:]))
            if i >= warmup:
                runs.append((wall, rss, print_size_total(out), cpu))
    finally:
        os.unlink(tmp)
    return runs


def bench_egglog(path, text, cwd, n, warmup, timeout):
    runs = []
    for i in range(warmup + n):
        _, rss, rc, out, err, _ = run_measured([sys.executable, "-c", EGGLOG_CHILD, path], cwd,
                                            stdin_text=text, timeout=timeout)
        if rc != 0:
            raise RuntimeError("egglog failed on %s (exit %d): %s" % (path, rc, err.strip()[-500:]))
        first, _, rest = out.partition("\n")
        wall, cpu = float(first.split()[1]), float(first.split()[2])
        if i >= warmup:
            runs.append((wall, rss, print_size_total(rest), cpu))
    return runs


STAT = statistics.median  # --best: min


def med(runs, k):
    return STAT([r[k] for r in runs])


def fmt_row(cols, widths):
    return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cols, widths)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eqsat", default=None, help="eqsat binary (default: build/tools/eqsat/eqsat)")
    ap.add_argument("--dir", default=os.path.join(REPO, "..", "shared", "conformance", "egglog"))
    ap.add_argument("--runs", type=int, default=5, help="measured eqsat runs (default 5)")
    ap.add_argument("--egglog-runs", type=int, default=3, help="measured egglog runs (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up runs per engine (default 1)")
    ap.add_argument("--no-egglog", action="store_true", help="time eqsat only")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--best", action="store_true",
                    help="report the best (smallest) wall and peak RSS of the measured runs "
                         "instead of the median")
    ap.add_argument("--before", default=None, metavar="PATH",
                    help="an earlier eqsat binary, timed in the same run (rows 'eqsat (before)'; "
                         "its wall ratio is before wall / eqsat wall)")
    ap.add_argument("programs", nargs="*", default=DEFAULT_PROGRAMS)
    a = ap.parse_args()

    eqsat = a.eqsat
    if eqsat is None:
        for cand in ("build/tools/eqsat/eqsat", "build-ex/tools/eqsat/eqsat"):
            if os.path.exists(os.path.join(REPO, cand)):
                eqsat = os.path.join(REPO, cand)
                break
    if eqsat is None or not os.path.exists(eqsat):
        sys.exit("bench_egraph: no eqsat binary; build it (cmake --build build --target eqsat) "
                 "or pass --eqsat PATH")
    eqsat = os.path.abspath(eqsat)
    global STAT
    if a.best:
        STAT = min
    before = os.path.abspath(a.before) if a.before else None
    if before and not os.path.exists(before):
        sys.exit("bench_egraph: no eqsat binary at %s (--before)" % before)
    cwd = os.path.abspath(a.dir)
    if not os.path.isdir(os.path.join(cwd, "tests")):
        sys.exit("bench_egraph: %s/tests not found; pass --dir to egglog's conformance folder" % cwd)

    use_egglog = not a.no_egglog
    if use_egglog:
        ok, why = egglog_available()
        if not ok:
            print("bench_egraph: egglog is MISSING (python3 -c 'import egglog.bindings' failed: %s);"
                  " timing eqsat alone. Install it with: python3 -m pip install egglog" % why[0])
            use_egglog = False
    else:
        print("bench_egraph: egglog not run (--no-egglog)")

    rows = []
    for prog in a.programs:
        path = prog if os.path.isabs(prog) else os.path.join("tests", prog)
        with open(os.path.join(cwd, path)) as f:
            text = f.read() + "\n(print-size)\n"
        name = os.path.basename(prog)
        print("bench_egraph: %s: eqsat %d+%d runs" % (name, a.warmup, a.runs), file=sys.stderr, flush=True)
        ours = bench_eqsat(eqsat, path, text, cwd, a.runs, a.warmup, a.timeout)
        prior = None
        if before:
            print("bench_egraph: %s: eqsat (before) %d+%d runs" % (name, a.warmup, a.runs),
                  file=sys.stderr, flush=True)
            prior = bench_eqsat(before, path, text, cwd, a.runs, a.warmup, a.timeout)
        theirs = None
        if use_egglog:
            print("bench_egraph: %s: egglog %d+%d runs" % (name, a.warmup, a.egglog_runs),
                  file=sys.stderr, flush=True)
            theirs = bench_egglog(path, text, cwd, a.egglog_runs, a.warmup, a.timeout)
        rows.append((name, ours, theirs, prior))

    baseline = None
    if use_egglog:
        _, baseline, _, _, _, _ = run_measured([sys.executable, "-c", EGGLOG_BASELINE], cwd)

    head = ["program", "engine", "wall s", "cpu s", "peak RSS MiB", "rows", "nodes/s",
            "wall ratio", "cpu ratio", "RSS ratio"]
    table = []
    for name, ours, theirs, prior in rows:
        ow, orss, on, oc = med(ours, 0), med(ours, 1), ours[0][2], med(ours, 3)
        table.append([name, "eqsat (ours)", "%.3f" % ow, "%.3f" % oc, "%.1f" % orss, on,
                      "%.0f" % (on / ow) if on else "-", "", "", ""])
        if prior:
            pw, prss, pn, pc = med(prior, 0), med(prior, 1), prior[0][2], med(prior, 3)
            table.append([name, "eqsat (before)", "%.3f" % pw, "%.3f" % pc, "%.1f" % prss, pn,
                          "%.0f" % (pn / pw) if pn else "-",
                          "%.2fx" % (pw / ow), "%.2fx" % (pc / oc), "%.2fx" % (prss / orss)])
            if on != pn:
                print("bench_egraph: WARNING: %s: eqsat has %s rows, before %s" % (name, on, pn))
        if theirs:
            tw, trss, tn, tc = med(theirs, 0), med(theirs, 1), theirs[0][2], med(theirs, 3)
            table.append([name, "egglog", "%.3f" % tw, "%.3f" % tc, "%.1f" % trss, tn,
                          "%.0f" % (tn / tw) if tn else "-",
                          "%.2fx" % (tw / ow), "%.2fx" % (tc / oc), "%.2fx" % (trss / orss)])
            if on != tn:
                print("bench_egraph: WARNING: %s: eqsat has %s rows, egglog %s" % (name, on, tn))
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for r in table:
            print("| " + " | ".join(str(c) for c in r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in table + [head]) for i in range(len(head))]
        print(fmt_row(head, widths))
        for r in table:
            print(fmt_row(r, widths))
    print("all measured runs (wall s / cpu s / peak RSS MiB):")
    for name, ours, theirs, prior in rows:
        for label, runs in (("eqsat", ours), ("eqsat (before)", prior), ("egglog", theirs)):
            if runs:
                print("  %s %s: %s" % (name, label, ", ".join("%.3f/%.3f/%.0f" % (r[0], r[3], r[1])
                                                               for r in runs)))
    print("wall ratio = egglog wall / eqsat wall (above 1: eqsat faster); cpu ratio the same "
          "for CPU time (user + system: the steadier measure on a shared machine); RSS ratio = "
          "egglog peak RSS / eqsat peak RSS (above 1: eqsat smaller).")
    print("%s of %d eqsat and %d egglog runs after %d warm-up run(s) each." %
          ("best" if a.best else "medians", a.runs, a.egglog_runs if use_egglog else 0, a.warmup))
    missing = [name for name, ours, _, _ in rows if ours[0][2] is None]
    if missing:
        print("bench_egraph: no (print-size) output from eqsat on: %s" % ", ".join(missing))
        sys.exit(1)
    if baseline is not None:
        print("egglog baseline: a Python child with egglog imported and an empty EGraph peaks "
              "at %.1f MiB (included in egglog's RSS above)." % baseline)


if __name__ == "__main__":
    main()
