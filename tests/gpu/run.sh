#!/usr/bin/env bash
# The one-shot GPU check of the tracer's GPU capture, for a machine with an NVIDIA GPU and the CUDA
# toolkit (not part of ctest: CI has no GPU). In a few minutes on one GPU it:
#   1. builds liblockstep_trace.so and lockstep with CUDA (LOCKSTEP_WITH_CUDA=ON),
#   2. runs tests/gpu/nccl_all_collectives.cc (1 rank, every NCCL collective on cudaMalloc'ed buffers)
#      under the tracer with CUDA events and CUPTI, and checks every record completed with kernel times,
#   3. the same with CUDA events only,
#   4. in NCCL profiler-plugin mode (NCCL_PROFILER_PLUGIN=liblockstep_trace.so, nothing preloaded),
#   5. with NCCL called past the interposer (as with a static NCCL): collectives inferred from kernels,
#   6. measures the host cost the tracer adds per NCCL call: in each traced run, batches of calls through
#      the interposer against batches made straight to libnccl's own ncclAllReduce in the same process
#      (median of the rounds' differences), with events and CUPTI, events only, and neither
#      (LOCKSTEP_TRACE_DEVICE=0: the interposer's own record path); also untraced and traced runs' medians,
#   7. runs the bundled runtime's NCCL backend on device buffers (tests/runtime/nccl_smoke.cc, 1 rank),
# then prints a summary. Exit 0 when every check passed, 1 when one failed, 2 when it cannot run here.
#   tests/gpu/run.sh              build and check on this machine
#   tests/gpu/run.sh --build-only build only (a machine with the toolkit and MPI but no GPU)
#   tests/gpu/run.sh --prebuilt   check with what --build-only left in the build folder (a GPU machine
#                                 without MPI's headers or a compiler; step 7 needs mpirun)
#   env: CUDA_HOME (/usr/local/cuda), LOCKSTEP_GPU_BUILD (build-gpu),
#        LOCKSTEP_GPU_CALLS (benchmark calls per run, 20000), LOCKSTEP_GPU_TIMEOUT (seconds per run, 300)
set -uo pipefail
mode=all
case ${1:-} in
  "") ;;
  --build-only) mode=build ;;
  --prebuilt) mode=prebuilt ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
build=${LOCKSTEP_GPU_BUILD:-$root/build-gpu}
calls=${LOCKSTEP_GPU_CALLS:-20000}
work=$build/gpu-check
results=()
fails=0

pass() { results+=("PASS  $*"); echo "== PASS: $*"; }
fail() { results+=("FAIL  $*"); echo "== FAIL: $*"; fails=$((fails + 1)); }
finish() {
  echo
  echo "==================== lockstep GPU check: summary ===================="
  [[ -n ${gpu_name:-} ]] && echo "GPU: $gpu_name"
  for r in "${results[@]}"; do echo "$r"; done
  [[ -n ${cost_lines:-} ]] && printf '%s\n' "$cost_lines"
  if ((fails)); then echo "RESULT: $fails check(s) failed"; exit 1; fi
  echo "RESULT: all checks passed"
  exit 0
}

if [[ $mode != build ]] && { ! gpu_name=$(nvidia-smi -L 2>/dev/null | head -1) || [[ -z $gpu_name ]]; }; then
  echo "run.sh: no NVIDIA GPU visible (nvidia-smi -L): this check needs one" >&2
  exit 2
fi
if [[ ! -e $cuda/lib64/libnccl.so.2 || ( $mode != prebuilt && ! -f $cuda/include/nccl.h ) ]]; then
  echo "run.sh: no CUDA toolkit with NCCL under $cuda (set CUDA_HOME)" >&2
  exit 2
fi
prog=$build/gpu-workload/nccl_all_collectives
rm -rf "$work"
mkdir -p "$work"

# ---- 1. build ---------------------------------------------------------------------------------------
if [[ $mode == prebuilt ]]; then
  for f in "$build/lib/liblockstep_trace.so" "$build/bin/lockstep" "$prog"; do
    [[ -x $f || -f $f ]] || { echo "run.sh: --prebuilt: $f is missing (run --build-only first)" >&2; exit 2; }
  done
  pass "prebuilt outputs found in $build"
else
echo "== building into $build"
mkdir -p "$(dirname "$prog")"
if cmake -S "$root" -B "$build" -G Ninja -DLOCKSTEP_WITH_CUDA=ON -DLOCKSTEP_WITH_CLANG=OFF \
     -DLOCKSTEP_BUILD_TESTS=ON -DLOCKSTEP_BUILD_BENCH=OFF >"$work/cmake.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" --target lockstep_trace lockstep rt_nccl_smoke >"$work/build.log" 2>&1 &&
   ${CXX:-g++} -std=c++17 -O2 -Wall -I"$cuda/include" "$root/tests/gpu/nccl_all_collectives.cc" -o "$prog" \
     -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lnccl -lcudart -ldl >"$work/workload.log" 2>&1; then
  pass "build with CUDA (liblockstep_trace.so, lockstep, workload)"
