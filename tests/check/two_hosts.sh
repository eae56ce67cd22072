#!/usr/bin/env bash
# Node-local trace directories: one job's files split over two directories standing for two hosts are
# checked (and diffed) together, by listing both or by a glob, with the same result as one directory;
# files of two jobs, or a pattern that matches nothing, are refused with exit 2 and a one-line reason.
# usage: two_hosts.sh LOCKSTEP WRITE_JOB OUTDIR
set -uo pipefail
lockstep=$1 write_job=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
"$write_job" "$out/all" bad || fail "write_job"
mkdir -p "$out/host-a" "$out/host-b"
files=("$out"/all/*.lstrace)
[ "${#files[@]}" = 4 ] || fail "expected 4 trace files, got ${#files[@]}"
cp "${files[0]}" "${files[1]}" "$out/host-a/" && cp "${files[2]}" "${files[3]}" "$out/host-b/"

"$lockstep" check --no-symbolize --format json -o "$out/one.json" "$out/all"
[ $? = 1 ] || fail "one directory: expected exit 1"
"$lockstep" check --no-symbolize --format json -o "$out/two.json" "$out/host-a" "$out/host-b"
[ $? = 1 ] || fail "two directories: expected exit 1"
"$lockstep" check --no-symbolize --format json -o "$out/glob.json" "$out/host-*"
[ $? = 1 ] || fail "glob: expected exit 1"
python3 - "$out" <<'PY' || exit 1
import json, sys
out = sys.argv[1]
def key(p):
    r = json.load(open(f"{out}/{p}.json"))
    return r["summary"]["ranks"], [(f["kind"], f["seq"], f["culprits"]) for f in r["findings"]]
one, two, glob = key("one"), key("two"), key("glob")
assert one[0] == 4 and one[1], one
assert one == two == glob, (one, two, glob)
print("same findings from one directory, two directories and a glob:", one)
PY
# `check --mpi` where each process sees other files: mpirun's MPMD form gives each process its own
# directory, as node-local directories would on two nodes. Processes 0 and 2 see host-a (its two files are
# shared between them), process 1 host-b. Then three processes on one shared directory: the same JSON,
# byte for byte, as the check in one process.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=("${MPIRUN:-mpirun}")
read -r -a flags <<<"${MPIRUN_FLAGS:---oversubscribe}"
each=(check --mpi --no-symbolize)
"${mpi[@]}" "${flags[@]}" -np 1 "$lockstep" "${each[@]}" --format json -o "$out/mpi-local.json" "$out/host-a" : \
  -np 1 "$lockstep" "${each[@]}" "$out/host-b" : -np 1 "$lockstep" "${each[@]}" "$out/host-a" >"$out/mpi-local.log" 2>&1
[ $? = 1 ] || { cat "$out/mpi-local.log"; fail "--mpi, node-local directories: expected exit 1"; }
"${mpi[@]}" "${flags[@]}" -np 3 "$lockstep" "${each[@]}" --format json -o "$out/mpi-shared.json" "$out/all" \
  >"$out/mpi-shared.log" 2>&1
[ $? = 1 ] || { cat "$out/mpi-shared.log"; fail "--mpi, one shared directory: expected exit 1"; }
cmp "$out/one.json" "$out/mpi-shared.json" || fail "--mpi on one shared directory: not the JSON of one process"
# Without mpirun (MPI's singleton start): one process does it all.
"$lockstep" "${each[@]}" --format json -o "$out/mpi-alone.json" "$out/all" >"$out/mpi-alone.log" 2>&1
[ $? = 1 ] || { cat "$out/mpi-alone.log"; fail "--mpi without mpirun: expected exit 1"; }
cmp "$out/one.json" "$out/mpi-alone.json" || fail "--mpi without mpirun: not the JSON of one process"
python3 - "$out" <<'PY' || exit 1
import json, sys
out = sys.argv[1]
def key(p):
    r = json.load(open(f"{out}/{p}.json"))
    return r["summary"], r["findings"], r["hang"] if "hang" in r else None
two, local = key("two"), key("mpi-local")
assert two == local, "--mpi from node-local directories differs from the check of both in one process"
print("--mpi: the same summary, findings and hang report from node-local directories as in one process")
PY
# Special files, each named in a warning by every process that lists them: the warnings of --mpi are
# those of one process, in the same order.
mkdir -p "$out/special" && cp "$out"/all/*.lstrace "$out/special/"
ln -s /etc/hostname "$out/special/zz.lstrace" && ln -s /etc/hostname "$out/special/aa.lstrace" &&
  mkfifo "$out/special/mm.lstrace" || fail "special files"
"$lockstep" check --no-symbolize --format json -o "$out/special-one.json" "$out/special"
"${mpi[@]}" "${flags[@]}" -np 3 "$lockstep" "${each[@]}" --format json -o "$out/special-mpi.json" "$out/special" \
  >"$out/special-mpi.log" 2>&1
cmp "$out/special-one.json" "$out/special-mpi.json" || fail "--mpi: the special files' warnings differ"
grep -c 'not a regular file' "$out/special-mpi.json" | grep -qx 3 || fail "--mpi: not every special file named"
# A process whose directory does not exist (a node where the job ran no rank, or a wrong path): the files
# the others found are checked, the ranks it would have held are missing processes (exit 1), and a
# warning names the process, its host and the reason. No process finding a file is exit 2, naming each.
"${mpi[@]}" "${flags[@]}" -np 1 "$lockstep" "${each[@]}" --format json -o "$out/mpi-missing.json" "$out/host-a" : \
  -np 1 "$lockstep" "${each[@]}" "$out/no-such-dir" >"$out/mpi-missing.log" 2>&1
rc=$?
[ $rc = 1 ] || { cat "$out/mpi-missing.log"; fail "--mpi with a missing directory on process 1: expected exit 1, got $rc"; }
python3 - "$out/mpi-missing.json" "$(hostname)" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["summary"]["ranks"] == 2, r["summary"]
assert r["missing_processes"] == [2, 3], r["missing_processes"]
want = f"process 1 on {sys.argv[2]}: "
assert any(w.startswith(want) and "no-such-dir: No such file or directory" in w for w in r["warnings"]), r["warnings"]
print("--mpi: a process with no directory adds no file and is named in a warning")
PY
msg=$(timeout 60 "${mpi[@]}" "${flags[@]}" -np 2 "$lockstep" "${each[@]}" "$out/no-such-dir" 2>&1)
rc=$?
[ $rc = 2 ] || fail "--mpi with no directory anywhere: expected exit 2, got $rc: $msg"
grep -q "process 0 on $(hostname): .*no-such-dir: No such file or directory; process 1 on " <<<"$msg" ||
  fail "--mpi: the error does not name each process and its directory: $msg"

"$lockstep" diff --no-symbolize "$out/all" "$out/host-a,$out/host-b" >"$out/diff.txt"
[ $? = 0 ] || { cat "$out/diff.txt"; fail "diff of the same run split over two hosts: expected exit 0"; }

# One host's files come from another job: refused.
"$write_job" "$out/other" bad other-job || fail "write_job other"
rm -f "$out"/other/*rank-0* "$out"/other/*rank-1*
msg=$("$lockstep" check --no-symbolize "$out/host-a" "$out/other" 2>&1 >/dev/null)
rc=$?
[ $rc = 2 ] || fail "files of two jobs: expected exit 2, got $rc"
grep -q "files of two jobs" <<<"$msg" || fail "no reason given: $msg"
[ "$(wc -l <<<"$msg")" = 1 ] || fail "expected a one-line error: $msg"
msg=$("$lockstep" check "$out/no-such-host-*" 2>&1 >/dev/null)
[ $? = 2 ] || fail "a pattern matching nothing: expected exit 2"
grep -q "matches no file" <<<"$msg" || fail "no reason given: $msg"
# The same rank in both directories: refused.
cp "${files[0]}" "$out/host-b/"
"$lockstep" check --no-symbolize "$out/host-a" "$out/host-b" >/dev/null 2>&1
[ $? = 2 ] || fail "two files of one rank: expected exit 2"
echo ok
