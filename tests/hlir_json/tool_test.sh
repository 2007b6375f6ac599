#!/bin/sh
# tool_test.sh TOOL GRAPH MODE - runs luminal_search on one graph.
#   emit       the graph loads and is summarised; --emit hlir output reads back and
#              emits the same bytes; the emitted form is primitives only
#   reference  --reference (dims at 3, or the nearest value in range) gives one line per
#              output, the same lines twice, and the same lines for the emitted form
#   quick      one --reference run with every dim at its min, one line per output (for
#              the graphs whose full reference check is labelled slow)
#   cli        bad command lines fail with a message (GRAPH is any valid graph)
set -eu
tool=$1 graph=$2 mode=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

small_dims() { # GRAPH [VALUE]: every dim at VALUE (default 3), clamped to its range
  "$tool" --graph "$1" --quiet |
    sed -n 's/^  dim \([A-Za-z0-9_]*\) in \[\([0-9]*\), \([0-9]*\)\].*/\1 \2 \3/p' |
    while read -r name lo hi; do
      v=${2:-3}
      [ "$v" -lt "$lo" ] && v=$lo
      [ "$v" -gt "$hi" ] && v=$hi
      printf -- '--dim %s=%s ' "$name" "$v"
    done
}

case $mode in
emit)
  "$tool" --graph "$graph" --quiet >"$tmp/summary" || fail "load"
  grep -q "valid graph" "$tmp/summary" || fail "no summary"
  "$tool" --graph "$graph" --emit hlir >"$tmp/a.json" || fail "emit"
  "$tool" --graph "$tmp/a.json" --emit hlir >"$tmp/b.json" || fail "re-emit"
  cmp "$tmp/a.json" "$tmp/b.json" || fail "emit is not a fixed point"
  if grep -q '"op":"matmul"\|"op":"softmax"\|"op":"attention"' "$tmp/a.json"; then
    fail "emitted form has high-level ops"
  fi
  ;;
reference)
  dims=$(small_dims "$graph")
  outs=$("$tool" --graph "$graph" --json --quiet | sed -n 's/.*"outputs": *\([0-9]*\).*/\1/p')
  # shellcheck disable=SC2086
  "$tool" --graph "$graph" --reference --seed 7 $dims --quiet >"$tmp/r1" || fail "reference"
  # shellcheck disable=SC2086
  "$tool" --graph "$graph" --reference --seed 7 $dims --quiet >"$tmp/r2" || fail "reference 2"
  cmp "$tmp/r1" "$tmp/r2" || fail "reference is not deterministic"
  [ "$(grep -c '^output .* sum .* max|x| .* xxh3 [0-9a-f]\{16\}$' "$tmp/r1")" = "$outs" ] ||
    fail "expected $outs output lines, got: $(cat "$tmp/r1")"
  "$tool" --graph "$graph" --emit hlir >"$tmp/a.json" || fail "emit"
  # shellcheck disable=SC2086
  "$tool" --graph "$tmp/a.json" --reference --seed 7 $dims --quiet >"$tmp/r3" || fail "reference 3"
  cmp "$tmp/r1" "$tmp/r3" || fail "the emitted graph computes something else"
  # shellcheck disable=SC2086
  "$tool" --graph "$graph" --reference --seed 8 $dims --quiet >"$tmp/r4" || fail "reference 4"
  if cmp -s "$tmp/r1" "$tmp/r4"; then fail "the seed does not change the inputs"; fi
  "$tool" --graph "$graph" --reference --seed 7 $dims --json --quiet >"$tmp/j" || fail "json"
  [ "$(grep -o '"xxh3"' "$tmp/j" | wc -l)" -eq "$outs" ] || fail "json output: $(cat "$tmp/j")"
  grep -q '"seed": 7' "$tmp/j" || fail "json output lacks the seed"
  ;;
quick)
  dims=$(small_dims "$graph" 1)
  outs=$("$tool" --graph "$graph" --json --quiet | sed -n 's/.*"outputs": *\([0-9]*\).*/\1/p')
  # shellcheck disable=SC2086
  "$tool" --graph "$graph" --reference --seed 1 $dims --quiet >"$tmp/r1" || fail "reference"
  [ "$(grep -c '^output .* sum .* max|x| .* xxh3 [0-9a-f]\{16\}$' "$tmp/r1")" = "$outs" ] ||
    fail "expected $outs output lines, got: $(cat "$tmp/r1")"
  ;;
cli)
  "$tool" --help | grep -q -- "--emit hlir" || fail "help"
  if "$tool" --help | grep -q -- "--limit"; then fail "help lists an option that does not exist"; fi
  if "$tool" --graph "$graph" --limit 20 2>"$tmp/e"; then fail "--limit accepted"; fi
  grep -q "unknown option '--limit'" "$tmp/e" || fail "message for --limit: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --emit bogus 2>"$tmp/e"; then fail "--emit bogus accepted"; fi
  grep -q "unknown kind" "$tmp/e" || fail "message for --emit bogus"
  if "$tool" 2>"$tmp/e"; then fail "no --graph accepted"; fi
  grep -q -- "--graph FILE is required" "$tmp/e" || fail "message for no --graph"
  if "$tool" --graph /nonexistent.json 2>"$tmp/e"; then fail "missing file accepted"; fi
  grep -q "/nonexistent.json" "$tmp/e" || fail "message for a missing file"
  printf '{"format": "luminal-graph",\n "version": 1,\n "inputs": [}\n' >"$tmp/bad.json"
  if "$tool" --graph "$tmp/bad.json" 2>"$tmp/e"; then fail "malformed file accepted"; fi
  grep -q "bad.json:3:" "$tmp/e" || fail "message for malformed JSON: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --reference --dim NOPE=3 2>"$tmp/e"; then fail "--dim NOPE"; fi
  grep -q "no dim of that name" "$tmp/e" || fail "message for --dim NOPE"
  "$tool" --graph "$graph" --quiet 2>"$tmp/e" >/dev/null
  [ ! -s "$tmp/e" ] || fail "--quiet printed to stderr"
  ;;
*) fail "unknown mode $mode" ;;
esac
