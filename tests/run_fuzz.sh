#!/bin/sh
# run_fuzz.sh FUZZER WORKDIR RUNS [ARG ...]
# The one way a libFuzzer harness is run: as a ctest, and by hand for long sessions.
# lm_add_fuzz (cmake/Luminal.cmake) writes <build>/<folder>/<harness>.sh, which calls this
# script with the harness's own arguments, and registers that as the ctest; for a long
# session run the same <harness>.sh by hand with FUZZ_SECONDS set.
#
#   bounded (ctest): RUNS inputs from seed 1 (so a run does the same work on a fast
#       machine as on a slow one), stopping at 200 s in any case; FUZZ_RUNS overrides RUNS,
#       FUZZ_SEED the seed. The inputs libFuzzer finds go to WORKDIR/corpus, emptied first,
#       so every run starts from the same inputs.
#   FUZZ_SECONDS=N: runs for N seconds from a random seed (FUZZ_SEED fixes it), keeping
#       what it finds in WORKDIR/corpus-long across sessions.
#
# ARGs are the seed folders (read, never written; `?DIR` is a folder read only where it
# exists, such as egglog's programs in ../shared) and libFuzzer options given as they are
# (-dict=..., -max_len=..., -timeout=...). Crash reproducers go to WORKDIR/artifacts/.
# Leak detection is on unless ASAN_OPTIONS says otherwise. Exit status: the fuzzer's (0
# when it found nothing).
set -eu
fuzzer=$1
work=$2
runs=${FUZZ_RUNS:-$3}
shift 3
if [ -n "${FUZZ_SECONDS:-}" ]; then
  corpus=$work/corpus-long
  bound="-max_total_time=$FUZZ_SECONDS"
  seed=${FUZZ_SEED:-0}
else
  corpus=$work/corpus
  rm -rf "$corpus"
  bound="-runs=$runs -max_total_time=200"
  seed=${FUZZ_SEED:-1}
fi
mkdir -p "$corpus" "$work/artifacts"
n=$#
while [ "$n" -gt 0 ]; do # drop the optional folders that are missing
  a=$1
  shift
  n=$((n - 1))
  case $a in
    \?*)
      a=${a#\?}
      if [ ! -d "$a" ]; then
        echo "run_fuzz: $a not found; not read"
        continue
      fi
      ;;
  esac
  set -- "$@" "$a"
done
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
exec "$fuzzer" $bound -seed="$seed" -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$corpus" "$@"
