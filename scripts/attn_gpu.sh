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
PYTHONUNBUFFERED=1 python3 bench/codegen/attn_torch.py --ours "$out/ours.txt" --out "$out/table.md" \
  >"$out/torch.log" 2>&1
trc=$?
cs=/usr/local/cuda/bin/compute-sanitizer
src=skipped
if [ -x "$cs" ] && [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    timeout "${SAN_TIMEOUT_S:-150}" "$cs" --tool $tool --error-exitcode 99 .gpu/bin/attn_gpu --check-only --quick \
      >"$out/$tool.log" 2>&1
    echo "$tool: exit $? ($(grep -o 'ERROR SUMMARY: [0-9]* error' "$out/$tool.log" | tail -1); $(grep -c '^FAIL' "$out/$tool.log") FAIL lines)"
  done
fi
if [ "${HARNESS:-1}" = 1 ]; then
  timeout 120 python3 bench/e2e/test_torch_graph.py --ref-dump .gpu/bin/ref_dump --work /tmp/ttg \
    --only sdpa >"$out/sdpa_harness.log" 2>&1
  echo "test_torch_graph --only sdpa: exit $? ($(tail -1 "$out/sdpa_harness.log"))"
fi
echo "attn_gpu exit $arc; torch exit $trc"
cat "$out/table.md" 2>/dev/null || tail -20 "$out/torch.log"
