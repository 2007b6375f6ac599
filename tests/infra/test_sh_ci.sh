#!/bin/sh
# test_sh_ci.sh SOURCE_DIR
# scripts/test.sh with CI=true must fail, before building anything and saying why, when
# the conformance data is missing; without CI=true, or with the data there, it goes on.
# What it would run (cmake, dpkg, python3 of deps.sh) is replaced by stubs that say they
# were reached and stop, so nothing is built or installed here.
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stub" "$work/empty" "$work/shared/conformance"
for t in cmake ctest dpkg python3 apt-get sudo; do
  printf '#!/bin/sh\necho "STUB %s reached" >&2\n[ %s = dpkg ] || [ %s = python3 ] && exit 0\nexit 97\n' \
    "$t" "$t" "$t" >"$work/stub/$t"
  chmod +x "$work/stub/$t"
done
fail=0
run() { # run NAME ENV... : runs test.sh with the stubs first on PATH
  name=$1
  shift
  out=$(env PATH="$work/stub:$PATH" "$@" bash "$src/scripts/test.sh" 2>&1)
  rc=$?
  echo "== $name (exit $rc)"
  echo "$out"
}
expect() { # expect WHAT: a grep -E pattern the last output must (or, with !, must not) hold
  if [ "$1" = "!" ]; then
    if printf '%s\n' "$out" | grep -qE "$2"; then echo "FAIL ($name): output has '$2'"; fail=1; fi
  elif ! printf '%s\n' "$out" | grep -qE "$1"; then
    echo "FAIL ($name): output lacks '$1'"
    fail=1
  fi
}

run ci_without_data CI=true LUMINAL_SHARED_DIR="$work/empty"
[ "$rc" -ne 0 ] || { echo "FAIL ($name): exit 0"; fail=1; }
expect "FAILED: the conformance data $work/empty/conformance is missing"
expect ! "STUB"

run local_without_data CI= LUMINAL_SHARED_DIR="$work/empty"
expect "warning: $work/empty/conformance is missing"
expect "STUB cmake reached"

run ci_with_data CI=true LUMINAL_SHARED_DIR="$work/shared"
expect ! "conformance data"
expect "STUB cmake reached"

[ "$fail" = 0 ] && echo "ok: test.sh refuses CI without the conformance data, and only then"
exit "$fail"
