#!/bin/sh
# oversized.sh SEARCH RUN EQSAT PROG SOURCE_DIR - every tool on every oversized input of
# issue 21 under a 2 GiB memory cap: each must be refused cleanly (exit 1 with a message
# saying why), never killed by the cap or a signal, and never read past its limit.
#
# The cap: `ulimit -v` (2 GiB of address space) for a plain build. An ASan build reserves
# terabytes of address space and cannot run under an address-space limit, so there the
# cap is the sanitizer's own (no allocation above 2 GiB; a failed one returns NULL), and
# the 1.1 GB standard-input case, which would make the sanitizer hold its buffer twice,
# runs only in the plain build (scripts/test.sh runs this test's label `limits` there).
#
# PROG is a saved program of luminal_run's tests (inputs x, w, h, table, ids).
set -u
search=$1 lrun=$2 eqsat=$3 prog=$4 src=$5
cd "$src" || exit 1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
failed=0
fail() { echo "oversized.sh: FAIL: $*" >&2; failed=1; }
cap_kb=2097152
asan=0
grep -q __asan_init "$eqsat" && asan=1
if [ "$asan" = 1 ]; then
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=2048"
  export ASAN_OPTIONS
  echo "oversized.sh: an ASan build: the cap is ASan's largest allocation, 2 GiB"
fi

# capped IN TEXT CMD ARGS...: runs CMD with stdin from IN under the cap; expects exit 1
# and TEXT on stderr
capped() {
  in=$1 want=$2
  shift 2
  if [ "$asan" = 1 ]; then
    timeout 120 "$@" < "$in" > "$t/out" 2> "$t/err"
  else
    ( ulimit -v $cap_kb && exec timeout 120 "$@" < "$in" > "$t/out" 2> "$t/err" )
  fi
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "$*: exit $rc (1 expected: refused; 124 is a timeout, >128 a signal): $(tail -c 500 "$t/err")"
  elif ! grep -q -- "$want" "$t/err"; then
    fail "$*: stderr lacks '$want': $(tail -c 500 "$t/err")"
  fi
}

sparse() { # PATH SIZE: a file of SIZE bytes that takes no disk
  : > "$1" && truncate -s "$2" "$1"
}
sparse "$t/big.egg" 3G
sparse "$t/big.json" 3G
printf '(relation r (String))\n(input r "/dev/zero")\n' > "$t/input_zero.egg"
printf '(relation r (String))\n(input r "%s")\n' "$t/big.egg" > "$t/input_big.egg"

# ---- eqsat ----
# fault 11: a NUL in the middle of a program is refused, located, not the end of the text
printf '(relation r (i64))\n(r 1)\000(panic "after the NUL")\n' > "$t/nul.egg"
capped /dev/null "nul.egg:2:6: a NUL byte" "$eqsat" "$t/nul.egg"
capped /dev/null "NUL byte" "$eqsat" /dev/zero
capped /dev/zero "<stdin>:1:1: a NUL byte" "$eqsat" -
capped /dev/null "cannot read input file '/dev/zero'" "$eqsat" "$t/input_zero.egg"
capped /dev/null "more than the limit" "$eqsat" "$t/big.egg"
capped /dev/null "more than the limit" "$eqsat" "$t/input_big.egg"
capped /dev/null "more than the limit of 1048576 bytes" "$eqsat" --mem-limit 1M "$t/big.egg"
if [ "$asan" = 0 ]; then
  # 1.1 GB of text on standard input, a pipe: refused at the 1 GiB limit, inside the cap
  ( ulimit -v $cap_kb
    yes '(relation r (i64))' | head -c 1181116006 | timeout 120 "$eqsat" - > /dev/null 2> "$t/err"
    echo $? > "$t/rc" )
  rc=$(cat "$t/rc")
  [ "$rc" -eq 1 ] || fail "eqsat - with 1.1 GB on a pipe: exit $rc: $(tail -c 500 "$t/err")"
  grep -q "<stdin>: the stream holds more than the limit" "$t/err" ||
    fail "eqsat - with 1.1 GB on a pipe: $(tail -c 500 "$t/err")"
  # and as a regular file on standard input: refused from its size
  yes '(relation r (i64))' | head -c 1181116006 > "$t/stdin_text"
  capped "$t/stdin_text" "<stdin>: the file is 1181116006 bytes, more than the limit" "$eqsat" -
  rm -f "$t/stdin_text"
fi

# ---- luminal_search ----
g=examples/graphs/decode_mlp_bf16.json
capped /dev/null "NUL byte" "$search" --graph /dev/zero
capped /dev/zero "<stdin>:1:1: a NUL byte" "$search" --graph -
capped /dev/null "more than the limit" "$search" --graph "$t/big.json"
capped /dev/null "NUL byte" "$search" --graph "$g" --rules /dev/zero --emit space
capped /dev/null "NUL byte" "$search" --graph "$g" --rules /dev/zero --limit 2 --cost-model
capped /dev/null "NUL byte" "$search" --graph "$g" --replay-measurements /dev/zero
"$search" --graph "$g" --limit 2 --cost-model --out "$t/s" --quiet > /dev/null ||
  fail "a search to replay failed"
python3 - "$t/s/search.jsonl" "$t/slots.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h = json.loads(lines[0]); h["slots"] = 1000000000; lines[0] = json.dumps(h)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
capped /dev/null '"slots" must be an integer' "$search" --graph "$g" \
  --replay-measurements "$t/slots.jsonl"

# ---- luminal_run ----
"$lrun" "$prog" --write-inputs "$t/in" --quiet > /dev/null || fail "--write-inputs failed"
cp -r "$t/in" "$t/in_zero" && rm "$t/in_zero/x.npy" && ln -s /dev/zero "$t/in_zero/x.npy"
capped /dev/null "input 'x'" "$lrun" "$prog" --inputs "$t/in_zero" --quiet
cp -r "$t/in" "$t/in_big" && rm "$t/in_big/x.npy" && sparse "$t/in_big/x.npy" 3G
capped /dev/null "3221225472 bytes" "$lrun" "$prog" --inputs "$t/in_big" --quiet
ln -s /dev/zero "$t/zero.safetensors"
capped /dev/null "zero.safetensors" "$lrun" "$prog" --weights "$t/zero.safetensors" --quiet
capped /dev/null "zero.safetensors" "$lrun" "$prog" --inputs "$t/zero.safetensors" --quiet
sparse "$t/big.safetensors" 3G
capped /dev/null "big.safetensors" "$lrun" "$prog" --weights "$t/big.safetensors" --quiet
for f in plan.json llir.json; do
  cp -r "$prog" "$t/p_$f" && rm "$t/p_$f/$f" && ln -s /dev/zero "$t/p_$f/$f"
  capped /dev/null "NUL byte" "$lrun" "$t/p_$f" --quiet
  cp -r "$prog" "$t/b_$f" && rm "$t/b_$f/$f" && sparse "$t/b_$f/$f" 3G
  capped /dev/null "more than the limit" "$lrun" "$t/b_$f" --quiet
done

[ "$failed" -eq 0 ] || exit 1
echo "oversized.sh: ok (every oversized input refused under the cap)"
