#!/usr/bin/env python3
"""egglog-ext conformance with a list of known failures that can only shrink.

Runs check_egglog.py over conformance/egglog-ext (the rest of egglog's test folder) and
compares its verdicts with KNOWN_FAILURES (egglog_ext_known_failures.txt beside this
script: one program path per line, as check_egglog.py names it, '#' comments). The test
passes when every program outside the list passes (or is timing-only), and every program
on the list still fails: a listed program that passes fails the test, so the list is
kept true (remove the line). A program that is neither passed, failed nor skipped (a
crash of the checker) fails the test.

Usage: conformance_ext.py CHECK_EGGLOG_PY EXT_DIR ENGINE [--timeout S]
"""
import os, re, subprocess, sys

def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    check, ext, engine = sys.argv[1:4]
    timeout = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--timeout" else "300"
    here = os.path.dirname(os.path.abspath(__file__))
    known = set()
    with open(os.path.join(here, "egglog_ext_known_failures.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                known.add(line)
    p = subprocess.run([sys.executable, check, "--dir", ext, "--timeout", timeout,
                        "--cmd", f"{engine} --snapshot {{file}}"],
                       capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    verdict = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(ok  |FAIL|skip|TIMEOUT) (\S+)", line)
        if m:
            verdict[m.group(2)] = m.group(1).strip()
    bad = []
    for prog, v in sorted(verdict.items()):
        if prog in known and v == "ok":
            bad.append(f"{prog} passes now: remove it from egglog_ext_known_failures.txt")
        elif prog not in known and v in ("FAIL", "TIMEOUT"):
            bad.append(f"{prog} fails and is not a known failure")
    for prog in sorted(known - set(verdict)):
        bad.append(f"{prog} is listed as a known failure but was not run (renamed?)")
    npass = sum(v == "ok" for v in verdict.values())
    print(f"egglog-ext: {npass} passed, {len(known)} known failures, "
          f"{sum(v == 'skip' for v in verdict.values())} timing-only")
    for b in bad:
        print("ERROR:", b)
    return 1 if bad or not verdict else 0

if __name__ == "__main__":
    sys.exit(main())
