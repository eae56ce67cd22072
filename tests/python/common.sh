# Sourced by the mpi4py test runners: skip (exit 77) where the interpreter has no mpi4py, and start from
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
