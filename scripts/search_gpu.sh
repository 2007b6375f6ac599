#!/usr/bin/env bash
# search_gpu.sh: the search measured on the GPU over every example graph, and how well
# the cost model ranks what the GPU measured (docs/search.md, "How good the model is").
#
#   scripts/gpu.sh prepare                                   (here: builds .gpu/bin)
#   run(command="scripts/search_gpu.sh", carry=[".gpu"])     (the H200)
#
# For every examples/graphs/*.json: luminal_search --graph G --limit N --gpu --out
# $OUT/search/NAME (N = 40 for the small, memory-bound examples, 24 for the rest; each
# example at most SEARCH_TIME_LIMIT seconds, 22 by default, so the whole run fits in about
# five minutes), then Spearman's rank correlation between modelled_ms and the measured ms
# of every candidate with a time (the search candidates and the reference lowering;
# those stopped early by the cutoff counted apart), per example and pooled.
# Prints one line per example and a summary; logs go to $OUT (default .gpu/out).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-$root/.gpu/out}
mkdir -p "$out/search"
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "search_gpu.sh: no GPU here (nvidia-smi lists none)" >&2
  exit 1
fi
bin=.gpu/bin/luminal_search
[ -x "$bin" ] || bin=build/tools/luminal_search/luminal_search
[ -x "$bin" ] || { echo "search_gpu.sh: no luminal_search (run scripts/gpu.sh prepare)" >&2; exit 1; }
export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tl=${SEARCH_TIME_LIMIT:-22}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $bin"
rc=0
for g in examples/graphs/*.json; do
  name=$(basename "$g" .json)
  case $name in
    elementwise*|rmsnorm*|softmax*|layernorm*|decode_mlp*|embedding*|primitives*) limit=40 ;;
    *) limit=24 ;;
  esac
  start=$(date +%s.%N)
  "$bin" --graph "$g" --limit "$limit" --gpu --time-limit "$tl" --out "$out/search/$name" \
    --json > "$out/search/$name.json" 2> "$out/search/$name.log"
  r=$?
  end=$(date +%s.%N)
  [ $r -eq 0 ] || rc=1
  python3 - "$out/search/$name.json" "$name" "$r" "$start" "$end" <<'PY'
import json, sys
path, name, r, t0, t1 = sys.argv[1:]
try:
    s = json.load(open(path))
    print(f"{name:30s} exit {r}: {s['evaluated']:3d} evaluated, {s['ok']:3d} ok, best {s['best_ms']} ms, "
          f"reference {s['reference_ms']} ms, first {s['first_ms']} ms, {float(t1) - float(t0):.1f} s")
except Exception as e:
    print(f"{name:30s} exit {r}: no summary ({e}); see {path[:-5]}.log")
PY
done
python3 scripts/spearman.py "$out/search" | tee "$out/search_gpu_summary.txt"
exit $rc
