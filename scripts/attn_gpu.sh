#!/usr/bin/env bash
# attn_gpu.sh: the fused attention kernel on a GPU in one go (docs/perf.md, "Fused
# attention"): correctness of every tile against the f64 reference, the timings of every
# tile on the issue's workloads, torch's SDPA on the same shapes in the same run, then
# compute-sanitizer memcheck and racecheck on the checks, and the SDPA harness checks.
#
#   scripts/attn_gpu.sh prepare    here: builds attn_gpu and ref_dump (Release) into .gpu/
#   run(command="scripts/attn_gpu.sh run", carry=[".gpu/bin", ".gpu/lib"])
# Logs and the table go to $OUT (or .gpu/out).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
if [ "$mode" = prepare ]; then
  cmake -S . -B .gpu/build -DCMAKE_BUILD_TYPE=Release -DLUMINAL_WERROR=ON >/dev/null || exit 1
  cmake --build .gpu/build -j2 --target attn_gpu ref_dump >/dev/null || exit 1
  mkdir -p .gpu/bin .gpu/lib
  cp .gpu/build/bench/codegen/attn_gpu .gpu/build/bench/e2e/ref_dump .gpu/bin/
  for b in .gpu/bin/attn_gpu .gpu/bin/ref_dump; do
    ldd "$b" | awk '/=> \// {print $3}' | grep -v -E '/lib(c|m|dl|rt|pthread|gcc_s)\.so' |
      xargs -r -I{} cp -L {} .gpu/lib/
  done
  # the CUBINs of every kernel the run uses, so the GPU machine need not compile them
  rm -rf .gpu/bin/kcache
  LUMINAL_KERNEL_CACHE=$(pwd)/.gpu/bin/kcache .gpu/bin/attn_gpu --precompile || exit 1
  echo "attn_gpu.sh: prepared .gpu/bin/attn_gpu, $(ls .gpu/bin/kcache | wc -l) CUBINs ($(du -sh .gpu/bin/kcache | cut -f1))"
  exit 0
fi
out=${OUT:-.gpu/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LUMINAL_KERNEL_CACHE=$(pwd)/.gpu/bin/kcache
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | head -1)"
.gpu/bin/attn_gpu --results "$out/ours.txt" ${ATTN_ARGS:-} >"$out/attn.log" 2>&1
arc=$?
grep -E "^(device|check|checks|FAIL|attn_gpu)" "$out/attn.log" | head -40
# another build of the template to compare in the same run: .gpu/bin/attn_gpu_TAG with its
# CUBINs in .gpu/bin/kcache_TAG (built from another tree by hand)
ours=(--ours "$out/ours.txt")
for alt in .gpu/bin/attn_gpu_*; do
  [ -x "$alt" ] || continue
  tag=${alt##*/attn_gpu_}
  LUMINAL_KERNEL_CACHE=$(pwd)/.gpu/bin/kcache_$tag "$alt" --results "$out/ours_$tag.txt" ${ATTN_ARGS:-} \
    >"$out/attn_$tag.log" 2>&1
  echo "attn_gpu_$tag: exit $?"
  grep -E "^(checks|FAIL)" "$out/attn_$tag.log" | head -10
  ours+=(--ours "$out/ours_$tag.txt")
done
PYTHONUNBUFFERED=1 python3 bench/codegen/attn_torch.py "${ours[@]}" --out "$out/table.md" \
  >"$out/torch.log" 2>&1
trc=$?
# profiler counters of one kernel (NCU="WORKLOAD BQ BK WARPS STAGES SPLITS")
if [ -n "${NCU:-}" ] && command -v ncu >/dev/null; then
  set -- $NCU
  timeout 120 ncu --clock-control none -k lm_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section LaunchStats \
    .gpu/bin/attn_gpu --no-checks --only "$1" --tile $2 $3 $4 $5 $6 >"$out/ncu.log" 2>&1
  echo "ncu: exit $?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Issue Slots Busy|Executed Ipc|Shared Memory|Bank|Stall|Warp Cycles Per Issued" "$out/ncu.log" | head -30
fi
cs=/usr/local/cuda/bin/compute-sanitizer
src=skipped
if [ -x "$cs" ] && [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    timeout "${SAN_TIMEOUT_S:-150}" "$cs" --tool $tool --error-exitcode 99 .gpu/bin/attn_gpu --check-only --quick \
      >"$out/$tool.log" 2>&1
    echo "$tool: exit $? ($(grep -E -o '(ERROR|RACECHECK) SUMMARY: .*' "$out/$tool.log" | tail -1); $(grep -c '^FAIL' "$out/$tool.log") FAIL lines)"
  done
fi
if [ "${HARNESS:-1}" = 1 ]; then
  timeout 120 python3 bench/e2e/test_torch_graph.py --ref-dump .gpu/bin/ref_dump --work /tmp/ttg \
    --only sdpa >"$out/sdpa_harness.log" 2>&1
  echo "test_torch_graph --only sdpa: exit $? ($(tail -1 "$out/sdpa_harness.log"))"
fi
echo "attn_gpu exit $arc; torch exit $trc"
cat "$out/table.md" 2>/dev/null || tail -20 "$out/torch.log"
