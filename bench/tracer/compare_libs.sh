#!/usr/bin/env bash
# Added cost per path of two tracer libraries, alternating in one session: bench_tracer runs with each
# library's directory first on LD_LIBRARY_PATH (its RUNPATH gives way), PAIRS times; per run and path,
# added = the MPI_ benchmark's median CPU time minus its PMPI_ twin's in the same child; then the median
# over the runs of each library and their ratio.
#   bench/tracer/compare_libs.sh BUILD_DIR BASE_LIB_DIR NEW_LIB_DIR [PAIRS] [FILTER]
#   FILTER: a --benchmark_filter regex (default: every per-call path, traced and ring modes)
set -euo pipefail
build=${1:?build dir}
base=$(realpath "${2:?base library dir}")
new=$(realpath "${3:?new library dir}")
pairs=${4:-3}
filter=${5:-'^P?MPI_(Allreduce|Iallreduce_Wait|Iallreduce_Test|Send_Recv|Sendrecv|Isend_Irecv_Waitall|Annotate|Rt_Collective)/traced(\+ring)?/'}
bench=$(realpath "$build/bench/tracer/bench_tracer")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq "$pairs"); do
  for lib in base new; do
    dir=$base
    [ "$lib" = new ] && dir=$new
    # CSV rows: "name_median",iterations,real_time,cpu_time,...
    LD_LIBRARY_PATH=$dir "$bench" --benchmark_filter="$filter" --benchmark_format=csv 2>/dev/null |
      awk -F, -v lib="$lib" -v run="$i" '$1 ~ /_median"$/ {gsub(/"/, "", $1); sub(/_median$/, "", $1); print lib, run, $1, $4}'
  done
done >"$out"
# lib run name cpu -> added per (lib, run, path, mode); then medians over runs.
awk '{
  split($3, p, "/"); name = p[1]; mode = p[2];
  traced = name !~ /^PMPI_/; sub(/^P?MPI_/, "", name);
  key = $1 SUBSEP $2 SUBSEP name "/" mode;
  if (traced) t[key] = $4; else u[key] = $4;
}
END { for (k in t) if (k in u) { split(k, f, SUBSEP); printf "%s %s %s %.1f\n", f[1], f[2], f[3], t[k] - u[k] } }' "$out" |
  sort -k3,3 -k1,1 -k2,2n |
  awk '
  function median(list,   a, n, i, j, x) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) {
      x = a[i] + 0
      for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]
      a[j + 1] = x
    }
    if (n % 2) return a[(n + 1) / 2]
    return (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    k = $3 SUBSEP $1
    if (k in runs) runs[k] = runs[k] " " $4
    else runs[k] = $4
    paths[$3] = 1
  }
  END {
    for (p in paths) {
      kb = p SUBSEP "base"
      kn = p SUBSEP "new"
      b = median(runs[kb])
      w = median(runs[kn])
      r = 0
      if (b > 0) r = w / b
      printf "%-30s %22s -> %6.1f %22s -> %6.1f %6.2f\n", p, runs[kb], b, runs[kn], w, r
    }
  }' | sort
echo "(columns: path/mode; base runs -> median added ns; new runs -> median; new/base)"
