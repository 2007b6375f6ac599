#!/bin/sh
# run_fuzz.sh FUZZER SEEDS WORKDIR [EXTRA_CORPUS]
# Runs the libFuzzer harness for FUZZ_RUNS inputs (default 120000) from seed FUZZ_SEED
# (default 1), so that a CI run does the same amount of work on a fast machine as on a
# slow one; with FUZZ_SECONDS set it runs for that many seconds instead, from a random
# seed unless FUZZ_SEED is given (for long fuzzing sessions by hand). New inputs go to
# WORKDIR/corpus (a copy of SEEDS, so the source tree is never written); crash
# reproducers go to WORKDIR/artifacts/. The reproducers of past findings (crashes/ beside
# this script) run first. EXTRA_CORPUS (egglog's test programs) is read
# too when it exists. Exit status: the fuzzer's (0 when it found nothing).
set -eu
fuzzer=$1
seeds=$2
work=$3
extra=${4:-}
if [ -n "${FUZZ_SECONDS:-}" ]; then
  bound="-max_total_time=$FUZZ_SECONDS"
  seed=${FUZZ_SEED:-0}
else
  bound="-runs=${FUZZ_RUNS:-120000} -max_total_time=200"
  seed=${FUZZ_SEED:-1}
fi
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
set -- "$work/corpus"
# Past findings (crashes/) are replayed first, as regression inputs.
if [ -d "$(dirname "$0")/crashes" ]; then
  set -- "$@" "$(dirname "$0")/crashes"
fi
if [ -n "$extra" ] && [ -d "$extra" ]; then
  set -- "$@" "$extra"
else
  echo "run_fuzz: ${extra:-egglog tests} not found; fuzzing from our seeds only"
fi
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
exec "$fuzzer" $bound -seed="$seed" -timeout=25 -rss_limit_mb=2048 -max_len=8192 \
  -dict="$(dirname "$0")/egglog.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@"
