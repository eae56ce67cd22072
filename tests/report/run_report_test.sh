#!/usr/bin/env bash
# One report test: traces (a real mpirun job under `lockstep run`, or a synthetic job), then
#   export: `lockstep export` validated by structure (validate_perfetto.py for the protobuf trace, with
#           protoc --decode_raw when installed; validate_trace.py for the JSON);
#   html:   `lockstep report` (and `check --format html`, the same page) rendered in headless Chromium,
#           the DOM checked (check_dom.py) and a screenshot kept next to the traces. Exit 77 (skipped)
#           when /usr/bin/chromium is absent.
# usage: run_report_test.sh traces|export|html CASE WORKDIR LOCKSTEP [CASE ARGS...]
#   cases: cycle3 PROGRAM | deadlock PROGRAM | p2p PROGRAM | tf24 EXAMPLE SOURCE | synthetic WRITER
set -uo pipefail
step=$1 case=$2 work=$3 lockstep=$4
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
traces=$work/traces

if [ "$step" = traces ]; then
  rm -rf "$work" && mkdir -p "$work"
  case $case in
    cycle3|deadlock|p2p)
      # --timeout 8: the deadlock must stand 1 s before the stop to count as one, and on a loaded 2-core
      # machine mpirun took up to 5 s to start the ranks (the checker then said the job was still running).
      # shellcheck disable=SC2086
      "$lockstep" run -o "$traces" --report --timeout 8 --grace 1 -- \
        "${MPIRUN:-mpirun}" ${MPIRUN_FLAGS:-} -np 4 "$1" > "$work/run.log" 2>&1
      cat "$work/run.log"
      # `run --report` wrote the page next to the traces.
      grep -q "report written to $traces/report.html" "$work/run.log" ||
        fail "run --report did not say where the report is"
      grep -q 'id="lockstep-data"' "$traces/report.html" || fail "run --report wrote no report"
      ;;
    tf24)
      export LOCKSTEP_RT_STALL_WARN=2 LOCKSTEP_RT_STALL_ABORT=5
      # shellcheck disable=SC2086
      "$lockstep" run -o "$traces" --timeout 60 -- "${MPIRUN:-mpirun}" ${MPIRUN_FLAGS:-} \
        -x LOCKSTEP_RT_STALL_WARN -x LOCKSTEP_RT_STALL_ABORT -np 4 "$1" \
        --variant=buggy --overflow-rank 2 --overflow-step 2 --steps 6 \
        > "$work/run.log" 2>&1
      ;;
    synthetic) "$1" "$traces" 1024 120 || fail "could not write the synthetic job" ;;
    overlap) "$1" "$traces" || fail "could not write the overlapping job" ;;
    *) fail "unknown case $case" ;;
  esac
  "$lockstep" check --format json "$traces" > "$work/check.json"
  rc=$?
  [ "$rc" -le 1 ] || fail "check exited $rc"
  # A verdict that could not be written is no verdict: a CI gate must not read a truncated one.
  if [ -w /dev/full ]; then
    for f in text json sarif; do
      "$lockstep" check --format $f "$traces" > /dev/full 2> "$work/check-full.err"
      [ $? = 2 ] && grep -q "standard output: write failed: No space left on device" "$work/check-full.err" ||
        fail "check --format $f to a full device: $(cat "$work/check-full.err")"
    done
    for f in table json; do
      "$lockstep" show --format $f "$traces" > /dev/full 2> "$work/show-full.err"
      [ $? = 2 ] && grep -q "standard output: write failed: No space left on device" "$work/show-full.err" ||
        fail "show --format $f to a full device: $(cat "$work/show-full.err")"
    done
  fi
  echo "traces ok: $case (check exit $rc)"
  exit 0
fi

[ -d "$traces" ] || fail "no traces in $work (the traces step did not run)"
ranks=4
[ "$case" = synthetic ] && ranks=1024
[ "$case" = overlap ] && ranks=2
findings=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["findings"]))' \
  "$work/check.json")

