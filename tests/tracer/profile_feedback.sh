#!/usr/bin/env bash
# tracer.profile_feedback: the counts of the tracer's training run lie where its record path's files are
# compiled, and GCC used them: collective_enter's code that the training never ran is split off into a
# cold part, which a build without counts does not do.
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
[[ $status == 0 ]] && echo "ok: trained counts for the record path, and the library laid out from them"
exit $status
