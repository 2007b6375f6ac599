#!/usr/bin/env bash
# e2e_gpu.sh: the example suite against PyTorch (bench/e2e/run_e2e.py) in one device call,
# its results copied to $OUT every 10 s so that a call cut short keeps what it measured,
# then the cost model's rank correlation over the suite's search logs (scripts/spearman.py).
#
#   scripts/gpu.sh prepare                                        (here: .gpu/bin, .gpu/lib)
#   run(command="scripts/e2e_gpu.sh", carry=[".gpu/bin", ".gpu/lib"])   (the GPU machine)
#
# BUDGET (seconds for the suite, default 520), STL (the search's --time-limit, 18), ONLY
# (comma-separated workload names) and PART (K/N: every N-th workload) set the run. The
# twelve workloads need two calls (PART=1/2, PART=2/2; merge the two results.json with
# run_e2e.py --merge): a search is followed by the reference runtime's checks on the CPU,
# tens of seconds on the large graphs, and torch.compile compiles each graph cold.
# Results in $OUT (default .gpu/out): results.md, results.json, e2e.log and e2e.tgz (every
# search's search.jsonl and search.log).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(pwd)/.gpu/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "e2e_gpu.sh: no GPU here (nvidia-smi lists none)" >&2
  exit 1
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
work=$(mktemp -d)
save() {
  cp "$work"/results.* "$out/" 2>/dev/null
  (cd "$work" && find . -name search.jsonl -o -name search.log | tar czf "$out/e2e.tgz" -T - 2>/dev/null)
}
(while sleep 10; do save; done) &
saver=$!
python3 bench/e2e/run_e2e.py --bin .gpu/bin --out "$work" ${ONLY:+--only "$ONLY"} ${PART:+--part "$PART"} \
  --search-time-limit "${STL:-18}" --budget "${BUDGET:-520}" >"$out/e2e.log" 2>&1
rc=$?
kill $saver 2>/dev/null
save
echo "run_e2e: exit $rc"
cat "$out/results.md" 2>/dev/null
python3 scripts/spearman.py "$work"
date -u
exit $rc
