#!/bin/sh
# tool_space.sh LUMINAL_SEARCH SOURCE_DIR - `luminal_search --emit space` and
# `--emit space-json` on every example graph, run from another directory (the built-in
# rules are embedded), and `--rules FILE` replacing them.
set -u
bin=$1
src=$2
cd "${TMPDIR:-/tmp}" || exit 1
fail() { echo "tool_space.sh: $*" >&2; exit 1; }
n=0
for g in "$src"/examples/graphs/*.json; do
    out=$("$bin" --graph "$g" --emit space --quiet) || fail "--emit space $g failed"
    case $out in *"space: "*"log2(programs)"*"alternatives per op:"*) ;; *) fail "$g: $out" ;; esac
    json=$("$bin" --graph "$g" --emit space-json --quiet) || fail "--emit space-json $g failed"
    case $json in '{"nodes":{'*'"root_eclasses":["c'*'"dtype":"'*) ;; *) fail "$g: bad JSON" ;; esac
    n=$((n + 1))
done
[ "$n" -ge 12 ] || fail "only $n example graphs"
g=$src/examples/graphs/matmul_f32_2048.json
js=$("$bin" --graph "$g" --emit space --json --quiet) || fail "--emit space --json failed"
case $js in '{"classes":'*'"Blas":1}}') ;; *) fail "--json: $js" ;; esac
# --rules: the test rules give a space; a file that is not a whole rule set is refused,
# naming the file and what it lacks
"$bin" --graph "$g" --emit space --quiet --rules "$src/tests/llir/data/rules.dsl" > /dev/null ||
    fail "--rules rules.dsl failed"
err=$("$bin" --graph "$g" --emit space --quiet --rules "$src/tests/llir/data/bad_dtype_in.dsl" 2>&1)
[ $? -eq 1 ] || fail "--rules bad_dtype_in.dsl did not fail with status 1"
case $err in *"bad_dtype_in.dsl"*) ;; *) fail "--rules: the message does not name the file: $err" ;; esac
err=$("$bin" --graph "$g" --emit space --rules /no/such/file 2>&1)
[ $? -eq 1 ] || fail "--rules /no/such/file did not fail"
case $err in *"/no/such/file"*) ;; *) fail "--rules: $err" ;; esac
"$bin" --graph "$g" --rules 2> /dev/null && fail "--rules without a file was accepted"
echo "tool_space.sh: $n examples, --json and --rules checked"
