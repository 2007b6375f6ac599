#!/bin/sh
# hostile_search.sh LUMINAL_SEARCH SOURCE_DIR - luminal_search against the faults of
# issue 21 that a careless or hostile user hit. Every case runs; each failure is printed
# and the script exits 1 at the end when any failed (so one run shows which are back).
#   fault 2   --time-limit bounds saturation: a never-ending rule stops near the limit
#   fault 6   a replayed log is input: slots, counts and dims outside their ranges refused
#   fault 7   --graph X/graph.json --out X keeps the graph whole; a replayed log in the
#             output directory survives the replay
#   fault 8   --limit 2^63-1 is refused, not wrapped
#   fault 14  conflicting modes and repeated options are refused; --reference computes
#             only what the outputs need (an unused 2^31-element arange costs nothing)
set -u
bin=$1
src=$2
cd "$src" || exit 1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
failed=0
fail() { echo "hostile_search.sh: FAIL: $*" >&2; failed=1; }
g=examples/graphs/decode_mlp_bf16.json
gd=examples/graphs/embedding_gather.json # dim B in [1, 1024]

# Each run is capped at 4 GiB, so that a fault that allocates without bound (a replayed
# log's slots) fails this test instead of taking the machine: an address-space limit for
# a plain build, the sanitizer's largest allocation for an ASan one (which cannot run
# under an address-space limit).
asan=0
grep -q __asan_init "$bin" && asan=1
if [ "$asan" = 1 ]; then
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=4096"
  export ASAN_OPTIONS
fi

# refused STATUS TEXT ARGS...: the tool exits STATUS with TEXT on stderr
refused() {
  want_rc=$1 want=$2
  shift 2
  if [ "$asan" = 1 ]; then
    timeout 120 "$bin" "$@" > "$t/out" 2> "$t/err"
  else
    ( ulimit -v 4194304 && exec timeout 120 "$bin" "$@" > "$t/out" 2> "$t/err" )
  fi
  rc=$?
  [ "$rc" -eq "$want_rc" ] || { fail "$*: status $rc, not $want_rc: $(tail -c 600 "$t/err")"; return; }
  grep -q -- "$want" "$t/err" || fail "$*: stderr lacks '$want': $(tail -c 600 "$t/err")"
}

# ---- fault 2: --time-limit bounds saturation ----
cp rules.dsl "$t/grow.dsl"
cat >> "$t/grow.dsl" <<'EGG'
; a rule that never ends: every S gets an S above it
(datatype Seed (S Seed) (Z))
(let seed (S (Z)))
(ruleset grow)
(rule ((= x (S y))) ((S x)) :ruleset grow)
(phase 0 "grow" "(run grow 1000000000)")
EGG
start=$(date +%s)
refused 1 "time-limit 2 s passed during saturation" --graph "$g" --rules "$t/grow.dsl" \
  --limit 3 --cost-model --time-limit 2 --quiet
secs=$(( $(date +%s) - start ))
# the limit, one iteration of the rule and the sanitizer's slowdown; before the fix it ran
# until memory ran out (100 s and more)
[ "$secs" -le 15 ] || fail "--time-limit 2 with a never-ending rule took $secs s"

# ---- a small search to replay ----
"$bin" --graph "$gd" --limit 3 --cost-model --out "$t/s" --quiet > /dev/null ||
  fail "the search to replay failed"
log=$t/s/search.jsonl
edit() { # FIELD VALUE OUT: the log with the header's FIELD set to VALUE (JSON)
  python3 - "$log" "$1" "$2" "$3" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h = json.loads(lines[0])
h[sys.argv[2]] = json.loads(sys.argv[3])
lines[0] = json.dumps(h)
open(sys.argv[4], "w").write("\n".join(lines) + "\n")
PY
}

# ---- fault 6: a replayed log is validated as the command line is ----
edit slots 1000000000 "$t/slots.jsonl"
refused 1 '"slots" must be an integer from 1 to 64' --graph "$gd" \
  --replay-measurements "$t/slots.jsonl" --quiet
