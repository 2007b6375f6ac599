#!/bin/sh
# need_shared.sh DEFAULT_DIR SUBPATH COMMAND [ARG ...]
# Runs a test that reads the shared material beside the repository (../shared: egglog's
# conformance programs). The folder is $LUMINAL_SHARED_DIR when set and not empty, else
# DEFAULT_DIR (the configured LUMINAL_SHARED_DIR). When SUBPATH is missing in it the test
# cannot check anything: it prints "skip: ..." and exits 77, which ctest reports as
# skipped (SKIP_RETURN_CODE 77), never as passed. Otherwise it runs COMMAND with every
# @SHARED@ in the ARGs replaced by the folder, and exits with its status.
set -eu
shared=${LUMINAL_SHARED_DIR:-$1}
sub=$2
shift 2
if [ ! -e "$shared/$sub" ]; then
  echo "skip: $shared/$sub not found; nothing checked (the shared material is missing)"
  exit 77
fi
n=$#
while [ "$n" -gt 0 ]; do
  a=$1
  shift
  case $a in
    *@SHARED@*) a="${a%%@SHARED@*}$shared${a#*@SHARED@}" ;;
  esac
  set -- "$@" "$a"
  n=$((n - 1))
done
exec "$@"
