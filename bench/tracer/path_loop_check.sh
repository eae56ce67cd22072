#!/usr/bin/env bash
# That each path_loop.c path measures what it says: its traced loop goes through the tracer and its
# PMPI_* twin past it. Runs each path for N iterations (after path_loop's warm-up of 1,000 iterations of
# each loop) with the tracer preloaded and counts the trace's records of each call: the traced loop's
# calls, and none of the twin's.
#   path_loop_check.sh LOOP LOCKSTEP TRACER N PATH=CALL:PER_ITERATION[,CALL:PER_ITERATION...] ...
#   e.g. send_recv_cold=MPI_Send:1,MPI_Recv:1 and floor=MPI_Allreduce:0 (the floor calls PMPI_ alone)
set -euo pipefail
loop=$1 lockstep=$2 tracer=$3 n=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_btl=self
failed=0
for spec in "$@"; do
  path=${spec%%=*}
  rm -rf "$dir/t"
  LD_PRELOAD=$tracer LOCKSTEP_TRACE_DIR=$dir/t "$loop" "$path" "$n" >/dev/null
  "$lockstep" show --no-symbolize "$dir/t" | awk '$1 ~ /^[0-9]+$/ {print $4}' | sort | uniq -c >"$dir/counts"
  IFS=, read -ra calls <<<"${spec#*=}"
  for c in "${calls[@]}"; do
    name=${c%%:*} want=$((${c#*:} * (1000 + n)))
    got=$(awk -v name="$name" '$2 == name {print $1}' "$dir/counts")
    got=${got:-0}
    if [[ $got != "$want" ]]; then
      echo "path_loop_check: $path: $got $name records, expected $want" >&2
      failed=1
    else
      echo "$path: $got $name records, as called"
    fi
  done
done
exit $failed
