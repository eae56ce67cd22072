# Sourced by the Python test runners. mpi4py_job_setup: skip (exit 77) where the interpreter has no mpi4py, and start from
# an empty work directory.
#   mpi4py_job_setup PYTHON WORK
mpi4py_job_setup() {
  if ! "$1" -c 'import mpi4py.MPI' 2>/dev/null; then
    echo "skipped: $1 has no mpi4py (Debian: python3-mpi4py)"
    exit 77
  fi
  rm -rf "$2"
  mkdir -p "$2"
}

# Whether the tracer, built with the frame layout, must read the thread state in place here
# (python_frame.c: x86-64 with glibc).
#   in_place_expected
in_place_expected() {
  [[ $(uname -m) == x86_64 ]] && ldd --version 2>&1 | grep -qi "gnu libc\|glibc"
}
