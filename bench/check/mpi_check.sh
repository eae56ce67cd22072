#!/usr/bin/env bash
# `lockstep check --mpi` against `lockstep check` on the same traces, alternating in one session: per
# round, the wall time of `check -j THREADS` here, of process 0 of `mpirun -np 1 check --mpi -j THREADS`
# (the same work in an MPI process) and of `mpirun -np PROCS check --mpi -j 1` (the files shared out over
# processes, every model sent to process 0, the records of differing ranks read from their owners),
# each with the whole mpirun's time in brackets; then what the models sent to process 0 weigh against
# the traces (check_bench model). Every run must print the same verdict line.
#   bench/check/mpi_check.sh BUILD_DIR TRACE_DIR [PROCS [THREADS [ROUNDS]]]
#   (traces from: BUILD_DIR/bench/check/check_bench gen TRACE_DIR RANKS COLLECTIVES [COMMS [RING [MESSAGES
#   [SKIP_AT [staggered|recv_ring]]]]]; with SKIP_AT every odd rank differs, with a hang every
#   rank, and process 0
#   reads their calls from their owners)
set -euo pipefail
build=${1:?build dir}
dir=${2:?trace dir}
procs=${3:-2}
threads=${4:-2}
rounds=${5:-5}
lockstep=$(realpath "$build/bin/lockstep")
mpirun=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# wall SECONDS of one command, its first output line kept in $out/line
wall() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$out/stdout" 2>"$out/stderr" || [ $? = 1 ] || { cat "$out/stderr" >&2; exit 1; }
  t1=$(date +%s.%N)
  head -1 "$out/stdout" >"$out/line"
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
# mpirun -np N `lockstep check --mpi`: process 0's own wall time (from its start to its exit, without
# mpirun's start-up or its wait after a process exits 1), then the whole mpirun's
under_mpi() {
  local n=$1 j=$2 total
  rm -f "$out"/t.*
  total=$(wall "$mpirun" --oversubscribe --bind-to none -np "$n" bash -c \
    's=$(date +%s.%N); "$@"; rc=$?; echo "$s $(date +%s.%N)" >"'"$out"'/t.${OMPI_COMM_WORLD_RANK:-0}"; exit $rc' \
    _ "$lockstep" check --mpi --no-symbolize -j "$j" "$dir")
  echo "$(awk '{print $2 - $1}' "$out/t.0") $total"
}
cat "$dir"/*.lstrace >/dev/null  # the page cache, warm for every run alike
printf '%-5s %6s %8s %16s %16s %10s %10s\n' round load check 'np 1 (mpirun)' "np $procs (mpirun)" 'np1/check' "np$procs/np1"
verdict=
for r in $(seq "$rounds"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  a=$(wall "$lockstep" check --no-symbolize -j "$threads" "$dir")
  v=$(cat "$out/line")
  read -r b bt < <(under_mpi 1 "$threads")
  [ "$(cat "$out/line")" = "$v" ] || { echo "mpirun -np 1: a different verdict: $(cat "$out/line")" >&2; exit 1; }
  read -r c ct < <(under_mpi "$procs" 1)
  [ "$(cat "$out/line")" = "$v" ] || { echo "mpirun -np $procs: a different verdict: $(cat "$out/line")" >&2; exit 1; }
  verdict=$v
  printf '%-5s %6s %8.3f %7.3f (%6.3f) %7.3f (%6.3f) %10.2f %10.2f\n' "$r" "$load" "$a" "$b" "$bt" "$c" "$ct" \
    "$(awk -v x="$b" -v y="$a" 'BEGIN {print x / y}')" "$(awk -v x="$c" -v y="$b" 'BEGIN {print x / y}')"
done
echo "verdict (every run): $verdict"
"$build/bench/check/check_bench" model "$dir"
