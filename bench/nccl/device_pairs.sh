#!/usr/bin/env bash
# What device-completion tracking adds to an intercepted NCCL call on the calling thread, two tracer
# builds in alternating processes: bench_nccl on the CPU stand-in with the CUDA runtime stand-in of the
# tests (tests/cuda/fake_cudart.cc, every event complete when first queried), so each call takes an
# event, records it and hands it to the tracer's GPU thread, which polls it and writes its DEVICE
# record. Per process: the median CPU time of the calling thread per ncclAllReduce, alone and as a group
# of one, through the tracer minus the stand-in called directly (whose own MPI_Allgather is traced
# instead: the difference is the NCCL record and the device tracking); then NEW's over BASE's, per pair.
# The calling thread runs on CPU 0 and the tracer's GPU thread on CPU 1 (CPUS=0,1, bench_nccl's
# LOCKSTEP_BENCH_CPUS): what the two pass between them crosses cores in every process. CPUS=0,0 puts
# both on one CPU; CPUS=any leaves them to the scheduler, which moves between the two from run to run.
#   bench/nccl/device_pairs.sh BUILD_DIR BASE_LIBDIR NEW_LIBDIR [PAIRS] [traced|traced+ring] [CPUS]
# LIBDIRs: directories holding a liblockstep_trace.so each (copies, so a rebuild changes nothing).
set -euo pipefail
build=$(realpath "${1:?build dir}")
base=$(realpath "${2:?BASE libdir}")
new=$(realpath "${3:?NEW libdir}")
pairs=${4:-5}
mode=${5:-traced+ring}
cpus=${6:-0,1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
settings=()
[[ $mode == traced+ring ]] && settings=(LOCKSTEP_TRACE_RING=65536)
[[ $cpus != any ]] && settings+=(LOCKSTEP_BENCH_CPUS="$cpus")
one() {  # one LIBDIR: "direct intercepted grouped_direct grouped_intercepted", ns of CPU time
  env "${settings[@]}" LD_LIBRARY_PATH="$1:$build/tests/nccl_standin/lib" LOCKSTEP_CUDART="$build/tests/cuda/libfake_cudart.so" \
    LOCKSTEP_FAKE_CUDA_INSTANT=1 LOCKSTEP_BENCH_MODE="$mode" LOCKSTEP_TRACE_DIR="$dir/t" OMPI_MCA_btl=self \
    timeout 300 "$build/bench/nccl/bench_nccl" --benchmark_min_time=0.2 --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, '/_median/ {gsub(/"/, "", $1); split($1, a, "/"); v[a[1]] = $4}
      END {print v["ncclAllReduce_direct"], v["ncclAllReduce_intercepted"], v["grouped_direct"], v["grouped_intercepted"]}'
  rm -rf "$dir/t"
}
for _ in $(seq "$pairs"); do
  echo "$(one "$base") $(one "$new")"
done | awk '{
  cb = $2 - $1; gb = $4 - $3; cn = $6 - $5; gn = $8 - $7
  printf "BASE: call +%.1f ns, group +%.1f ns   NEW: call +%.1f ns, group +%.1f ns   NEW/BASE: call %.3f, group %.3f\n",
         cb, gb, cn, gn, cn / cb, gn / gb
}' | tee "$dir/pairs"
median() { sort -n | awk '{a[NR] = $1} END {printf "%.3f", a[int((NR + 1) / 2)]}'; }
echo "median NEW/BASE of $pairs pairs: call $(awk '{print $(NF - 2)}' "$dir/pairs" | tr -d , | median)," \
  "group $(awk '{print $NF}' "$dir/pairs" | median)"
