#!/bin/sh
# fuzz_ctest.sh FUZZER WORKDIR [ARG ...]
# Runs a libFuzzer harness as a ctest. New inputs go to WORKDIR/corpus, emptied first so
# that every run starts from the same inputs (the seed directories among ARGs, read
# only); a crash reproducer goes to WORKDIR/ under libFuzzer's name for it. The ARGs
# bound the run (-runs=N -seed=S) and point at the seeds and dictionary. Exit status:
# the fuzzer's (0 when it found nothing).
set -eu
fuzzer=$1
work=$2
shift 2
rm -rf "$work/corpus"
mkdir -p "$work/corpus"
exec "$fuzzer" "$work/corpus" -artifact_prefix="$work/" "$@"
