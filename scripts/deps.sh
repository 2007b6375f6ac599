#!/usr/bin/env bash
# Installs what building and testing need on a Debian machine, skipping what is there.
# Debian packages through apt-get (as root, or through sudo); Python packages through pip.
set -euo pipefail

debs=(build-essential cmake pkg-config check libsubunit-dev libxxhash-dev
      libmimalloc-dev libjansson-dev libgmp-dev clang libclang-rt-14-dev python3 python3-pip)
missing=()
for p in "${debs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# numpy is the independent oracle for the reference runtime's tests; egglog (PyPI) is the
# speed anchor of bench/. Both are optional for the build itself.
py=$(command -v python3)
pips=()
"$py" -c 'import numpy' 2>/dev/null || pips+=(numpy)
# torch and pytest: the Python package's tests (python/tests, run by scripts/test.sh;
# LUMINAL_PYTHON=0 leaves them out). torch from PyPI takes about 80 s and 5.7 GB here (its
# CUDA wheels come with it; the tests run it on the CPU).
if [ "${LUMINAL_PYTHON:-1}" = 1 ]; then
  "$py" -c 'import torch' 2>/dev/null || pips+=(torch)
  "$py" -c 'import pytest' 2>/dev/null || pips+=(pytest)
fi
if [ "${LUMINAL_BENCH:-0}" = 1 ]; then
  "$py" -c 'import egglog' 2>/dev/null || pips+=(egglog)
fi
if ((${#pips[@]})); then
  echo "deps: pip installing ${pips[*]}" >&2
  "$py" -m pip install -q "${pips[@]}" >&2 || "$py" -m pip install -q --break-system-packages "${pips[@]}" >&2
fi
