#!/usr/bin/env bash
# worker_gpu.sh: the search's GPU evaluator on a GPU machine, in one command (under 3
# minutes on one H200; docs/search-gpu.md):
#   1. test_sr_gpu_gpu (label gpu): candidates measured in worker processes, NaN and the
#      reference check on the GPU, the cutoff, a crashed worker restarted, the on-disk
#      CUBIN cache between two pools, one worker per visible GPU;
#   2. a measurement: 20 genomes of an example (default rmsnorm_f32_8192x4096 at its
#      profile, R=8192) timed through the pool (the first checked against the reference),
#      then the fastest timed 5 more times (the timing noise) and checked; twice, the
#      second time with the kernels in the on-disk cache (compile time saved);
#   3. the same measurement with LUMINAL_WORKER_TEST_CRASH=3 (a worker aborts on the
#      third candidate, is restarted, and the run still ends with a checked winner);
#   4. 20 genomes of llama_block_bf16 at S=32 (small, because the reference runtime that
#      checks the first candidate and the winner is exact and single-threaded on the CPU:
#      minutes at S=512).
# Prints a summary last; logs go to $OUT (or .gpu/out).
#
# Binaries come from .gpu/bin (scripts/gpu.sh prepare, on the build machine), else
# build-gpu/ is built here. With the device tool:
#   scripts/gpu.sh prepare        (here)
#   run(command="scripts/worker_gpu.sh", carry=[".gpu"])
# WORKER_GRAPH, WORKER_DIMS ("R=8192"), WORKER_GENOMES override the measurement of 2-3.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-$root/.gpu/out}
mkdir -p "$out"
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "worker_gpu.sh: no GPU here (nvidia-smi lists none)" >&2
  exit 1
fi
if [ -x .gpu/bin/sr_gpu_driver ] && [ -x .gpu/bin/test_sr_gpu_gpu ]; then
  bin=$root/.gpu/bin
  export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build build-gpu -j "$(nproc)" --target sr_gpu_driver test_sr_gpu_gpu >/dev/null || {
    echo "worker_gpu.sh: build failed (or run scripts/gpu.sh prepare elsewhere)" >&2
    exit 1
  }
  bin=$root/build-gpu/tests/search_gpu
fi
graph=${WORKER_GRAPH:-examples/graphs/rmsnorm_f32_8192x4096.json}
dims=${WORKER_DIMS:-R=8192}
genomes=${WORKER_GENOMES:-20}
dim_args=()
for d in $dims; do dim_args+=(--dim "$d"); done
cache=$(mktemp -d)
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

SR_GPU_DRIVER=$bin/sr_gpu_driver SR_GPU_SOURCE=$root CK_FORK=yes CK_DEFAULT_TIMEOUT=300 \
  CK_VERBOSITY=verbose timeout 150 "$bin/test_sr_gpu_gpu" >"$out/worker_gpu_test.log" 2>&1
trc=$?
grep -E "^disk cache|Checks|:(F|E):|^skip" "$out/worker_gpu_test.log" | head -20

measure() { # name, extra env...
  local name=$1
  shift
  env "$@" timeout 120 "$bin/sr_gpu_driver" --measure --graph "$graph" "${dim_args[@]}" \
    --genomes "$genomes" --repeat 5 --cache-dir "$cache" >"$out/worker_$name.log" \
    2>"$out/worker_$name.err"
  local rc=$?
  echo "-- $name (exit $rc)"
  grep -E "^(graph|pool|candidate|again|winner)" "$out/worker_$name.log" | head -40
  return $rc
}
measure cold
mrc=$?
measure warm
wrc=$?
measure crash LUMINAL_WORKER_TEST_CRASH=3
crc=$?
graph=examples/graphs/llama_block_bf16.json
dim_args=(--dim S=32)
measure llama
lrc=$?
rm -rf "$cache"
echo
echo "== worker_gpu summary (${WORKER_GRAPH:-rmsnorm_f32_8192x4096} at $dims, then llama_block_bf16 at S=32; $genomes genomes each) =="
echo "gpu test: exit $trc ($(grep -o '[0-9]*%: Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' "$out/worker_gpu_test.log" | tail -1))"
for n in cold warm crash llama; do
  echo "$n: $(grep '^summary' "$out/worker_$n.log" | sed 's/^summary: //')"
done
grep -h "started again\|died\|ran past" "$out"/worker_*.err | head -5
echo "exits: measure cold $mrc, warm $wrc, crash $crc, llama $lrc"
[ "$trc" = 0 ] && [ "$mrc" = 0 ] && [ "$wrc" = 0 ] && [ "$crc" = 0 ] && [ "$lrc" = 0 ]
