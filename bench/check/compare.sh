#!/usr/bin/env bash
# The checker of two builds on the same traces, alternating in one session: check_bench run of each
# build, PAIRS times; per run, the CPU time (user + system of the child) of the bare read and of the
# check, the check's records per second of CPU, its peak RSS, the ratio to the bare read of the same run,
# and the load average when the run started.
#   bench/check/compare.sh BASE_BUILD_DIR NEW_BUILD_DIR TRACE_DIR [THREADS] [PAIRS]
#   (traces from: BUILD_DIR/bench/check/check_bench gen TRACE_DIR RANKS COLLECTIVES [COMMS [RING]])
set -euo pipefail
base=${1:?base build dir}
new=${2:?new build dir}
dir=${3:?trace dir}
threads=${4:-1}
pairs=${5:-3}
printf '%-5s %6s %9s %9s %12s %9s %7s\n' build load read_cpu check_cpu 'M/s/core' rss_GiB ratio
for i in $(seq "$pairs"); do
  for b in base new; do
    build=$base
    [ "$b" = new ] && build=$new
    load=$(cut -d' ' -f1 /proc/loadavg)
    out=$("$build/bench/check/check_bench" run "$dir" "$threads" 2>&1)
    cpu() { echo "$out" | grep "^$1" | sed -E 's/.*CPU +([0-9.]+) s.*/\1/'; }
    rate=$(echo "$out" | grep '^check (default' | sed -E 's/.*CPU +[0-9.]+ s \( *([0-9.]+) M.*/\1/')
    rss=$(echo "$out" | grep '^check (default' | sed -E 's/.*peak RSS +([0-9.]+) GiB.*/\1/')
    ratio=$(echo "$out" | grep 'ratio check/baseline, CPU' | sed -E 's/.*CPU time: ([0-9.]+).*/\1/')
    printf '%-5s %6s %9s %9s %12s %9s %7s\n' "$b" "$load" "$(cpu 'baseline (')" "$(cpu 'check (default')" \
      "$rate" "$rss" "$ratio"
  done
done
