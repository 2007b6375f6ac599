#!/usr/bin/env bash
# attn_e2e_gpu.sh: issue 22's checks of the fused attention as the search emits it, in one
# device call (docs/perf.md, "Fused attention in the search"):
#
#   1. genome_gpu on every example with attention in it: random and fused genomes built,
#      compiled and run on the GPU, each compared with the reference runtime;
#   2. bench/e2e/run_e2e.py on the attention workloads: luminal_search --limit 20 on the
#      GPU, luminal_run --bench, and every torch variant (SDPA on 4-D tensors among them)
#      on the same inputs; DIMS="S=4096" runs both sides at that length (the search still
#      measures at the profile value);
#   3. each saved program at odd sizes against the reference runtime (luminal_run --check
#      at S = 1, 77, 129), and compute-sanitizer memcheck and racecheck on one run of each.
#
#   scripts/gpu.sh prepare                                        (here: .gpu/bin, .gpu/lib)
#   run(command="STEPS=1,2,3 ONLY=... scripts/attn_e2e_gpu.sh", carry=[".gpu/bin", ".gpu/lib"])
#
# STEPS (default 1,2,3), ONLY (workload names, default the six attention examples), DIMS,
# STL (the search's --time-limit, default 20), BUDGET (seconds for step 2, default 400),
# GENOMES (genomes per graph in step 1, default 24), VARIANTS (the torch variants, run_e2e.py
# --variants). Logs and tables in $OUT (.gpu/out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(pwd)/.gpu/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "attn_e2e_gpu.sh: no GPU here (nvidia-smi lists none)" >&2
  exit 1
fi
steps=${STEPS:-1,2,3}
only=${ONLY:-causal_attention_bf16,causal_attention_d128_bf16,decode_attention_bf16,attention_bf16,attention_mask_bf16,attention_gqa_bf16}
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
work=/tmp/attn_e2e
rc=0

if [[ $steps == *1* ]]; then
  graphs=$(echo "$only" | tr ',' '\n' | sed 's|.*|examples/graphs/&.json|' | tr '\n' ' ')
  timeout 200 .gpu/bin/genome_gpu --n "${GENOMES:-24}" --budget-s 25 $graphs >"$out/genome_gpu.log" 2>&1
  g=$?
  echo "genome_gpu: exit $g"
  grep -E "^(graph|  |total|FAIL|genome_gpu)" "$out/genome_gpu.log" | tail -20
  [ $g = 0 ] || rc=1
fi

if [[ $steps == *2* ]]; then
  rm -rf "$work"
  dimargs=""
  for d in ${DIMS:-}; do dimargs="$dimargs --dim $d"; done
  PYTHONUNBUFFERED=1 python3 bench/e2e/run_e2e.py --bin .gpu/bin --out "$work" --only "$only" \
    --search-time-limit "${STL:-20}" --budget "${BUDGET:-400}" $dimargs ${VARIANTS:+--variants "$VARIANTS"} \
    >"$out/e2e.log" 2>&1
  e=$?
  cp "$work"/results.* "$out/" 2>/dev/null
  (cd "$work" && find . -name search.jsonl -o -name search.log | tar czf "$out/e2e.tgz" -T - 2>/dev/null)
  echo "run_e2e: exit $e"
  cat "$out/results.md" 2>/dev/null | head -40
  [ $e = 0 ] || rc=1
  # the kernels of each winner: fused attention or not
  for p in "$work"/*/program; do
    plan=$(find "$p" -name plan.json | head -1)
    [ -n "$plan" ] || continue
    echo "$(basename "$(dirname "$p")"): $(grep -o '"template": *"[a-z-]*"' "$plan" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
  done
fi

if [[ $steps == *3* ]]; then
  cs=/usr/local/cuda/bin/compute-sanitizer
  for p in "$work"/*/program; do
    [ -n "$(find "$p" -name plan.json | head -1)" ] || continue
    name=$(basename "$(dirname "$p")")
    gj=$(find "$p" -name graph.json | head -1)
    dim=$(python3 -c "import json,sys; d=json.load(open('$gj')).get('dims',[]); print(d[0]['name'] if d else '')")
    for v in 1 77 129; do
      [ -n "$dim" ] || break
      timeout 120 .gpu/bin/luminal_run "$p" --dim "$dim=$v" --seed 3 --check >"$out/check_${name}_$v.log" 2>&1
      c=$?
      echo "$name $dim=$v --check: exit $c $(grep -E -o 'largest error.*' "$out/check_${name}_$v.log" | head -1)"
      [ $c = 0 ] || rc=1
    done
    if [ -x "$cs" ]; then
      for tool in memcheck racecheck; do
        timeout 150 "$cs" --tool $tool --error-exitcode 99 .gpu/bin/luminal_run "$p" ${dim:+--dim "$dim=77"} --seed 3 \
          >"$out/${tool}_$name.log" 2>&1
        s=$?
        echo "$name $tool: exit $s ($(grep -E -o '(ERROR|RACECHECK) SUMMARY: .*' "$out/${tool}_$name.log" | tail -1))"
        [ $s = 0 ] || rc=1
      done
    fi
  done
fi
echo "== done $(date -u '+%H:%M:%S') rc=$rc"
exit $rc
