#!/usr/bin/env bash
# luminal_run_gpu.sh: luminal_run on the GPU, in one command (under 5 minutes on one H200).
#
#   scripts/gpu.sh prepare            (here: builds .gpu/bin/luminal_run, luminal_run_make)
#   scripts/luminal_run_gpu.sh        (on the GPU machine; logs in $OUT, default .gpu/out)
#
# For each graph (tests/luminal_run/data/mixed.json and a few examples at their profile
# sizes) it saves a program lowered node for node (luminal_run_make: ll_graph_from_hlir +
# codegen, as luminal_search does until its search picks something better), then runs
#   luminal_run DIR --write-inputs IN --seed 0            (bench/e2e/run_e2e.py's calls)
#   luminal_run DIR --inputs IN --outputs OUT --bench --json
#   luminal_run DIR --inputs IN --check --json              (the GPU against hl_run)
#   luminal_run DIR --inputs IN --outputs OUT_CPU --backend cpu   (small graphs only)
# and prints one line per graph: backend, check verdict and the largest error over the
# tolerance, single call / with host I/O / back to back in microseconds.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-.gpu/bin}
out=${OUT:-.gpu/out}/luminal_run
mkdir -p "$out"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for t in luminal_run luminal_run_make; do
  if [ ! -x "$bin/$t" ]; then
    echo "luminal_run_gpu.sh: $bin/$t is missing (run scripts/gpu.sh prepare on the build machine)"
    exit 2
  fi
done
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "luminal_run_gpu.sh: no GPU here: the programs run on the CPU executor (a dry run; the" \
    "big examples take minutes there)"
fi
graphs="tests/luminal_run/data/mixed.json examples/graphs/embedding_gather.json
examples/graphs/rmsnorm_f32_8192x4096.json examples/graphs/softmax_f32_4096x8192.json
examples/graphs/decode_mlp_bf16.json"
rc=0
printf '%-28s %-4s %-6s %10s %12s %12s %12s\n' graph back check "err/tol" "single us" \
  "single+io us" "b2b us"
for g in $graphs; do
  name=$(basename "$g" .json)
  w="$out/$name"
  rm -rf "$w"
  mkdir -p "$w"
  if ! LR_GRAPH="$g" LR_DIR="$w/program" CK_FORK=no "$bin/luminal_run_make" >"$w/make.log" 2>&1; then
    echo "$name: making the program failed (see $w/make.log)"; tail -3 "$w/make.log"; rc=1; continue
  fi
  "$bin/luminal_run" "$w/program" --write-inputs "$w/inputs" --seed 0 >"$w/write.log" 2>&1 ||
    { echo "$name: --write-inputs failed"; tail -3 "$w/write.log"; rc=1; continue; }
  timeout 120 "$bin/luminal_run" "$w/program" --inputs "$w/inputs" --outputs "$w/outputs" --bench \
    --json >"$w/bench.json" 2>"$w/bench.err" ||
    { echo "$name: --bench failed"; tail -3 "$w/bench.err"; rc=1; continue; }
  timeout 200 "$bin/luminal_run" "$w/program" --inputs "$w/inputs" --check --json \
    >"$w/check.json" 2>"$w/check.err"
  crc=$?
  [ $crc = 0 ] || rc=1
  python3 - "$w" "$name" "$crc" <<'PY'
import json, sys
w, name, crc = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = json.load(open(f"{w}/bench.json"))
try:
    c = json.load(open(f"{w}/check.json"))
    worst = max((o["check"]["max_err"] / o["check"]["tol"] if o["check"]["tol"] else
                 (0.0 if o["check"]["max_err"] == 0 else float("inf")))
                for o in c["outputs"])
    verdict = "ok" if c.get("check", {}).get("ok") else f"FAIL({crc})"
except Exception as e:  # noqa: BLE001
    worst, verdict = float("nan"), f"error({crc})"
print(f"{name:28s} {b['backend']:4s} {verdict:6s} {worst:10.3g} {b['single_call_us']:12.1f} "
      f"{b['single_call_io_us']:12.1f} {b['back_to_back_us']:12.1f}")
PY
done
# the GPU's outputs against the CPU executor's on the small graph, through the files
w="$out/mixed"
if [ -d "$w/outputs" ]; then
  "$bin/luminal_run" "$w/program" --inputs "$w/inputs" --outputs "$w/outputs_cpu" --backend cpu \
    --quiet >/dev/null 2>"$w/cpu.err" &&
    python3 - "$w" <<'PY'
import os, sys
import numpy as np
w = sys.argv[1]
for f in sorted(os.listdir(f"{w}/outputs")):
    a, b = np.load(f"{w}/outputs/{f}"), np.load(f"{w}/outputs_cpu/{f}")
    d = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if a.size else 0.0
    print(f"mixed {f}: GPU vs CPU executor, {a.dtype}{list(a.shape)}, max |diff| {d:.3g}, "
          f"bytes {'equal' if a.tobytes() == b.tobytes() else 'differ'}")
PY
fi
echo "luminal_run_gpu.sh: exit $rc (logs in $out)"
exit $rc