if [ "$step" = export ]; then
  want=1
  [ "$findings" = 0 ] && want=0
  "$lockstep" export "$traces" --format perfetto -o "$work/trace.perfetto-trace"
  rc=$?
  [ "$rc" = "$want" ] || fail "export --format perfetto exited $rc, want $want"
  "$lockstep" export "$traces" > "$work/trace-default.perfetto-trace" || [ $? = 1 ] ||
    fail "export to stdout failed"
  cmp -s "$work/trace.perfetto-trace" "$work/trace-default.perfetto-trace" ||
    fail "the default format is not --format perfetto"
  # Ranks encoded on one thread or on several (each rank's bytes written in job order): the same file.
  for j in 1 3; do
    "$lockstep" export "$traces" -j $j -o "$work/trace-j$j.perfetto-trace" || [ $? = 1 ] ||
      fail "export -j $j failed"
    cmp -s "$work/trace.perfetto-trace" "$work/trace-j$j.perfetto-trace" ||
      fail "export -j $j wrote another file than the default -j"
  done
  # A file system that refuses the bytes: exit 2 and the reason, not a truncated trace reported as written.
  if [ -w /dev/full ]; then
    "$lockstep" export "$traces" -o /dev/full 2> "$work/export-full.err"
    [ $? = 2 ] && grep -q "/dev/full: write failed: No space left on device" "$work/export-full.err" ||
      fail "export to a full device: $(cat "$work/export-full.err")"
    "$lockstep" export "$traces" > /dev/full 2> "$work/export-full.err"
    [ $? = 2 ] && grep -q "^lockstep: standard output: write failed: No space left on device" "$work/export-full.err" ||
      fail "export to a full standard output: $(cat "$work/export-full.err")"
  fi
  # The binary trace is refused on a terminal (a pseudo-terminal from script(1), when installed).
  if command -v script > /dev/null; then
    tty_out=$(script -qec "'$lockstep' export '$traces'; echo rc=\$?" /dev/null | tr -d '\r')
    grep -q "writes a binary trace: give -o FILE" <<< "$tty_out" && grep -q "^rc=2$" <<< "$tty_out" ||
      fail "export to a terminal: $tty_out"
  fi
  "$lockstep" export "$traces" --format chrome -o "$work/trace.json"
  rc=$?
  [ "$rc" = "$want" ] || fail "export --format chrome exited $rc, want $want"
  # Bad input: one line naming the problem, exit 2.
  "$lockstep" export "$work/no-such-dir" -o "$work/x.json" 2> "$work/export-bad.err"
  [ $? = 2 ] && grep -q "no-such-dir" "$work/export-bad.err" ||
    fail "export of a missing directory: $(cat "$work/export-bad.err")"
  "$lockstep" export "$traces" --format svg 2> "$work/export-bad.err"
  [ $? = 2 ] && grep -q "unknown --format 'svg'" "$work/export-bad.err" ||
    fail "export --format svg: $(cat "$work/export-bad.err")"
  "$lockstep" export "$traces" --seq 3:1 2> "$work/export-bad.err"
  [ $? = 2 ] && grep -q "TO must be above FROM" "$work/export-bad.err" ||
    fail "export --seq 3:1: $(cat "$work/export-bad.err")"
  # A window of positions: still well formed, and nothing outside it, in both formats.
  "$lockstep" export "$traces" --format chrome --seq 1:3 -o "$work/trace-window.json"
  [ $? -le 1 ] || fail "export --format chrome --seq 1:3 failed"
  python3 "$here/validate_trace.py" "$work/trace-window.json" --ranks $ranks --seq 1:3 || exit 1
  "$lockstep" export "$traces" --seq 1:3 -o "$work/trace-window.perfetto-trace"
  [ $? -le 1 ] || fail "export --seq 1:3 failed"
  python3 "$here/validate_perfetto.py" "$work/trace-window.perfetto-trace" --ranks $ranks --seq 1:3 ||
    exit 1
  python3 "$here/validate_trace.py" "$work/trace.json" --ranks $ranks --findings "$findings" \
    --check "$work/check.json" || exit 1
  # The binary trace read by an independent decoder too (protoc, installed by scripts/setup) when present.
  raw=()
  if command -v protoc > /dev/null; then
    protoc --decode_raw < "$work/trace.perfetto-trace" > "$work/trace.decode_raw.txt" ||
      fail "protoc --decode_raw cannot read the Perfetto trace"
    raw=(--raw "$work/trace.decode_raw.txt")
  else
    echo "note: protoc not installed, the Perfetto trace is read by validate_perfetto.py alone"
  fi
  # Its timestamps (deltas on each lane's incremental clock) add up to the JSON export's absolute times.
  python3 "$here/validate_perfetto.py" "$work/trace.perfetto-trace" --ranks $ranks \
    --findings "$findings" --check "$work/check.json" --chrome "$work/trace.json" "${raw[@]}" \
    > "$work/validate.log" || { cat "$work/validate.log"; exit 1; }
  cat "$work/validate.log"
  # Where a lane's time goes back (overlapping calls), those packets carry absolute times.
  if [ "$case" = overlap ]; then
    grep -Eq ", [1-9][0-9]* absolute timestamps" "$work/validate.log" ||
      fail "overlapping calls, yet no packet with an absolute timestamp"
    # The NCCL calls' device times are slices of their own (which --chrome compared above).
    python3 - "$work/trace.json" <<'PY' || fail "no device slices in the JSON export"
import json, sys
sys.exit(0 if sum(e.get("ph") == "X" and e.get("cat") == "device"
                  for e in json.load(open(sys.argv[1]))["traceEvents"]) >= 2 else 1)
