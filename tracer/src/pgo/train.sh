#!/usr/bin/env bash
# The training run of the tracer's profile-guided build (CMakeLists.txt here): the main intercepted
# paths of bench/tracer/path_loop.c, with a ring and with a growing file, and MPI calls made from Python
# frames where mpi4py imports (through ctypes, and mpi4py's own methods), each traced by the instrumented copy of the library in one MPI process of
# its own (about 5 s in all); then the counts it wrote go where the real library's objects are compiled.
# A run that fails leaves no counts: the library is then built as without profile feedback, and the
# build goes on.
#   train.sh TRAIN_LIB LOOP TRAIN_OBJECT_DIR REAL_OBJECT_DIR STAMP [PYTHON CTYPES_SCRIPT MPI4PY_SCRIPT]
set -uo pipefail
lib=$1 loop=$2 from=$3 to=$4 stamp=$5 python=${6:-} script=${7:-} mpi4py_script=${8:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Counts from an earlier run would add to this one's, and stale ones would not match the objects.
find "$from" "$to" -name '*.gcda' -delete
# Only what the training sets: no settings of the caller's own jobs, no redirected count files.
while read -r var; do unset "$var"; done < <(env | sed -n 's/^\(LOCKSTEP_[A-Z0-9_]*\)=.*/\1/p')
unset GCOV_PREFIX GCOV_PREFIX_STRIP
export OMPI_MCA_btl=self LOCKSTEP_TRACE_DIR=$work/trace
# Each process on one CPU, with the address space not randomized: a thread that moves to another CPU
# between a call's entry and its return takes the clock's other branch (session.cc, elapsed_us), and
# the tables that probe by address take other paths with other addresses; whether they did during the
# training decided whether GCC split cold parts off, so two builds of the same sources got two layouts
# of the record path (with the scripts' names below, every build gets one: docs/tracer.md, "One
# layout for every build"). Without taskset or setarch, or where they may not act, the processes run
# as they are.
pin=()
cpu=$(taskset -pc $$ 2>/dev/null | sed -n 's/.*: *\([0-9]*\).*/\1/p')
[[ -n $cpu ]] && taskset -c "$cpu" true 2>/dev/null && pin=(taskset -c "$cpu")
setarch -R true 2>/dev/null && pin+=(setarch -R)
run() {  # run RING COMMAND...: one traced process, at most 30 s
  rm -rf "$work/trace"
  LOCKSTEP_TRACE_RING=$1 LD_PRELOAD=$lib timeout 30 "${pin[@]}" "${@:2}" >/dev/null 2>"$work/err" && return
  echo "lockstep: the tracer's training run failed (${*:2}); building it without profile feedback:" >&2
  head -5 "$work/err" >&2
  return 1
}
# The paths most jobs spend their calls on. MPI_Sendrecv, the MPI_Test path, annotations and the
# runtime's collectives are left out (built as without feedback): trained too, they made the Python
# calls or MPI_Sendrecv itself slower (docs/tracer.md, "The record path's layout").
ok=1
python_ok=0
[[ -n $python && -n $script && -n $mpi4py_script ]] && "$python" -c 'import mpi4py.MPI' >/dev/null 2>&1 &&
  python_ok=1
# A Python function's call sites get their addresses from a hash of its file's name (python.cc,
# code_base), and the record path's counts follow those addresses (one branch of session.cc ran 60,050
# or 200,050 times by the checkout's path): each script is compiled under its base name, not its path,
# so that a build in another directory trains on the same addresses.
named=(-c 'import sys; p = sys.argv[1]; sys.argv = sys.argv[1:]
exec(compile(open(p).read(), p.rsplit("/", 1)[-1], "exec"), {"__name__": "__main__"})')
for ring in 65536 0; do
  [[ $python_ok == 0 ]] || run "$ring" "$python" "${named[@]}" "$script" 3000 10 || ok=0
  [[ $python_ok == 0 ]] || run "$ring" "$python" "${named[@]}" "$mpi4py_script" 20000 || ok=0
  for path in allreduce iallreduce_wait send_recv isend_irecv_waitall; do
    run "$ring" "$loop" "$path" 20000 3 || ok=0
  done
done
if [[ $ok == 1 ]]; then
  find "$from" -name '*.gcda' -exec cp {} "$to/" \;
else
  find "$from" -name '*.gcda' -delete
fi
touch "$stamp"
