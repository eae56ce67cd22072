#!/usr/bin/env bash
# The report and the Perfetto export against check on the same traces, in the same round: for each
# build (a second one for an A/B in one session), each thread count, wall time of `lockstep check`,
# `lockstep report -o FILE` and `lockstep export -o /dev/null`, each under /usr/bin/time in its own
# process; then, per build and thread count, the range and median of report/check and export/check and
# how many rounds stayed within 3x. Every build's commands run in turn within a round, so a slower
# phase of a shared machine lands on all of them.
#   bench/report/against_check.sh TRACE_DIR BUILD_DIR [BASE_BUILD_DIR] [ROUNDS] [THREADS...]
#   (traces from: BUILD_DIR/bench/check/check_bench gen TRACE_DIR 1024 100000 3, 8.1 GB)
set -euo pipefail
dir=${1:?trace dir}
new=$(realpath "${2:?build dir}")
base=${3:+$(realpath "$3")}
rounds=${4:-4}
shift $(($# < 4 ? $# : 4))
threads=("$@")
((${#threads[@]})) || threads=(1 2)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wall() {  # wall LOCKSTEP ARGS...: seconds (the exit code is the check's verdict, not a failure)
  /usr/bin/time -f %e -o "$out/time" "$@" >/dev/null 2>&1 || true
  tail -1 "$out/time"
}
"$new/bin/lockstep" check "$dir" --no-symbolize -j "${threads[0]}" >/dev/null 2>&1 || true  # warm the page cache
echo "start $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for who in new ${base:+base}; do
    b=$new
    [[ $who == base ]] && b=$base
    for j in "${threads[@]}"; do
      c=$(wall "$b/bin/lockstep" check "$dir" --no-symbolize -j "$j")
      h=$(wall "$b/bin/lockstep" report "$dir" --no-symbolize -j "$j" -o "$out/report.html")
      e=$(wall "$b/bin/lockstep" export "$dir" --no-symbolize -j "$j" -o /dev/null)
      echo "round $r $who -j $j: check $c s, report $h s ($(stat -c %s "$out/report.html") bytes), export $e s" |
        tee -a "$out/rounds"
    done
  done
done
echo "end $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
for who in new ${base:+base}; do
  for j in "${threads[@]}"; do
    for what in report export; do
      awk -v w="$who" -v j="$j" -v what="$what" '$3 == w && $5 == j":" {
          c = $7; v = what == "report" ? $10 : $15; x[++n] = v / c; within += v / c <= 3 }
        END {
          for (i = 1; i <= n; ++i) for (k = i + 1; k <= n; ++k) if (x[k] < x[i]) { t = x[i]; x[i] = x[k]; x[k] = t }
          med = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
          printf "%s -j %s: %s/check %.2f-%.2fx, median %.2fx, within 3x in %d of %d rounds\n",
                 w == "new" ? "build" : "base", j, what, x[1], x[n], med, within, n }' "$out/rounds"
    done
  done
done
