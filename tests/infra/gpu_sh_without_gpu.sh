#!/bin/sh
# gpu_sh_without_gpu.sh SOURCE_DIR
# Where there is no GPU, `scripts/gpu.sh run` (and plain `scripts/gpu.sh`) must say so in
# one line and exit non-zero, before building or running anything (no Python tracebacks).
# nvidia-smi is replaced by one that finds no GPU, as on a machine without one; cmake and
# python3 by stubs that say they were reached.
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stub" "$work/out"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$work/stub/nvidia-smi"
for t in cmake python3; do
  printf '#!/bin/sh\necho "STUB %s reached" >&2\nexit 97\n' "$t" >"$work/stub/$t"
done
chmod +x "$work/stub/"*
fail=0
for mode in run ""; do
  out=$(PATH="$work/stub:$PATH" OUT="$work/out" bash "$src/scripts/gpu.sh" $mode 2>&1)
  rc=$?
  echo "== scripts/gpu.sh $mode (exit $rc)"
  echo "$out"
  lines=$(printf '%s\n' "$out" | wc -l)
  if [ "$rc" -eq 0 ]; then echo "FAIL: exit 0 without a GPU"; fail=1; fi
  if [ "$lines" -ne 1 ]; then echo "FAIL: $lines lines, one expected"; fail=1; fi
  if ! printf '%s\n' "$out" | grep -q '^gpu.sh: no GPU here'; then
    echo "FAIL: the line does not say there is no GPU"
    fail=1
  fi
done
[ "$fail" = 0 ] && echo "ok: without a GPU gpu.sh says so in one line and exits non-zero"
exit "$fail"
