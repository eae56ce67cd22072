#!/usr/bin/env bash
# tracer.profile_feedback: the counts of the tracer's training run lie where its record path's files are
# compiled, and GCC used them: collective_enter's code that the training never ran is split off into a
# cold part, which a build without counts does not do; and the hot code starts on a page of its own,
# above every cold part.
#   profile_feedback.sh OBJECT_DIR LIBRARY
set -euo pipefail
dir=${1:?object dir} lib=${2:?library}
status=0
for file in session.cc mpi.cc mpi_collectives.cc mpi_p2p.cc python.cc writer.cc; do
  if [[ ! -s $dir/$file.gcda ]]; then
    echo "FAIL: no training counts for $file in $dir (see the build's 'training run failed' message)"
    status=1
  fi
done
symbols=$(nm -C "$lib")
for part in 'lockstep::trace::collective_enter(' 'lockstep::trace::collective_enter(.*\[clone \.cold\]'; do
  if ! grep -q -- "$part" <<<"$symbols"; then
    echo "FAIL: $lib has no symbol matching '$part': built without the counts?"
    status=1
  fi
done
# The record path's hot code starts on a page of its own (session.cc, lockstep_hot_text): every cold part
# lies below the label, the record path's functions above it.
raw=$(nm "$lib")
addr() { awk -v s="$1" '$3 == s && !found {print $1; found = 1}' <<<"$raw"; }
hot=$(addr lockstep_hot_text)
if [[ -z $hot ]]; then
  echo "FAIL: $lib has no lockstep_hot_text label"
  status=1
elif ((16#$hot % 4096 != 0)); then
  echo "FAIL: the hot code starts at 0x$hot, not on a page boundary"
  status=1
else
  while read -r at kind name; do
    [[ $kind == [tT] ]] || continue
    if [[ $name == *.cold ]] && ((16#$at >= 16#$hot)); then
      echo "FAIL: cold part $name at 0x$at, above the hot code's start 0x$hot"
      status=1
    fi
  done <<<"$raw"
  for fn in MPI_Allreduce MPI_Send MPI_Recv _ZN8lockstep5trace16collective_enterERKNS0_14CollectiveArgsEm \
    _ZN8lockstep5trace17collective_returnERNS0_7PendingEb; do
    at=$(addr "$fn")
    if [[ -z $at ]] || ((16#$at < 16#$hot)); then
      echo "FAIL: $fn at 0x${at:-?}, below the hot code's start 0x$hot"
      status=1
    fi
  done
fi
[[ $status == 0 ]] && echo "ok: trained counts for the record path, the library laid out from them, its hot code on its own page"
exit $status
