#!/usr/bin/env bash
# Builds the project and runs the main job on bundled examples. The search over the
# e-graph is not built yet, so the job is what exists end to end: a tensor graph read,
# checked and encoded into the e-graph (loaded, not yet rewritten: the compiler's rules
# come later), the reference runtime on it, and the engine running a bundled rule
# program.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target luminal_search eqsat
g=examples/graphs/decode_mlp_bf16.json
echo "== luminal_search: $g on the CPU reference runtime"
build/tools/luminal_search/luminal_search --graph "$g" --reference
echo "== luminal_search: its e-graph encoding, loaded into the engine (no rewrite rules yet:"
echo "   one iteration of the empty default ruleset changes nothing; saturation comes with the rules)"
build/tools/luminal_search/luminal_search --graph "$g" --emit egraph --quiet > build/example.egg
printf '(run 1)\n(print-size)\n' >> build/example.egg
build/tools/eqsat/eqsat build/example.egg
echo "== eqsat: the e-graph engine on a bundled rule program (examples/egg/math.egg)"
build/tools/eqsat/eqsat --stats examples/egg/math.egg