PY
  fi
  # The validator itself rejects a damaged trace: the file cut short inside its last packet.
  head -c -3 "$work/trace.perfetto-trace" > "$work/trace-cut.perfetto-trace"
  if python3 "$here/validate_perfetto.py" "$work/trace-cut.perfetto-trace" --ranks $ranks > "$work/cut.log"; then
    fail "validate_perfetto.py accepted a truncated trace"
  fi
  grep -q "^FAIL:" "$work/cut.log" || fail "validate_perfetto.py did not say why: $(cat "$work/cut.log")"
  echo "sizes: perfetto $(stat -c %s "$work/trace.perfetto-trace") bytes, chrome $(stat -c %s "$work/trace.json") bytes"
  rm -f "$work/trace.decode_raw.txt" "$work/trace-cut.perfetto-trace"
  exit 0
fi

[ "$step" = html ] || fail "unknown step $step"
"$lockstep" report "$traces" -o "$work/report.html"
rc=$?
[ "$rc" -le 1 ] || fail "report exited $rc"
"$lockstep" report "$traces" -o "$work/no-such-dir/report.html" 2> "$work/html-bad.err"
[ $? = 2 ] && grep -q "cannot write" "$work/html-bad.err" ||
  fail "report to an unwritable file: $(cat "$work/html-bad.err")"
"$lockstep" check "$traces" --format html -o "$work/check.html"
[ $? = "$rc" ] || fail "check --format html exited differently from report"
cmp -s "$work/report.html" "$work/check.html" || fail "check --format html differs from lockstep report"
# Ranks read on one thread or on several: the same page.
for j in 1 3; do
  "$lockstep" report "$traces" -j $j -o "$work/report-j$j.html"
  [ $? = "$rc" ] || fail "report -j $j exited differently"
  cmp -s "$work/report.html" "$work/report-j$j.html" || fail "report -j $j differs from the default -j"
done
# Self-contained: nothing the page would fetch.
if grep -Eq '<(script|link|img)[^>]+(src|href)=' "$work/report.html"; then
  fail "the report references outside files"
fi
# (The SVG namespace is a name, not a fetch.)
urls=$(grep -Eo "https?://[^\"' )]+" "$work/report.html" | grep -vx 'http://www.w3.org/2000/svg' | sort -u)
[ -z "$urls" ] || fail "the report contains URLs: $urls" 
echo "report: $(stat -c %s "$work/report.html") bytes"

chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "SKIP: $chromium not installed (scripts/setup installs it)"
  exit 77
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars "--user-data-dir=$profile"
       --virtual-time-budget=10000)
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$work/report.html" \
  > "$work/report.dom" 2> "$work/chromium.log" ||
  fail "chromium --dump-dom failed: $(tail -3 "$work/chromium.log")"
height=1600
[ "$case" = tf24 ] && height=2000
timeout 120 "$chromium" "${flags[@]}" --window-size=1400,$height "--screenshot=$work/report.png" \
  "file://$work/report.html" >> "$work/chromium.log" 2>&1 || fail "chromium --screenshot failed"
[ -s "$work/report.png" ] || fail "no screenshot"
echo "screenshot: $work/report.png"

case $case in
  cycle3)
    exec python3 "$here/check_dom.py" "$work/report.dom" --kind deadlock_cycle --culprits 0,1,2 \
      --culprit-lane 0 \
      --cycle "0>1" --cycle "1>2" --cycle "2>0" ;;
  deadlock)
    exec python3 "$here/check_dom.py" "$work/report.dom" --kind deadlock_cycle --culprits 0,1 \
      --culprit-lane 0 \
      --cycle "0>1" --cycle "1>0" ;;
  p2p)
    # Rank 1 waits in a receive that has no position on the communicator: the finding, the wait-for
    # edges and rank 1's row say where it stands, never "#-1".
    exec python3 "$here/check_dom.py" "$work/report.dom" --kind deadlock_cycle --culprits 1 \
      --cycle "0>1" --cycle "1>0" --absent "#-1" ;;
  tf24)
    # The same page opened on the time axis.
    timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$work/report.html#axis=time" \
      > "$work/report-time.dom" 2>> "$work/chromium.log" || fail "chromium --dump-dom (time axis) failed"
    python3 "$here/check_dom.py" "$work/report-time.dom" --time-axis 2 || exit 1
    # The skipped gradient allreduce's line, read from the source rather than written down here.
    line=$(grep -n "skipped on overflow" "$2" | cut -d: -f1)
    exec python3 "$here/check_dom.py" "$work/report.dom" --kind missing_collective --kind name_mismatch \
      --culprits 2 --culprit-lane 2 --gap-lane 2 --source-line "$line" ;;
  synthetic)
    exec python3 "$here/check_dom.py" "$work/report.dom" --clean --max-lanes 8 --ranks 1024 ;;
esac
