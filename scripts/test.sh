#!/usr/bin/env bash
# Builds and runs every test: unit tests under AddressSanitizer + UBSan with -Werror,
# the conformance suite and genome fuzzing (the ctest label fuzz of a tree with the Check
# tests: luminal_search's fuzzer over every example and generated graphs, >= 10 000
# genomes) on an optimised build, and the libFuzzer harnesses (label fuzz of the clang
# build, which has no Check tests) for a bounded number of inputs. GPU tests are skipped,
# saying why, where there is no GPU.
#
# With CI=true (.ci/run sets it) nothing may go unchecked: the run fails at once when the
# conformance data (../shared/conformance, or $LUMINAL_SHARED_DIR/conformance) is
# missing, and fails at the end of a step when ctest skipped any of its tests (only the
# gpu tests may be skipped, CI has no GPU). Without CI=true a missing ../shared is a
# warning and the tests that need it are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
ci=${CI:-false}
shared=${LUMINAL_SHARED_DIR:-$(pwd)/../shared}
if [ ! -d "$shared/conformance" ]; then
  if [ "$ci" = true ]; then
    echo "test.sh: FAILED: the conformance data $shared/conformance is missing, so the" \
         "conformance tests would check nothing; CI needs it (put egglog's conformance" \
         "programs in ../shared, or set LUMINAL_SHARED_DIR)" >&2
    exit 1
  fi
  echo "test.sh: warning: $shared/conformance is missing: the tests that need it will be" \
       "reported as skipped" >&2
fi
export LUMINAL_SHARED_DIR=$shared

scripts/deps.sh
jobs=$(nproc)

# ctest_step DIR ARGS...: runs ctest; with CI=true a skipped test fails the step.
ctest_step() {
  local dir=$1 log
  shift
  log=$(mktemp)
  local rc=0
  ctest --test-dir "$dir" "$@" --output-on-failure 2>&1 | tee "$log" || rc=$?
  if [ "$rc" = 0 ] && [ "$ci" = true ] && grep -q '(Skipped)' "$log"; then
    echo "test.sh: FAILED: CI skips nothing, but ctest skipped:" >&2
    grep '(Skipped)' "$log" >&2
    rc=1
  fi
  rm -f "$log"
  return "$rc"
}

cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DLUMINAL_SANITIZE=ON -DLUMINAL_WERROR=ON >/dev/null
cmake --build build-san -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
ctest_step build-san -L unit -j "$jobs"
ctest --test-dir build-san -L gpu -j "$jobs" --output-on-failure
unset ASAN_OPTIONS UBSAN_OPTIONS

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLUMINAL_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
ctest_step build -L 'conformance|fuzz|install|limits'

# The Python package (docs/python.md): pip install ./python builds the C library through
# scikit-build-core and installs luminal_c; pytest runs its tests on the CPU executor (the
# four models, every supported op against torch, the cache, the errors, the backend).
# LUMINAL_PYTHON=0 leaves this step out (and deps.sh leaves torch out).
if [ "${LUMINAL_PYTHON:-1}" = 1 ]; then
  python3 -m pip install -q ./python || python3 -m pip install -q --break-system-packages ./python
  python3 -m pytest -q -p no:cacheprovider python/tests
fi

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUMINAL_FUZZ=ON \
  -DLUMINAL_TESTS=OFF -DLUMINAL_WERROR=ON >/dev/null
cmake --build build-fuzz -j "$jobs"
ctest_step build-fuzz -L fuzz
