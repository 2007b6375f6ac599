#!/usr/bin/env bash
# Builds the project and runs the main job on a bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLUMINAL_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"
echo "== eqsat: the e-graph engine on a bundled rule program (examples/egg/math.egg)"
build/tools/eqsat/eqsat --stats examples/egg/math.egg
