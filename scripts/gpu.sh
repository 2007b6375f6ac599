#!/usr/bin/env bash
# gpu.sh: the cuda_rt GPU suite and measurements in one go, for a machine with a GPU.
#
#   scripts/gpu.sh prepare   on a build machine (Check, xxHash installed): builds the GPU
#                            test and rt_bench (Release) into .gpu/bin with the shared
#                            libraries they need in .gpu/lib (.gpu/ is git-ignored), so a
#                            GPU machine without those packages can run them
#   scripts/gpu.sh run       on the GPU machine: runs the gpu-labelled tests (cuda_rt's and
#                            compiled programs' against their CPU backend),
#                            fault_probe, the torch.matmul anchor and rt_bench, writes logs to $OUT (or
#                            .gpu/out) and prints a short summary table last. Uses .gpu/bin
#                            when present, else builds build-gpu/ here first.
#   scripts/gpu.sh           prepare, then run (a machine with both the packages and a GPU)
# Where there is no GPU, run (and the default) print one line saying so and exit 1.
#
# With the device tool of this workplace (repository root, .gpu carried):
#   scripts/gpu.sh prepare        (here)
#   run(command="scripts/gpu.sh run", carry=[".gpu"])
# LUMINAL_SRC overrides the source folder that prepare configures (default: this repo).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode=${1:-all}

prepare() {
  local src=${LUMINAL_SRC:-$root}
  cmake -S "$src" -B .gpu/build -DCMAKE_BUILD_TYPE=Release -DLUMINAL_WERROR=ON >/dev/null || return 1
  cmake --build .gpu/build -j "$(nproc)" --target test_cuda_rt_gpu rt_bench fault_probe \
    test_program_gpu ref_dump >/dev/null || return 1
  mkdir -p .gpu/bin .gpu/lib
  cp .gpu/build/tests/cuda_rt/test_cuda_rt_gpu .gpu/build/bench/cuda_rt/rt_bench \
    .gpu/build/bench/cuda_rt/fault_probe .gpu/build/tests/program/test_program_gpu \
    .gpu/build/bench/e2e/ref_dump .gpu/bin/
  # the shared libraries that are not glibc's travel along
  for b in .gpu/bin/*; do
    ldd "$b" | awk '/=> \// {print $3}' | grep -v -E '/lib(c|m|dl|rt|pthread|gcc_s)\.so' |
      xargs -r -I{} cp -L {} .gpu/lib/
  done
  echo "gpu.sh: prepared $(ls .gpu/bin | tr '\n' ' ')in .gpu/bin, libs: $(ls .gpu/lib | tr '\n' ' ')"
}

# Is there a GPU? nvidia-smi lists it on every GPU machine. Without one, say so in one
# line and stop, before building or running anything.
need_gpu() {
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "gpu.sh: no GPU here (nvidia-smi lists none): run 'scripts/gpu.sh run' on a machine with an NVIDIA GPU" >&2
    return 1
  fi
}

run() {
  need_gpu || return 1
  local out=${OUT:-$root/.gpu/out}
  mkdir -p "$out"
  local bin
  if [ -x .gpu/bin/test_cuda_rt_gpu ] && [ -x .gpu/bin/rt_bench ]; then
    bin=.gpu/bin
    export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null &&
      cmake --build build-gpu -j "$(nproc)" --target test_cuda_rt_gpu rt_bench fault_probe \
        test_program_gpu >/dev/null || {
        echo "gpu.sh: build failed (Check and xxHash headers are needed; or run prepare elsewhere)"
        return 1
      }
    mkdir -p build-gpu/bin
    cp build-gpu/tests/cuda_rt/test_cuda_rt_gpu build-gpu/bench/cuda_rt/rt_bench \
      build-gpu/bench/cuda_rt/fault_probe build-gpu/tests/program/test_program_gpu build-gpu/bin/
    bin=build-gpu/bin
  fi
  echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  CK_FORK=yes CK_DEFAULT_TIMEOUT=300 CK_VERBOSITY=verbose "$bin/test_cuda_rt_gpu" >"$out/gpu_tests.log" 2>&1
  local trc=$?
  if [ "$trc" = 77 ]; then # the GPU is listed but CUDA cannot use it (driver, permissions)
    echo "gpu.sh: $(grep -m1 '^skip: ' "$out/gpu_tests.log" | sed 's/^skip: //')" >&2
    return 1
  fi
  grep -E "^(device|capture|fault|axpy)|Checks|:(F|E):" "$out/gpu_tests.log" | head -40
  # compiled programs (program/) on the GPU against their CPU backend
  CK_FORK=yes CK_DEFAULT_TIMEOUT=300 CK_VERBOSITY=verbose "$bin/test_program_gpu" \
    >"$out/program_gpu.log" 2>&1
  local grc=$?
  grep -E "^(gpu |  counters|diagnosis|in process|skip)|Checks|:(F|E):" "$out/program_gpu.log" | head -30
  # the PyTorch interpreter of the graph format against the reference runtime (CI has no
  # torch, so this machine runs bench/e2e/test_torch_graph.py)
  local ttrc=skipped
  if [ -x "$bin/ref_dump" ]; then
    python3 bench/e2e/test_torch_graph.py --ref-dump "$bin/ref_dump" --work "$out/torch_graph" \
      >"$out/torch_graph.log" 2>&1
    ttrc=$?
    tail -3 "$out/torch_graph.log"
  fi
  # can a process recover in place from a kernel fault? (docs/cuda_rt.md)
  "$bin/fault_probe" >"$out/fault_probe.log" 2>&1
  cat "$out/fault_probe.log"
  # torch, ours, torch, ours: the matmul rates are compared as means over both rounds
  rm -f "$out/results.txt"
  PYTHONUNBUFFERED=1 python3 bench/cuda_rt/torch_matmul.py "$out/torch1.txt" >"$out/torch.log" 2>&1
  local prc=$?
  "$bin/rt_bench" --torch "$out/torch1.txt" --results "$out/results.txt" >"$out/bench.log" 2>&1
  local brc=$?
  PYTHONUNBUFFERED=1 python3 bench/cuda_rt/torch_matmul.py "$out/torch2.txt" >>"$out/torch.log" 2>&1
  prc=$((prc | $?))
  "$bin/rt_bench" --only-matmul --results "$out/results.txt" >>"$out/bench.log" 2>&1
  brc=$((brc | $?))
  grep -v '^|' "$out/torch.log" | grep -v '^$'
  grep -v -E '^(\||== cuda_rt)' "$out/bench.log" | grep -v '^$'
  echo
  echo "gpu tests: exit $trc ($(grep -o '[0-9]*%: Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' "$out/gpu_tests.log" | tail -1))"
  echo "program gpu tests: exit $grc ($(grep -o '[0-9]*%: Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' "$out/program_gpu.log" | tail -1))"
  echo "torch anchor: exit $prc; rt_bench: exit $brc; torch interpreter test: exit $ttrc"
  echo "== cuda_rt measurements ($(date -u '+%Y-%m-%d'), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)) =="
  python3 bench/cuda_rt/summary.py "$out/results.txt" "$out/torch1.txt" "$out/torch2.txt"
  [ "$trc" = 0 ] && [ "$brc" = 0 ] && [ "$grc" = 0 ]
}

case "$mode" in
  prepare) prepare ;;
  run) run ;;
  all) need_gpu && prepare && run ;;
  *) echo "usage: scripts/gpu.sh [prepare|run]" >&2; exit 2 ;;
esac
