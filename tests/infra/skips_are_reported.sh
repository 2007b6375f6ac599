#!/bin/sh
# skips_are_reported.sh BUILD_DIR
# Every test that reads the conformance data (label conformance) must be reported by
# ctest as skipped, not passed, when that data is missing. Runs those tests of BUILD_DIR
# through a scratch ctest tree (so this build's Testing/ logs stay untouched) with
# LUMINAL_SHARED_DIR pointing at an empty folder, and checks ctest's verdicts.
set -u
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/empty" "$work/tree"
echo "subdirs(\"$build\")" >"$work/tree/CTestTestfile.cmake"
out=$(cd "$work" && LUMINAL_SHARED_DIR="$work/empty" ctest --test-dir "$work/tree" -L conformance 2>&1)
echo "$out"
ran=$(printf '%s\n' "$out" | grep -cE 'Test +#[0-9]+: ')
skipped=$(printf '%s\n' "$out" | grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped')
fail=0
if [ "$ran" -lt 3 ]; then
  echo "FAIL: expected at least 3 conformance tests (egraph_conformance, egraph_shared," \
       "bench_egraph_smoke), ctest ran $ran"
  fail=1
fi
if [ "$skipped" -ne "$ran" ]; then
  echo "FAIL: of $ran conformance tests without the conformance data, only $skipped were" \
       "reported as skipped; the others passed or failed having nothing to check:"
  printf '%s\n' "$out" | grep -E 'Test +#[0-9]+: ' | grep -v 'Skipped'
  fail=1
fi
[ "$fail" = 0 ] && echo "ok: all $ran conformance tests reported as skipped"
exit "$fail"
