#!/bin/sh
# tool_fuzz.sh LUMINAL_SEARCH SOURCE_DIR - `luminal_search --fuzz N`: the same output,
# byte for byte, in two fresh processes (text and --json); the seed matters; a space
# smaller than N is fuzzed completely and is not an error; bad options are refused; and
# Luminal's seed-002 rule caught through the command line three ways (the rules' guard,
# the e-graph dtype check, and with --fuzz-no-verify the comparison).
set -u
bin=$1
src=$2
cd "$src" || exit 1 # the seed-002 rules include rules.dsl from the repository root
fail() { echo "tool_fuzz.sh: $*" >&2; exit 1; }
a=$(mktemp)
b=$(mktemp)
trap 'rm -f "$a" "$b"' EXIT

# determinism: two fresh processes, same bytes
twice() {
    "$bin" "$@" > "$a" 2> /dev/null || fail "$* failed (status $?)"
    "$bin" "$@" > "$b" 2> /dev/null || fail "$* failed the second time"
    cmp -s "$a" "$b" || { diff "$a" "$b" | head -20 >&2; fail "$*: two runs differ"; }
}
g=examples/graphs/causal_attention_bf16.json
twice --graph "$g" --fuzz 60 --seed 9 --quiet
[ "$(tail -n 1 "$a")" = "60 passed, 0 failed" ] || fail "last line: $(tail -n 1 "$a")"
grep -q "^fuzz $g: 60 genomes, seed 9, dims S=3$" "$a" || fail "header: $(head -n 1 "$a")"
twice --graph "$g" --fuzz 60 --seed 9 --quiet --json
grep -q '"checked": 60,' "$a" || fail "--json: no checked 60"
n=$(grep -c '"hash": "' "$a")
[ "$n" -eq 60 ] || fail "--json lists $n genomes, not 60"
cp "$a" "$b.seed9"
"$bin" --graph "$g" --fuzz 60 --seed 10 --quiet --json > "$a" || fail "seed 10 failed"
grep '"hash"' "$a" > "$b"
grep '"hash"' "$b.seed9" > "$a"
rm -f "$b.seed9"
cmp -s "$a" "$b" && fail "seeds 9 and 10 drew the same genomes"
twice --graph examples/graphs/embedding_gather.json --fuzz 40 --seed 3 --dim B=5 --quiet
grep -q "dims B=5" "$a" || fail "--dim B=5 not used: $(head -n 1 "$a")"

# a space smaller than N: every genome checked, status 0
out=$("$bin" --graph examples/graphs/primitives_strided.json --fuzz 100000 --quiet) ||
    fail "an exhausted space is not an error (status $?)"
case $out in *"space exhausted: only "*" distinct valid genomes exist (100000 asked); every one was checked"*) ;;
    *) fail "exhausted: $out" ;; esac

# options
"$bin" --graph "$g" --fuzz 0 2> /dev/null; [ $? -eq 2 ] || fail "--fuzz 0 was accepted"
"$bin" --graph "$g" --fuzz-no-verify 2> /dev/null; [ $? -eq 2 ] || fail "--fuzz-no-verify alone was accepted"
err=$("$bin" --graph "$g" --fuzz 5 --dim Q=3 2>&1); [ $? -eq 1 ] || fail "--dim Q=3 was accepted"
case $err in *"declares no dim of that name"*) ;; *) fail "--dim Q: $err" ;; esac
"$bin" --help | grep -q -- "--fuzz N" || fail "--help does not describe --fuzz"

# seed-002 through the command line
s=tests/fuzz/data/seed002_residual.json
err=$("$bin" --graph "$s" --fuzz 50 --quiet --rules tests/fuzz/data/seed002.dsl 2>&1)
[ $? -eq 1 ] || fail "seed-002 with the guard: not refused"
case $err in *"phase 'dtype-guard'"*) ;; *) fail "seed-002 guard: $err" ;; esac
err=$("$bin" --graph "$s" --fuzz 50 --quiet --rules tests/fuzz/data/seed002_unguarded.dsl 2>&1)
[ $? -eq 1 ] || fail "seed-002 without the guard: not refused"
case $err in *"e-graph dtype check"*"(Op Blas): reads input 2"*"bf16) as f32"*) ;;
    *) fail "seed-002 e-graph check: $err" ;; esac
out=$("$bin" --graph "$s" --fuzz 50 --quiet --fuzz-no-verify --rules tests/fuzz/data/seed002_unguarded.dsl)
[ $? -eq 1 ] || fail "seed-002 unchecked: the fuzz did not fail"
case $out in *"FAIL genome "*"output 'out': element "*"RMS"*"  ops: Input 3, Output 1, Blas 1"*) ;;
    *) fail "seed-002 unchecked: $out" ;; esac
last=$(printf '%s\n' "$out" | tail -n 1)
case $last in *" passed, 1 failed") ;; *) fail "seed-002 unchecked: last line $last" ;; esac
out=$("$bin" --graph "$s" --fuzz 50 --quiet) || fail "seed-002's graph with the compiler's rules failed"
echo "tool_fuzz.sh: determinism, seeds, exhaustion, options and seed-002 checked"
