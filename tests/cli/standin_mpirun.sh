# Sourced by the `lockstep run` tests: writes a stand-in `mpirun` into $1 that answers --version with $2
# (Open MPI's answer by default) and otherwise prints the arguments it was given.
standin_mpirun() {
  local version="${2:-mpirun (Open MPI) 4.1.4}"
  cat >"$1/mpirun" <<SH
#!/bin/sh
if [ "\$1" = "--version" ]; then echo "$version"; exit 0; fi
echo "launcher args: \$*"
SH
  chmod +x "$1/mpirun"
}