else
  tail -30 "$work"/*.log
  fail "build with CUDA"
  finish
fi
[[ $mode == build ]] && finish
fi
lib=$build/lib/liblockstep_trace.so
lockstep=$build/bin/lockstep
checker=$root/tests/gpu/check_gpu_trace.py
export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# run NAME ENV... -- ARGS...: runs the workload with a time limit; output in $work/NAME.out
run() {
  local name=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$work/$name"
  timeout "${LOCKSTEP_GPU_TIMEOUT:-300}" env "${envs[@]}" "$prog" "$@" >"$work/$name.out" 2>&1
}
collectives() { sed -n 's/^collectives=//p' "$work/$1.out"; }
host_ns() { sed -n 's/.*host_ns_per_call=\([0-9]*\).*/\1/p' "$work/$1.out"; }
added_ns() { sed -n 's/.*added_ns_per_call=\(-\{0,1\}[0-9]*\).*/\1/p' "$work/$1.out"; }
# check NAME MODE ARGS...: decodes NAME's traces and runs the checker on them
check() {
  local name=$1 mode=$2
  shift 2
  if ! "$lockstep" show --format json --no-symbolize "$work/$name" >"$work/$name.json" 2>"$work/$name.show.err"; then
    cat "$work/$name.show.err"
    return 1
  fi
  python3 "$checker" "$mode" "$work/$name.json" "$@"
}

# ---- 2-6 ----------------------------------------------------------------------------------------------
if run baseline -- --bench "$calls"; then
  pass "untraced workload ($(collectives baseline) collectives, $calls benchmark calls)"
else
  cat "$work/baseline.out"
  fail "untraced workload"
  finish
fi
k=$(collectives baseline)

echo "== events + CUPTI"
if run cupti LD_PRELOAD="$lib" LOCKSTEP_TRACE_DIR="$work/cupti" LOCKSTEP_TRACE_CUPTI=1 -- --bench "$calls" &&
   check cupti interposed "$k" --kernel-times; then
  pass "events + CUPTI: $k collectives completed on the device with kernel/copy times"
else
  cat "$work/cupti.out"
  fail "events + CUPTI"
fi

echo "== events only"
if run events LD_PRELOAD="$lib" LOCKSTEP_TRACE_DIR="$work/events" -- --bench "$calls" && check events interposed "$k"; then
  pass "events: $k collectives completed on the device"
else
  cat "$work/events.out"
  fail "events only"
fi

echo "== no device events (LOCKSTEP_TRACE_DEVICE=0): the interposer's host path alone"
if run host LD_PRELOAD="$lib" LOCKSTEP_TRACE_DIR="$work/host" LOCKSTEP_TRACE_DEVICE=0 -- --bench "$calls"; then
  pass "no device events: the workload ran traced"
else
  cat "$work/host.out"
  fail "no device events"
fi

echo "== NCCL profiler plugin (NCCL_PROFILER_PLUGIN, nothing preloaded)"
if run plugin NCCL_PROFILER_PLUGIN="$lib" LOCKSTEP_TRACE_DIR="$work/plugin" -- && check plugin plugin; then
  pass "profiler plugin: tasks recorded with NCCL's communicator and numbering"
else
  cat "$work/plugin.out"
  fail "profiler plugin"
fi

echo "== NCCL past the interposer (kernel-name fallback)"
if run inferred LD_PRELOAD="$lib" LOCKSTEP_TRACE_DIR="$work/inferred" LOCKSTEP_TRACE_CUPTI=1 -- --bypass &&
   check inferred inferred; then
  pass "kernel-name fallback: collectives inferred from NCCL kernels, with kernel times"
else
  cat "$work/inferred.out"
  fail "kernel-name fallback"
fi

echo "== bundled runtime, NCCL backend on device buffers"
# NCCL refuses two ranks on one GPU, so the smoke test runs one rank.
if ! command -v mpirun >/dev/null; then
  results+=("SKIP  runtime NCCL backend: no mpirun on this machine")
elif OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LOCKSTEP_RT_BACKEND=nccl \
     timeout "${LOCKSTEP_GPU_TIMEOUT:-300}" mpirun --oversubscribe -np 1 "$build/tests/runtime/rt_nccl_smoke" --device >"$work/rt_nccl.out" 2>&1 &&
   grep -q 'nccl smoke ok' "$work/rt_nccl.out"; then
  pass "runtime NCCL backend: every collective on device buffers matches its reference"
else
  cat "$work/rt_nccl.out"
  fail "runtime NCCL backend on device buffers"
fi

base=$(host_ns baseline) ho=$(host_ns host) ev=$(host_ns events) cu=$(host_ns cupti)
if [[ -n $base && -n $ho && -n $ev && -n $cu ]]; then
  cost_lines=$(printf 'cost per ncclAllReduce call (host, median of %d-call batches, %s calls):\n' 50 "$calls"
               printf '  %-18s %6d ns   added in the same process %4d ns (straight to libnccl: %d ns)\n' \
                 untraced "$base" "$(added_ns baseline)" "$(sed -n 's/.*direct_ns_per_call=\([0-9]*\).*/\1/p' "$work/baseline.out")"
               for m in host events cupti; do
                 label=$m
                 [[ $m == host ]] && label="no device events"
                 [[ $m == cupti ]] && label="events + CUPTI"
                 v=$(host_ns $m)
                 printf '  %-18s %6d ns   added in the same process %4d ns (against the untraced run: %+d ns, x%s)\n' "$label" "$v" \
                   "$(added_ns $m)" $((v - base)) "$(python3 -c "print(f'{$v/$base:.2f}')")"
               done)
  pass "cost per call measured"
else
  fail "cost per call: a benchmark run printed no figure"
fi
finish
