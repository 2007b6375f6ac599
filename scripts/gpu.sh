#!/usr/bin/env bash
# gpu.sh: the cuda_rt GPU suite and measurements in one go, for a machine with a GPU.
#
#   scripts/gpu.sh prepare   on a build machine (Check, xxHash installed): builds the GPU
#                            test and rt_bench (Release) into .gpu/bin with the shared
#                            libraries they need in .gpu/lib (.gpu/ is git-ignored), so a
#                            GPU machine without those packages can run them
#   scripts/gpu.sh run       on the GPU machine: runs the gpu-labelled tests (cuda_rt's and
#                            compiled programs' against their CPU backend),
#                            fault_probe, the torch.matmul anchor and rt_bench, then the
#                            generated code (codegen_gpu below: the genome checker on every
#                            example, memcheck on one genome each, cg_bench), writes logs to $OUT (or
#                            .gpu/out) and prints a short summary table last. Uses .gpu/bin
#                            when present, else builds build-gpu/ here first.
#   scripts/gpu.sh codegen   on the GPU machine: the generated code only (codegen_gpu below)
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

# The command-line tools that travel to the GPU machine too (.gpu/bin/NAME, built from
# tools/NAME): add a tool to this list.
GPU_TOOLS="luminal_run luminal_search"
prepare_tools() {
  local t
  for t in $GPU_TOOLS; do
    cmake --build .gpu/build -j "$(nproc)" --target "$t" >/dev/null || return 1
    cp ".gpu/build/tools/$t/$t" .gpu/bin/ || return 1
  done
  # luminal_run's program maker (scripts/luminal_run_gpu.sh saves programs with it)
  cmake --build .gpu/build -j "$(nproc)" --target luminal_run_make >/dev/null &&
    cp .gpu/build/tests/luminal_run/luminal_run_make .gpu/bin/
}

