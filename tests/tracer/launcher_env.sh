#!/usr/bin/env bash
# A job without MPI, started as torchrun starts its workers: RANK, WORLD_SIZE and TORCHELASTIC_RUN_ID
# in each worker's environment, next to its launcher's own variables, which it inherits (here
# SLURM_PROCID 0 in both, as under the one srun task that runs torchrun on a node). Each trace must
# name its worker's rank and the world's size and carry the run's id as its job, and `lockstep check`
# must check the two: in lockstep, then with rank 1 broadcasting where rank 0 reduces.
#   tests/tracer/launcher_env.sh LOCKSTEP LIB PROGRAM
set -euo pipefail
lockstep=$1
lib=$2
prog=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "launcher_env: $*" >&2
  exit 1
}
job() {  # DIR [ODD_AT]: both workers, at once
  for rank in 0 1; do
    env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u PMIX_NAMESPACE -u OMPI_MCA_ess_base_jobid \
      -u SLURM_JOB_ID -u LOCKSTEP_JOB_ID SLURM_PROCID=0 RANK=$rank WORLD_SIZE=2 TORCHELASTIC_RUN_ID=run-42 \
      LD_PRELOAD="$lib" LOCKSTEP_TRACE_DIR="$1" "$prog" 300 "${@:2}" &
  done
  if ! wait %1 || ! wait %2; then fail "a worker failed"; fi
}

job "$work/clean"
for rank in 0 1; do
  files=("$work/clean/rank-$rank".*.lstrace)
  [[ -f ${files[0]} ]] || fail "no trace file names rank $rank: $(ls "$work/clean")"
  header=$("$lockstep" show --no-symbolize "${files[0]}" | sed -n 2p)
  [[ $header == *"rank $rank of 2,"* && $header == *"job run-42" ]] ||
    fail "rank $rank's header: $header"
done
out=$("$lockstep" check --no-symbolize "$work/clean") || fail "check of the clean job: $out"
[[ $out == "lockstep: 2 ranks, 1 communicator, 300 collectives: IN LOCKSTEP"* ]] || fail "clean job: $out"

job "$work/odd" 120
rc=0
out=$("$lockstep" check --no-symbolize "$work/odd") || rc=$?
[[ $rc -eq 1 ]] || fail "check of the job where rank 1 broadcasts: exit $rc: $out"
[[ $out == *"#120"* && $out == *"rank 1"* ]] || fail "the finding does not name rank 1's #120: $out"
# A worker that none of those variables name: its file is skipped, and a job of such files is refused,
# saying where a rank comes from.
env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u SLURM_PROCID -u RANK -u WORLD_SIZE \
  LD_PRELOAD="$lib" LOCKSTEP_TRACE_DIR="$work/unnamed" "$prog" 10 2>/dev/null || true
rc=0
out=$("$lockstep" check --no-symbolize "$work/unnamed" 2>&1) || rc=$?
[[ $rc -eq 2 && $out == *"no trace file names its rank (a process learns it from MPI_Init, else from RANK"* ]] ||
  fail "a job whose files name no rank: exit $rc: $out"
echo "launcher_env: ok"
