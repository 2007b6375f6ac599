#!/usr/bin/env bash
# Builds and runs every test: unit tests under AddressSanitizer + UBSan with -Werror,
# the conformance suite on an optimised build, and the libFuzzer harnesses for a bounded
# time on a clang build. GPU tests skip with a message where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DLUMINAL_SANITIZE=ON -DLUMINAL_WERROR=ON >/dev/null
cmake --build build-san -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-san -L 'unit|gpu' -j "$jobs" --output-on-failure

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLUMINAL_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -L conformance --output-on-failure

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUMINAL_FUZZ=ON \
  -DLUMINAL_TESTS=OFF -DLUMINAL_WERROR=ON >/dev/null
cmake --build build-fuzz -j "$jobs"
ctest --test-dir build-fuzz -L fuzz --output-on-failure
