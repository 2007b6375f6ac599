#!/bin/sh
# bench/rules/measure.sh - the saturation time and memory of rules.dsl per example graph.
#
# For each examples/graphs/*.json: the encoding (luminal_search --emit egraph), rules.dsl
# and rules/run.egg are concatenated into one program, which eqsat runs RUNS times. The
# table gives the median wall time of the process, the largest peak RSS eqsat reports for
# itself (--stats), the engine's counted peak memory and the row count. A shell, not
# Python, starts eqsat: Linux keeps a forking parent's peak RSS in the child's, and a
# Python parent alone is 14 MiB. docs/rules.md records the output.
#
# usage: bench/rules/measure.sh [BUILD_DIR] [RUNS]     (defaults: build, 5)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
runs=${2:-5}
eqsat=$build/tools/eqsat/eqsat
search=$build/tools/luminal_search/luminal_search
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| example | wall (median of $runs) | peak RSS | engine peak | rows |"
echo "|---|---|---|---|---|"
for g in "$src"/examples/graphs/*.json; do
    name=$(basename "$g" .json)
    "$search" --graph "$g" --emit egraph --quiet > "$tmp/g.egg"
    cat "$tmp/g.egg" "$src/rules.dsl" "$src/rules/run.egg" > "$tmp/p.egg"
    : > "$tmp/walls"
    rss=0
    i=0
    while [ "$i" -lt "$runs" ]; do
        t0=$(date +%s%N)
        "$eqsat" --stats --quiet "$tmp/p.egg" > /dev/null 2> "$tmp/stats"
        t1=$(date +%s%N)
        echo $(( (t1 - t0) / 1000 )) >> "$tmp/walls"
        r=$(sed -n 's/^peak RSS: \([0-9.]*\) MiB$/\1/p' "$tmp/stats")
        rss=$(echo "$rss $r" | awk '{print ($2 > $1) ? $2 : $1}')
        i=$((i + 1))
    done
    wall=$(sort -n "$tmp/walls" | awk -v n="$runs" 'NR == int(n / 2) + 1 {printf "%.1f", $1 / 1000}')
    peak=$(sed -n 's/^engine memory: .* (peak \([0-9.]*\) MiB)$/\1/p' "$tmp/stats")
    rows=$(sed -n 's/^total rows: \([0-9]*\)$/\1/p' "$tmp/stats")
    echo "| \`$name\` | $wall ms | $rss MiB | $peak MiB | $rows |"
done
