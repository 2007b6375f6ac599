#!/bin/sh
# check_install.sh BUILD SOURCE WORK PROGRAM_DIR - the installed-prefix test (ctest
# install_prefix, label install; docs/python.md, "The C library").
#
# Installs BUILD into WORK/prefix with `cmake --install`, then checks:
#   - the files: libluminal.so, libluminal.a, the public headers, luminal.pc, the CMake
#     package, the tools;
#   - the exports (nm -D): every symbol the shared library defines is declared in an
#     installed header, every function those headers declare is defined, and no internal
#     name (a second underscore, or hl_ ll_ cg_ rt_) nor a third-party one is exported;
#   - examples/embed and examples/program built out of the tree against the prefix, once
#     with find_package(luminal) and the shared library (tests/install/consumer), once
#     with pkg-config and the static library (cc and `pkg-config --static`); each binary
#     run: embed's output checked by check_embed.py, program_run's by check_example.cmake
#     on PROGRAM_DIR (a program saved by tests/program), and the static binaries must not
#     need libluminal.so.
set -eu
build=$1 src=$2 work=$3 prog=$4
fail() { echo "check_install: FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install failed (see $work/install.log)"

libdir=$(dirname "$(find "$prefix" -name luminal.pc -path '*/pkgconfig/*' | head -n 1)")
[ -n "$libdir" ] && [ -d "$libdir" ] || fail "no lib*/pkgconfig/luminal.pc under $prefix"
libdir=$(dirname "$libdir")
inc=$prefix/include/luminal
for f in "$libdir/libluminal.a" "$libdir/libluminal.so" "$libdir/cmake/luminal/luminalConfig.cmake" \
         "$libdir/cmake/luminal/luminalConfigVersion.cmake" "$libdir/cmake/luminal/luminalTargets.cmake" \
         "$inc/base.h" "$inc/egraph.h" "$inc/program.h" "$inc/search.h" "$inc/luminal.h" \
         "$prefix/bin/luminal_search" "$prefix/bin/luminal_run"; do
  [ -e "$f" ] || fail "missing after install: $f"
done
for h in "$inc"/*.h; do
  grep -o '#include "[^"]*"' "$h" | sed 's/#include "\(.*\)"/\1/' | while read -r dep; do
    [ -e "$inc/$dep" ] || fail "$h includes $dep, which is not installed"
  done
done
echo "check_install: installed files ok ($prefix)"

# ---- exports ----
so=$(readlink -f "$libdir/libluminal.so")
nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u >"$work/exported"
for h in "$inc"/*.h; do ${CC:-cc} -fpreprocessed -dD -E -P "$h"; done >"$work/headers.txt" ||
  fail "the installed headers do not preprocess"
bad=0
while read -r s; do
  case $s in _init|_fini|_edata|_end|__bss_start) continue ;; esac
  if ! grep -qw "$s" "$work/headers.txt"; then
    echo "check_install: exported but in no installed header: $s" >&2; bad=1
  fi
  case $s in *__*|hl_*|ll_*|cg_*|rt_*|json_*|XXH*|mi_*) echo "check_install: internal or third-party name exported: $s" >&2; bad=1 ;; esac
done <"$work/exported"
# every function the headers declare (not a static inline one) is exported
grep -ho '\b\(lm\|eg\|pg\|sr\|luminal\)_[a-z][a-z0-9_]*[ ]*(' "$work/headers.txt" | sed 's/[ (]*$//' |
  grep -v '__' | sort -u >"$work/declared"
grep -ho 'static inline [a-z_ ]*\b\([a-z_0-9]*\)(' "$work/headers.txt" | sed 's/.* \([a-z_0-9]*\)($/\1/' |
  sort -u >"$work/inline"
comm -23 "$work/declared" "$work/inline" | comm -23 - "$work/exported" >"$work/missing"
if [ -s "$work/missing" ]; then
  echo "check_install: declared in an installed header but not exported:" >&2
  cat "$work/missing" >&2; bad=1
fi
[ "$bad" = 0 ] || fail "the shared library's exports are not the public API"
n=$(wc -l <"$work/exported")
[ "$n" -gt 50 ] || fail "only $n exported symbols: the library is not the engine, compiler and runtime"
echo "check_install: nm -D: $n exported symbols, each declared in an installed header, and every declared function exported"

run_examples() { # DIR LABEL STATIC(0/1)
  d=$1 label=$2
  python3 "$src/examples/embed/check_embed.py" "$d/embed" "$d/embed.json" >"$d/embed.out" 2>&1 ||
    { cat "$d/embed.out" >&2; fail "$label: embed's output is wrong"; }
  cmake -DRUN="$d/program_run" -DDIR="$prog" -DN=37 -DSEED=5 -P "$src/tests/program/check_example.cmake" \
    >"$d/program.out" 2>&1 || { cat "$d/program.out" >&2; fail "$label: program_run's output is wrong"; }
  for b in embed program_run; do
    if [ "$3" = 1 ]; then
      ldd "$d/$b" | grep -q libluminal && fail "$label: $b links libluminal.so, not the static library"
    else
      ldd "$d/$b" | grep -q "$libdir/libluminal.so" || { ldd "$d/$b" >&2; fail "$label: $b does not load the installed libluminal.so"; }
    fi
  done
  echo "check_install: $label: embed and program_run built out of tree, run and checked"
}

# ---- find_package, shared ----
cb=$work/consumer-cmake
cmake -S "$src/tests/install/consumer" -B "$cb" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLES="$src/examples" -DLUMINAL_LINK=shared -DCMAKE_BUILD_RPATH="$libdir" >"$work/consumer.log" 2>&1 &&
  cmake --build "$cb" >>"$work/consumer.log" 2>&1 || { cat "$work/consumer.log" >&2; fail "find_package build failed"; }
run_examples "$cb" "find_package (shared)" 0

# ---- pkg-config, static ----
pb=$work/consumer-pkgconfig
mkdir -p "$pb"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion luminal)" = "$(sed -n 's/^project(luminal_c VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
  fail "pkg-config --modversion luminal is not the project's version"
cflags=$(pkg-config --cflags luminal)
libs=$(pkg-config --static --libs luminal | sed 's/-lluminal\b/-l:libluminal.a/')
cc=${CC:-cc}
$cc -std=c17 -O1 -o "$pb/embed" "$src/examples/embed/embed.c" $cflags $libs 2>"$work/pc.log" &&
  $cc -std=c17 -O1 -o "$pb/program_run" "$src/examples/program/program_run.c" $cflags $libs 2>>"$work/pc.log" ||
  { cat "$work/pc.log" >&2; fail "pkg-config build failed"; }
run_examples "$pb" "pkg-config (static)" 1
echo "check_install: ok"
