#!/usr/bin/env bash
# `lockstep show` on a long job within a fixed address space: two ranks of 1,000,000 collectives each
# (64 MB of records per file), shown as a table and as JSON under `ulimit -v` 800 MB. Keeping every
# decoded row took 1.4 GB for the table and 12 GB for the JSON document; show writes each record as it
# decodes it, so its memory does not grow with the trace. Every record must come out.
#   tests/check/show_memory.sh LOCKSTEP WRITE_JOB WORK
set -euo pipefail
lockstep=$1 write_job=$2 work=$3
n=1000000
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
fail() {
  echo "show_memory: $*" >&2
  exit 1
}
"$write_job" "$work/job" long "$n"
show() {  # FORMAT: show's output to stdout, within the limit
  (
    ulimit -v 800000
    "$lockstep" show --no-symbolize --format "$1" "$work/job"
  ) 2>"$work/err"
}
# One table line per record (after each file's header and column heads), and one "id" per record in
# the JSON; both at least the collectives, the same number.
rows=$(show table | grep -cE '^  [0-9]+ ') || fail "table: $(cat "$work/err")"
[[ -s $work/err ]] && fail "table: $(cat "$work/err")"
[[ $rows -ge $((2 * n)) ]] || fail "table: $rows record lines, want at least $((2 * n))"
ids=$(show json | grep -c '^          "id": ') || fail "json: $(cat "$work/err")"
[[ -s $work/err ]] && fail "json: $(cat "$work/err")"
[[ $ids == "$rows" ]] || fail "json: $ids records, the table $rows"
