#!/usr/bin/env bash
# Builds the project and runs the main job on a bundled example: the search.
#
#   luminal_search --graph examples/graphs/decode_mlp_bf16.json --limit 20 --out build/example
#
# saturates the graph's e-graph with the compiler's rules, searches its programs
# genetically (docs/search.md) and saves the fastest into build/example (program/,
# graph.json, search.jsonl, report.html). On a machine with an NVIDIA GPU every candidate
# is measured on it (worker processes own the CUDA contexts); without one, the analytic
# cost model ranks them and the output says the times are modelled, not measured.
# EXAMPLE_GRAPH overrides the graph, EXAMPLE_LIMIT the limit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target luminal_search
g=${EXAMPLE_GRAPH:-examples/graphs/decode_mlp_bf16.json}
limit=${EXAMPLE_LIMIT:-20}
out=build/example
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "== a GPU is visible: candidates are measured on it"
else
  echo "== no GPU visible: the cost model ranks the candidates (modelled, not measured)"
fi
echo "== luminal_search --graph $g --limit $limit --out $out"
build/tools/luminal_search/luminal_search --graph "$g" --limit "$limit" --out "$out"
echo "== the winner is in $out/program; the search curve and its kernels in $out/report.html"
if [ -x build/tools/luminal_run/luminal_run ] || cmake --build build --target luminal_run >/dev/null 2>&1; then
  echo "== luminal_run $out --check"
  build/tools/luminal_run/luminal_run "$out" --check
fi
