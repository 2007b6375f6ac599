#!/bin/sh
# tool_search.sh LUMINAL_SEARCH SOURCE_DIR - `luminal_search --limit N` from the command
# line, without a GPU: two fresh processes with one seed and the cost model save the same
# plan.json byte for byte; --json is one JSON object that python3's json.tool parses and
# that says the times are modelled; the output directory holds what docs/search.md lists;
# --replay-measurements of the log saves the same plan again; bad command lines fail with
# exit status 2 and a message naming the problem; a missing graph fails naming the file.
set -u
bin=$1
src=$2
cd "$src" || exit 1
fail() { echo "tool_search.sh: $*" >&2; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
g=examples/graphs/decode_mlp_bf16.json

"$bin" --graph "$g" --limit 12 --seed 4 --cost-model --out "$t/a" --quiet > "$t/a.txt" ||
  fail "search a failed"
"$bin" --graph "$g" --limit 12 --seed 4 --cost-model --out "$t/b" --quiet --json > "$t/b.json" ||
  fail "search b failed"
cmp -s "$t/a/program/plan.json" "$t/b/program/plan.json" || fail "two runs saved different plans"
for f in program/plan.json program/llir.json graph.json search.jsonl report.html; do
  [ -s "$t/a/$f" ] || fail "the output directory lacks $f"
done
cmp -s "$g" "$t/a/graph.json" || fail "graph.json is not a copy of the input graph"
grep -q "modelled, not measured" "$t/a.txt" || fail "the table does not say the times are modelled"
grep -q "^  winner " "$t/a.txt" || fail "no winner row: $(cat "$t/a.txt")"
grep -q "^  reference lowering " "$t/a.txt" || fail "no reference lowering row"
grep -q "^time: total " "$t/a.txt" || fail "no time per phase"
python3 -m json.tool "$t/b.json" > /dev/null || fail "--json does not parse"
grep -q '"measured": false' "$t/b.json" || fail "--json does not say measured: false"
grep -q '"evaluated": 12' "$t/b.json" || fail "--json: not 12 evaluated"
# every line of the log is JSON
python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    json.loads(line); n += 1
assert n >= 14, n
' "$t/a/search.jsonl" || fail "the log does not parse"
# the replay reproduces the plan (its seed comes from the log)
"$bin" --graph "$g" --replay-measurements "$t/a/search.jsonl" --out "$t/c" --quiet > /dev/null ||
  fail "the replay failed"
cmp -s "$t/a/program/plan.json" "$t/c/program/plan.json" || fail "the replay saved another plan"
# progress goes to stderr, and --quiet silences it
"$bin" --graph "$g" --limit 3 --cost-model > /dev/null 2> "$t/err" || fail "search with progress"
grep -q "^search: \[3/3\]" "$t/err" || fail "no progress line: $(head -5 "$t/err")"
"$bin" --graph "$g" --limit 3 --cost-model --quiet > /dev/null 2> "$t/err" || fail "quiet search"
[ ! -s "$t/err" ] || fail "--quiet still wrote: $(head -3 "$t/err")"

# bad command lines: status 2, a message naming the problem
bad() { # EXPECTED-TEXT ARGS...
  want=$1
  shift
  "$bin" "$@" > /dev/null 2> "$t/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "$*: status $rc, not 2"
  grep -q -- "$want" "$t/err" || fail "$*: the message '$(cat "$t/err")' lacks '$want'"
}
bad "unknown option '--bogus'" --graph "$g" --limit 2 --bogus
bad "--limit needs a positive number" --graph "$g" --limit 0
bad "--limit needs a positive number" --graph "$g" --limit
bad "--graph FILE is required" --limit 3
bad "exclude each other" --graph "$g" --cost-model --gpu
bad "does not combine" --graph "$g" --limit 3 --reference
bad "--cutoff needs a non-negative number" --graph "$g" --cutoff -1
bad "--keep-best needs a number from 1 to 64" --graph "$g" --keep-best 0
bad "--limit is given twice" --graph "$g" --limit 2 --limit 3
bad "--screen needs a non-negative number" --graph "$g" --screen -1
bad "--proposals needs a number from 1 to 64" --graph "$g" --proposals 0
# --screen and --proposals reach the search: its log's header records them
"$bin" --graph "$g" --limit 2 --cost-model --screen 5 --proposals 3 --out "$t/d" --quiet > /dev/null ||
  fail "search with --screen and --proposals"
head -1 "$t/d/search.jsonl" | grep -q '"screen_factor":5.0,"proposals":3' ||
  fail "the header lacks the screen and the proposals: $(head -1 "$t/d/search.jsonl")"
# a missing graph: status 1 and the file named
"$bin" --graph "$t/missing.json" --limit 3 > /dev/null 2> "$t/err"
[ $? -eq 1 ] || fail "a missing graph: not status 1"
grep -q "missing.json" "$t/err" || fail "a missing graph: the message does not name it"
# a replay log that is not one
echo '{"type":"candidate"}' > "$t/bad.jsonl"
"$bin" --graph "$g" --replay-measurements "$t/bad.jsonl" > /dev/null 2> "$t/err"
[ $? -eq 1 ] || fail "a bad log: not status 1"
grep -q "bad.jsonl:1: the first line is not the header" "$t/err" || fail "a bad log: $(cat "$t/err")"
# --help describes the search
"$bin" --help | grep -q -- "--replay-measurements FILE" || fail "--help lacks the search"
echo "tool_search.sh: ok"
