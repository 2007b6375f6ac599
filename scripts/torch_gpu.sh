#!/usr/bin/env bash
# torch_gpu.sh - the Python package on a GPU machine, in one call (docs/python.md, "On a
# GPU"): installs the package (pip install ./python builds the C library with the CUDA
# headers there), runs python/tests with the GPU present (the programs then run on the
# GPU backend and the search measures on the GPU for evaluator="auto"), then the
# Llama-3.2-1B-shaped decoder benchmark against torch eager and torch.compile
# reduce-overhead (python/bench/llama_bench.py), and prints its JSON.
#
#   scripts/torch_gpu.sh [llama_bench.py options]
#
# Needs: an NVIDIA GPU and driver, the CUDA toolkit's headers and NVRTC (as scripts/gpu.sh),
# torch with CUDA (PyPI's default wheel), the packages of scripts/deps.sh. Not run by the
# session that wrote it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
python3 -m pip install -q ./python || python3 -m pip install -q --break-system-packages ./python
python3 -c 'import torch; assert torch.cuda.is_available(), "no CUDA device visible to torch"'
python3 -m pytest -q -p no:cacheprovider python/tests
python3 python/bench/llama_bench.py "$@"