prepare() {
  local src=${LUMINAL_SRC:-$root}
  cmake -S "$src" -B .gpu/build -DCMAKE_BUILD_TYPE=Release -DLUMINAL_WERROR=ON >/dev/null || return 1
  cmake --build .gpu/build -j "$(nproc)" --target test_cuda_rt_gpu rt_bench fault_probe \
    test_program_gpu ref_dump $codegen_targets >/dev/null || return 1
  mkdir -p .gpu/bin .gpu/lib
  cp .gpu/build/tests/cuda_rt/test_cuda_rt_gpu .gpu/build/bench/cuda_rt/rt_bench \
    .gpu/build/bench/cuda_rt/fault_probe .gpu/build/tests/program/test_program_gpu \
    .gpu/build/bench/e2e/ref_dump .gpu/bin/
  for t in $codegen_targets; do cp ".gpu/build/bench/codegen/$t" .gpu/bin/ || return 1; done
  prepare_tools || return 1
  prepare_search_gpu || return 1
  # the shared libraries that are not glibc's travel along
  for b in .gpu/bin/*; do
    ldd "$b" | awk '/=> \// {print $3}' | grep -v -E '/lib(c|m|dl|rt|pthread|gcc_s)\.so' |
      xargs -r -I{} cp -L {} .gpu/lib/
  done
  echo "gpu.sh: prepared $(ls .gpu/bin | tr '\n' ' ')in .gpu/bin, libs: $(ls .gpu/lib | tr '\n' ' ')"
}

# The search's GPU evaluator (scripts/worker_gpu.sh runs them): its worker host and test.
prepare_search_gpu() {
  cmake --build .gpu/build -j "$(nproc)" --target sr_gpu_driver test_sr_gpu_gpu >/dev/null || return 1
  cp .gpu/build/tests/search_gpu/sr_gpu_driver .gpu/build/tests/search_gpu/test_sr_gpu_gpu .gpu/bin/
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
        test_program_gpu $codegen_targets >/dev/null || {
        echo "gpu.sh: build failed (Check and xxHash headers are needed; or run prepare elsewhere)"
        return 1
      }
    mkdir -p build-gpu/bin
    cp build-gpu/tests/cuda_rt/test_cuda_rt_gpu build-gpu/bench/cuda_rt/rt_bench \
      build-gpu/bench/cuda_rt/fault_probe build-gpu/tests/program/test_program_gpu build-gpu/bin/
    for t in $codegen_targets; do cp "build-gpu/bench/codegen/$t" build-gpu/bin/; done
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
  codegen_gpu "$bin" "$out"
  local crc=$?
  echo "== cuda_rt measurements ($(date -u '+%Y-%m-%d'), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)) =="
  python3 bench/cuda_rt/summary.py "$out/results.txt" "$out/torch1.txt" "$out/torch2.txt"
  [ "$trc" = 0 ] && [ "$brc" = 0 ] && [ "$grc" = 0 ] && [ "$crc" = 0 ]
}

# ---- the generated code on the GPU (docs/codegen.md, "The GPU genome checker" and
# "Speed benches"): bench/codegen's genome_gpu on every example graph, genome_gpu --one
# under compute-sanitizer's memcheck, and cg_bench. Counts and budgets (environment):
#   GENOMES (20)            genomes per example
#   GENOME_BUDGET_S (0)     per example, no new genome drawn after this many seconds of
#                           draws (0: none, every example gets its GENOMES)
#   GENOME_WORK (67108864)  the large dims: the graph's element work bound
#   MEMCHECK_WORK (4194304) the same under memcheck (kernels run far slower there)
#   COMPUTE_SANITIZER       default /usr/local/cuda/bin/compute-sanitizer; CODEGEN_GPU=0 skips
# Prints a few lines per part and returns nonzero on any disagreement, sanitizer error or
# failed bench.
codegen_targets="genome_gpu cg_bench"
codegen_gpu() {
  local bin=$1 out=$2
  [ "${CODEGEN_GPU:-1}" = 0 ] && { echo "codegen gpu: skipped (CODEGEN_GPU=0)"; return 0; }
  if [ ! -x "$bin/genome_gpu" ] || [ ! -x "$bin/cg_bench" ]; then
    echo "codegen gpu: genome_gpu / cg_bench missing from $bin (run scripts/gpu.sh prepare again)"
    return 1
  fi
  local graphs=(examples/graphs/*.json) t0=$SECONDS
  # the speed figures first: cg_bench
  timeout "${CG_BENCH_TIMEOUT_S:-150}" "$bin/cg_bench" >"$out/cg_bench.log" 2>&1
  local brc=$?
  grep -E '^(cg_bench|fused|decode_mlp)' "$out/cg_bench.log"
  echo "cg_bench: exit $brc, $((SECONDS - t0)) s"
  t0=$SECONDS
  echo "== generated code: genome checker ($(date -u '+%H:%M:%S'))"
  # kernels that several genomes share are compiled once (the on-disk CUBIN cache)
  export LUMINAL_KERNEL_CACHE=${LUMINAL_KERNEL_CACHE:-${TMPDIR:-/tmp}/luminal-kernel-cache}
  mkdir -p "$LUMINAL_KERNEL_CACHE"
  "$bin/genome_gpu" --n "${GENOMES:-20}" --budget-s "${GENOME_BUDGET_S:-0}" \
    --work "${GENOME_WORK:-67108864}" --timeout "${GENOME_TIMEOUT_S:-120}" --verbose \
    "${graphs[@]}" >"$out/genome_gpu.log" 2>&1
  local grc=$?
  grep -E '^(device|dims|example|total|FAIL)' "$out/genome_gpu.log" | cut -c1-400 | head -80
  echo "genome checker: exit $grc, $((SECONDS - t0)) s"
  t0=$SECONDS
  local cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer} mrc=0 merr="-"
  if [ -x "$cs" ]; then
    timeout "${MEMCHECK_TIMEOUT_S:-240}" "$cs" --tool memcheck --target-processes all --error-exitcode 99 "$bin/genome_gpu" --one \
      --work "${MEMCHECK_WORK:-4194304}" --timeout 200 "${graphs[@]}" >"$out/memcheck.log" 2>&1
    mrc=$?
    merr=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$out/memcheck.log" | awk '{s += $3} END {print s + 0}')
    grep -E '^(example|total|FAIL)|ERROR SUMMARY' "$out/memcheck.log" | cut -c1-300 | head -40
    echo "memcheck: exit $mrc, $merr errors, $((SECONDS - t0)) s"
  else
    echo "memcheck: $cs not found: not run"
    mrc=1
  fi
  echo "== generated code: genome checker exit $grc ($(grep '^total:' "$out/genome_gpu.log" | tail -1)); memcheck exit $mrc ($merr errors); cg_bench exit $brc"
  [ "$grc" = 0 ] && [ "$mrc" = 0 ] && [ "$brc" = 0 ]
}

case "$mode" in
  prepare) prepare ;;
  run) run ;;
  codegen) # the generated code alone (genome checker, memcheck, cg_bench), without the
    # cuda_rt suite and its benchmarks
    need_gpu || exit 1
    export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    mkdir -p "${OUT:-$root/.gpu/out}"
    echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
    codegen_gpu .gpu/bin "${OUT:-$root/.gpu/out}" ;;
  all) need_gpu && prepare && run ;;
  *) echo "usage: scripts/gpu.sh [prepare|run|codegen]" >&2; exit 2 ;;
esac
