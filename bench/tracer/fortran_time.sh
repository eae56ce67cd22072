#!/usr/bin/env bash
# What the tracer adds per MPI call made from Fortran (mpif.h), inside one process: fortran_loop.F90
# alternates rounds with libmpi_mpifh's slots pointed at the tracer and back at libmpi, so the baseline
# is the same process's untraced loop. First a short run whose trace must hold exactly the calls that
# were sent to the tracer (the swap verified); then PROCS processes, and per path the median over them
# of the fastest traced round minus the fastest untraced one, per call, and of the median round.
#   bench/tracer/fortran_time.sh BUILD_DIR [PROCS] [N] [ROUNDS]
#   The timed runs write a ring (LOCKSTEP_TRACE_RING, 65536 unless set), as path_time.sh's do.
set -euo pipefail
build=${1:?build dir}
procs=${2:-5}
n=${3:-100000}
rounds=${4:-15}
lib=$(realpath "$build/lib/liblockstep_trace.so")
loop=$(realpath "$build/bench/tracer/bench_fortran_loop")
lockstep=$(realpath "$build/bin/lockstep")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$dir/check "$loop" 1000 3 >"$dir/check.out"
"$lockstep" show --no-symbolize "$dir/check" >"$dir/check.show"
for path in allreduce send_recv; do
  sent=$(awk -v p=$path '$1 == p {print $4}' "$dir/check.out")
  case $path in
    allreduce) got=$(grep -c " MPI_Allreduce " "$dir/check.show" || true) ;;
    send_recv) got=$(grep -cE " MPI_(Send|Recv) " "$dir/check.show" || true) ;;
  esac
  [ "$got" = "$sent" ] || { echo "fortran_time.sh: $path: $got records in the trace, $sent calls sent to the tracer" >&2; exit 1; }
done
echo "swap verified: the trace holds exactly the calls sent to the tracer ($(awk '{s += $4} END {print s}' "$dir/check.out") calls)"

export LOCKSTEP_TRACE_RING=${LOCKSTEP_TRACE_RING:-65536}
for i in $(seq "$procs"); do
  rm -rf "$dir/t"
  LD_PRELOAD=$lib LOCKSTEP_TRACE_DIR=$dir/t "$loop" "$n" "$rounds" >>"$dir/times"
done
for path in allreduce send_recv; do
  best=$(awk -v p=$path '$1 == p {print $2}' "$dir/times" | median)
  lo=$(awk -v p=$path '$1 == p {print $2}' "$dir/times" | sort -n | head -1)
  hi=$(awk -v p=$path '$1 == p {print $2}' "$dir/times" | sort -n | tail -1)
  round=$(awk -v p=$path '$1 == p {print $3}' "$dir/times" | median)
  echo "$path from Fortran: added $best ns per call, best rounds (median of $procs processes; $lo to $hi); median round $round ns"
done
