#!/bin/sh
# twice.sh DRIVER ARGS... - runs the driver twice in fresh processes and fails unless
# both runs succeed and print the same bytes (docs/architecture.md, Determinism).
set -eu
drv=$1
shift
a=$(mktemp)
b=$(mktemp)
trap 'rm -f "$a" "$b"' EXIT
"$drv" "$@" > "$a"
"$drv" "$@" > "$b"
if ! cmp -s "$a" "$b"; then
    echo "twice.sh: two runs of $drv $* printed different output:" >&2
    diff "$a" "$b" | head -20 >&2
    exit 1
fi
lines=$(wc -l < "$a")
if [ "$lines" -lt 10 ]; then
    echo "twice.sh: the driver printed only $lines lines" >&2
    exit 1
fi
echo "twice.sh: $lines identical lines"
