#!/bin/sh
# tool_test.sh TOOL GRAPH MODE - runs luminal_search on one graph.
#   emit       the graph loads and is summarised; --emit hlir output reads back and
#              emits the same bytes; the emitted form is primitives only
#   reference  --reference (dims at 3, or the nearest value in range) gives one line per
#              output, the same lines twice, and the same lines for the emitted form
#   quick      one --reference run with every dim at its min, one line per output (for
#              the graphs whose full reference check is labelled slow)
#   cli        bad command lines fail with a message (GRAPH is any valid graph)
#   memory     --reference refuses, before allocating, a run that needs more memory than
#              the machine has or --mem-limit allows, naming the largest tensors (GRAPH:
#              a graph of more than 16 MiB of inputs, decode_mlp_bf16.json)
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
  "$tool" --help | grep -q -- "--limit N" || fail "help lacks the search's --limit"
  if "$tool" --graph "$graph" --bogus 2>"$tmp/e"; then fail "--bogus accepted"; fi
  grep -q "unknown option '--bogus'" "$tmp/e" || fail "message for --bogus: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --limit 0 2>"$tmp/e"; then fail "--limit 0 accepted"; fi
  grep -q -- "--limit needs a positive number" "$tmp/e" || fail "message for --limit 0: $(cat "$tmp/e")"
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
  # "-" is standard input, for --graph as for every file argument
  "$tool" --graph "$graph" --emit hlir >"$tmp/file.json" || fail "emit"
  "$tool" --graph - --emit hlir <"$graph" >"$tmp/stdin.json" || fail "--graph - (standard input)"
  cmp "$tmp/file.json" "$tmp/stdin.json" || fail "--graph - reads something else"
  printf '{"format": "luminal-graph",\n "version": 1,\n "inputs": [}\n' |
    "$tool" --graph - 2>"$tmp/e" && fail "malformed standard input accepted"
  grep -q "<stdin>:3:" "$tmp/e" || fail "message for malformed standard input: $(cat "$tmp/e")"
  # an option given twice is refused, not silently the last one
  if "$tool" --graph "$graph" --graph "$graph" 2>"$tmp/e"; then fail "--graph twice accepted"; fi
  grep -q -- "--graph is given twice" "$tmp/e" || fail "message for --graph twice: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --emit hlir --emit egraph 2>"$tmp/e"; then fail "--emit twice"; fi
  grep -q -- "--emit is given twice" "$tmp/e" || fail "message for --emit twice: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --reference --seed 1 --seed 2 2>"$tmp/e"; then fail "--seed twice"; fi
  grep -q -- "--seed is given twice" "$tmp/e" || fail "message for --seed twice: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --reference --dim B=2 --dim B=3 2>"$tmp/e"; then fail "--dim B twice"; fi
  grep -q -- "--dim B is given twice" "$tmp/e" || fail "message for --dim B twice: $(cat "$tmp/e")"
  # the options of --reference are refused without it, alike
  if "$tool" --graph "$graph" --seed 3 2>"$tmp/e"; then fail "--seed without --reference"; fi
  grep -q -- "--seed only applies to the search, --reference" "$tmp/e" || fail "message: $(cat "$tmp/e")"
  if "$tool" --graph "$graph" --dim B=2 2>"$tmp/e"; then fail "--dim without --reference"; fi
  grep -q -- "--dim only applies to the search, --reference" "$tmp/e" || fail "message: $(cat "$tmp/e")"
  # a run-time error names the file, the user's node and op, not an internal node number
  printf '%s\n' '{"format": "luminal-graph", "version": 1,' \
    ' "inputs": [{"name": "table", "dtype": "f32", "shape": [2, 3]},' \
    '            {"name": "ids", "dtype": "int", "shape": [8]}],' \
    ' "nodes": [' \
    '   {"name": "emb", "op": "embedding", "inputs": ["table", "ids"]}],' \
    ' "outputs": ["emb"]}' >"$tmp/oob.json"
  if "$tool" --graph "$tmp/oob.json" --reference 2>"$tmp/e"; then fail "ids past the table"; fi
  grep -q "oob.json:5:4: node 'emb': embedding (lowered to Gather): index [0-9]* at position" \
    "$tmp/e" || fail "the run-time error does not name the user's node: $(cat "$tmp/e")"
  if grep -q "node [0-9]* (Gather)" "$tmp/e"; then fail "internal node number: $(cat "$tmp/e")"; fi
  ;;
memory)
  # A legal graph whose input alone is 4 TiB (2^40 f32). Without a sanitizer the tool runs
  # under a virtual-memory cap, so that a refusal that does not happen fails this test
  # instead of waking the OOM killer (ASan needs its own huge reservation, so no cap there).
  cap() { if [ "${LM_TEST_SANITIZED:-0}" = 1 ]; then "$@"; else (ulimit -v 8388608 && "$@"); fi; }
  printf '%s\n' '{"format": "luminal-graph", "version": 1,' \
    ' "inputs": [{"name": "x", "dtype": "f32", "shape": [1048576, 1048576]}],' \
    ' "nodes": [{"name": "big", "op": "exp", "inputs": ["x"]},' \
    '           {"name": "y", "op": "sum", "inputs": ["big"]}],' \
    ' "outputs": ["y"]}' >"$tmp/huge.json"
  set +e
  cap "$tool" --graph "$tmp/huge.json" --reference >"$tmp/o" 2>"$tmp/e"
  rc=$?
  set -e
  [ "$rc" = 1 ] || fail "a 4 TiB run: exit status $rc (want 1, a refusal): $(cat "$tmp/e")"
  grep -q "needs [0-9.]* TiB at once (4.00 TiB of it inputs)" "$tmp/e" ||
    fail "the refusal does not say what the run needs: $(cat "$tmp/e")"
  grep -q "'x' (input) f32 \[1048576, 1048576\] 4.00 TiB" "$tmp/e" ||
    fail "the refusal does not name the largest tensor: $(cat "$tmp/e")"
  [ ! -s "$tmp/o" ] || fail "a refused run printed results"
  # --mem-limit: the weights of GRAPH alone exceed 16 MiB
  if "$tool" --graph "$graph" --reference --mem-limit 16M 2>"$tmp/e" >/dev/null; then
    fail "--mem-limit 16M did not refuse"
  fi
  grep -q "the limit is 16.0 MiB (--mem-limit)" "$tmp/e" || fail "message: $(cat "$tmp/e")"
  grep -q "'w_gate' (input) bf16 \[2048, 8192\] 32.0 MiB" "$tmp/e" || fail "message: $(cat "$tmp/e")"
  cap "$tool" --graph "$graph" --reference --mem-limit 1G --quiet >"$tmp/o" || fail "--mem-limit 1G"
  grep -q '^output ' "$tmp/o" || fail "no output under --mem-limit 1G"
  if "$tool" --graph "$graph" --reference --mem-limit 12X 2>"$tmp/e"; then fail "--mem-limit 12X"; fi
  grep -q -- "--mem-limit needs a byte count" "$tmp/e" || fail "message for --mem-limit 12X"
  if "$tool" --graph "$graph" --mem-limit 1G 2>"$tmp/e"; then fail "--mem-limit without --reference"; fi
  grep -q -- "--mem-limit only applies to --reference" "$tmp/e" || fail "message: $(cat "$tmp/e")"
  ;;
*) fail "unknown mode $mode" ;;
esac