edit dims '{"B": 9999}' "$t/dims.jsonl"
refused 1 "dim 'B' at 9999, outside the graph's range \[1, 1024\]" --graph "$gd" \
  --replay-measurements "$t/dims.jsonl" --quiet
edit dims '{"B": "x"}' "$t/dims2.jsonl"
refused 1 "dim 'B' is not a positive integer" --graph "$gd" \
  --replay-measurements "$t/dims2.jsonl" --quiet
edit limit 9223372036854775807 "$t/limit.jsonl"
refused 1 '"limit" must be an integer from 1 to 1000000000' --graph "$gd" \
  --replay-measurements "$t/limit.jsonl" --quiet
edit keep_best -3 "$t/keep.jsonl"
refused 1 '"keep_best"' --graph "$gd" --replay-measurements "$t/keep.jsonl" --quiet
edit cutoff_factor '"2"' "$t/cutoff.jsonl"
refused 1 '"cutoff_factor"' --graph "$gd" --replay-measurements "$t/cutoff.jsonl" --quiet
refused 1 "NUL byte" --graph "$gd" --replay-measurements /dev/zero --quiet
# the log as it was is still replayed
"$bin" --graph "$gd" --replay-measurements "$log" --quiet > /dev/null ||
  fail "the untouched log is no longer replayed"

# ---- fault 7: nothing of the user's is lost ----
cp "$gd" "$t/orig.json"
"$bin" --graph "$t/s/graph.json" --limit 3 --cost-model --out "$t/s" --quiet > /dev/null ||
  fail "--graph X/graph.json --out X failed"
cmp -s "$t/s/graph.json" "$t/orig.json" || fail "--graph X/graph.json --out X changed X/graph.json"
cp "$t/s/search.jsonl" "$t/log_before.jsonl"
"$bin" --graph "$gd" --replay-measurements "$t/s/search.jsonl" --out "$t/s" --quiet > /dev/null ||
  fail "--replay-measurements X/search.jsonl --out X failed"
"$bin" --graph "$gd" --replay-measurements "$t/s/search.jsonl" --quiet > /dev/null ||
  fail "the log rewritten by a replay into its own directory is not a log"
ls "$t/s" | grep -q '\.tmp$' && fail "a temporary file is left in the output directory"

# ---- fault 8: counts are bounded, never wrapped ----
refused 2 "at most 1000000000" --graph "$g" --limit 9223372036854775807 --cost-model --quiet
refused 2 "at most 1000000000" --graph "$g" --limit 1000000001 --cost-model --quiet
refused 2 "from 1 to 1000000000" --graph "$g" --fuzz 18446744073709551615 --quiet

# ---- fault 14: one mode, each option once ----
refused 2 "exclude each other" --graph "$g" --fuzz 3 --reference
refused 2 "exclude each other" --graph "$g" --fuzz 3 --emit hlir
refused 2 "exclude each other" --graph "$g" --reference --emit hlir
for opt in --json --quiet --reference --cost-model --no-fused-start --gpu; do
  refused 2 "$opt is given twice" --graph "$g" $opt $opt
done
refused 2 "--rules is given twice" --graph "$g" --rules rules.dsl --rules rules.dsl --emit space

# ---- fault 14: --reference computes only what the outputs need ----
cat > "$t/dead.json" <<'JSON'
{"format": "luminal-graph", "version": 1,
 "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}],
 "nodes": [{"name": "big", "op": "arange", "n": 2147483647, "dtype": "f32"},
           {"name": "y", "op": "relu", "inputs": ["x"]}],
 "outputs": ["y"]}
JSON
"$bin" --graph "$t/dead.json" --reference --mem-limit 64M > "$t/out" 2> "$t/err" ||
  fail "--reference with an unused 2^31-element arange: $(cat "$t/err")"
grep -q "^output y: f32 \[4\]" "$t/out" || fail "--reference: no output y: $(cat "$t/out")"

[ "$failed" -eq 0 ] || exit 1
echo "hostile_search.sh: ok"
