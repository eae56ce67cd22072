#!/usr/bin/env bash
# Where faulting in the new pages of a growing trace lands: bench_tracer's traced child runs one
# benchmark (7 x 300,000 calls) under `perf record -e cpu-clock -g`; a sample counts as page population
# when its kernel stack goes through a page fault or madvise (the prefault). Reported: the share of the
# calling (main) thread's CPU samples that populate pages, the population samples on the tracer's
# other threads (the growth helper) against the calling thread's, and the process's minor faults per
# call (/usr/bin/time: prefaulted pages included), less those of the same child without a benchmark.
#   bench/tracer/growth_faults.sh BUILD_DIR LIB_DIR [BENCHMARK] [RING]
#   BENCHMARK: default MPI_Annotate/traced; RING: records (LOCKSTEP_TRACE_RING), default none
set -euo pipefail
build=${1:?build dir}
lib=$(realpath "${2:?library dir}")
name=${3:-MPI_Annotate/traced}
ring=${4:-}
calls=$((7 * 300000))
period=20000  # ns of CPU per sample
bench=$(realpath "$build/bench/tracer/bench_tracer")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {  # run FILTER -> "MAIN_SAMPLES MAIN_POPULATION OTHER_POPULATION MINOR_FAULTS"
  rm -rf "$dir/t" "$dir/perf.data"
  env LD_LIBRARY_PATH="$lib" OMPI_MCA_btl=self LOCKSTEP_BENCH_MODE=traced LOCKSTEP_TRACE_DIR="$dir/t" \
    ${ring:+LOCKSTEP_TRACE_RING=$ring} /usr/bin/time -f '%R' -o "$dir/minflt" \
    perf record -q -e cpu-clock -c $period -g -o "$dir/perf.data" "$bench" --benchmark_filter="$1" \
    >/dev/null 2>&1
  local s
  s=$(perf script -i "$dir/perf.data" -F comm,pid,tid,ip,sym 2>/dev/null |
    awk 'function done() { if (head != "" && main) t++; if (head != "" && hit) { if (main) m++; else o++ } head = ""; hit = 0 }
         /^[^ \t]/ { done(); head = $0; main = 0; if ($1 == "bench_tracer") { split($2, a, "/"); main = a[1] == a[2] }
                     if ($1 != "bench_tracer") head = ""; next }
         /asm_exc_page_fault|__x64_sys_madvise/ { if (head != "") hit = 1 }
         END { done(); print t + 0, m + 0, o + 0 }')
  echo "$s $(tail -1 "$dir/minflt")"
}
read -r _ _ _ f0 < <(run '^none$')
read -r t m o f1 < <(run "^${name//+/\\+}/")
awk -v t="$t" -v m="$m" -v o="$o" -v f=$((f1 - f0)) -v n=$calls -v name="$name${ring:+ ring $ring}" \
  'BEGIN {printf "%-30s calling thread: %4.1f%% of its CPU populating pages; other threads: %5d samples to its %5d; minor faults %.4f/call\n",
                 name, t ? 100 * m / t : 0, o, m, f / n}'
