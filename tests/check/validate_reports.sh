#!/usr/bin/env bash
# Writes a job (clean or bad), renders it in every format, and validates the reports.
# usage: validate_reports.sh LOCKSTEP WRITE_JOB OUTDIR clean|bad
set -euo pipefail
lockstep=$1 write_job=$2 out=$3 mode=$4
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$out" && mkdir -p "$out"
"$write_job" "$out/traces" "$mode"
want=0
[ "$mode" != clean ] && want=1
# As `lockstep run --timeout` leaves it when it stops a job.
[ "$mode" = hang ] && echo "lockstep run stopped the job at --timeout after 5.0 s" >"$out/traces/lockstep-run-timeout.txt"
for f in json sarif junit text; do
  rc=0
  "$lockstep" check --no-symbolize --format "$f" -o "$out/report.$f" "$out/traces" || rc=$?
  [ "$rc" = "$want" ] || { echo "check --format $f exited $rc, expected $want"; exit 1; }
done
head -1 "$out/report.text"
python3 "$here/validate_reports.py" "$out/report.json" "$out/report.sarif" "$out/report.junit" \
  "$here/../../docs/check-output.schema.json" "$here/schemas/sarif-schema-2.1.0.json" "$mode"
