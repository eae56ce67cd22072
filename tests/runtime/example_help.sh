#!/usr/bin/env bash
# An example's command line: --help prints the usage (every option listed) and exits 0 before MPI
# starts; an unknown option or a missing value is one line on stderr and exit status 2.
# usage: example_help.sh PROGRAM OPTION...
set -uo pipefail
prog=$1
shift
fail() { echo "FAIL: $*"; exit 1; }

out=$("$prog" --help 2>/tmp/example_help.$$.err)
rc=$?
err=$(cat /tmp/example_help.$$.err)
rm -f /tmp/example_help.$$.err
echo "$out"
[ "$rc" = 0 ] || fail "--help exited $rc, want 0 (stderr: $err)"
[ -z "$err" ] || fail "--help wrote to stderr: $err"
grep -q "^usage: .*$(basename "$prog")" <<<"$out" || fail "--help printed no usage line"
for opt in "$@" help; do
  grep -qE "^  --$opt " <<<"$out" || fail "--help does not list --$opt"
done
[ "$("$prog" -h 2>&1)" = "$out" ] || fail "-h differs from --help"

for bad in "--no-such-option=1" "--$1"; do
  err=$("$prog" "$bad" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = 2 ] || fail "'$bad' exited $rc, want 2"
  [ "$(wc -l <<<"$err")" = 1 ] || fail "'$bad' printed more than one line: $err"
  grep -q "$(basename "$prog"): .*--" <<<"$err" || fail "'$bad' error does not name the program and option: $err"
done
echo "example help test ok"
