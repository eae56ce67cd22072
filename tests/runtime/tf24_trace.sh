#!/usr/bin/env bash
# The TF 2.4 example end to end under the tracer: the buggy variant must be reported by
# `lockstep check --format json` as a missing allreduce (or a name mismatch) that blames the overflowing
# rank at the overflowing step, with the example's source line; the fixed variant must check clean,
# with the overflowing step skipped on every rank.
# usage: tf24_trace.sh buggy|order|fixed WORKDIR LOCKSTEP EXAMPLE EXAMPLE_SOURCE MPIRUN [MPIRUN FLAGS...]
set -uo pipefail
mode=$1 work=$2 lockstep=$3 example=$4 source=$5 mpirun=$6
shift 6
np=4 R=2 S=2  # not the example's defaults, so nothing here can pass by accident
export LOCKSTEP_RT_STALL_WARN=2 LOCKSTEP_RT_STALL_ABORT=5 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$work" && mkdir -p "$work"
args=(--overflow-rank "$R" --overflow-step "$S" --steps 6)
case $mode in
  buggy) args+=(--variant=buggy) ;;
  order) args+=(--variant=buggy --matching=order) ;;
  fixed) args+=(--variant=fixed) ;;
esac
"$lockstep" run -o "$work/traces" --timeout 60 -- "$mpirun" "$@" -x LOCKSTEP_RT_STALL_WARN -x LOCKSTEP_RT_STALL_ABORT \
  -np $np "$example" "${args[@]}" > "$work/job.log" 2>&1
run_rc=$?
cat "$work/job.log"
"$lockstep" check --format json "$work/traces" > "$work/check.json"
check_rc=$?
fail() { echo "FAIL: $*"; exit 1; }

if [ "$mode" = fixed ]; then
  [ "$run_rc" = 0 ] || fail "lockstep run exited $run_rc"
  [ "$check_rc" = 0 ] || { cat "$work/check.json"; fail "check exited $check_rc, want 0"; }
  for r in $(seq 0 $((np - 1))); do
    grep -q "rank $r: step $S: gradients not finite: skipping the update" "$work/job.log" || fail "rank $r did not skip step $S"
  done
  echo "tf24 trace test ok: fixed variant clean, step $S skipped on all ranks"
  exit 0
fi

[ "$check_rc" = 1 ] || fail "check exited $check_rc, want 1 (findings)"
# The buggy allreduce's line, read from the source rather than written down here.
line=$(grep -n "skipped on overflow" "$source" | cut -d: -f1)
[ -n "$line" ] || fail "marker line not found in $source"
# Each step submits 4 collectives on the global set (bn/moments and three gradients), so step S's
# gradients are #4S+1 .. #4S+3.
python3 - "$work/check.json" "$R" "$S" "$line" <<'PY' || fail "no finding blames rank $R at step $S, line $line"
import json, sys
report = json.load(open(sys.argv[1]))
rank, step, line = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for f in report["findings"]:
    if f["kind"] not in ("missing_collective", "name_mismatch"):
        continue
    if f["culprits"] != [rank] or f["seq"] // 4 != step:
        continue
    lines = {d["call_site"]["line"] for d in f["detail"] if d.get("present") and d.get("call_site")}
    if line in lines and f["tensor"].startswith("grad/"):
        # Every rank's entry says which step it was in (the example annotates "step N"): step S at the
        # gradient line; a rank that skipped them is already at the next step's first allreduce.
        for d in f["detail"]:
            if not d.get("present") or not d.get("call_site"):
                continue
            want = "step %d" % (step if d["call_site"]["line"] == line else step + 1)
            if d.get("context") != want:
                print("rank %d's context is not %r:" % (d["rank"], want), json.dumps(d))
                sys.exit(1)
        print("finding:", f["kind"], "seq", f["seq"], "tensor", f["tensor"], "culprits", f["culprits"])
        sys.exit(0)
print(json.dumps(report["findings"], indent=1)[:4000])
sys.exit(1)
PY
if [ "$mode" = buggy ]; then
  grep -q "lockstep-rt: stall warning" "$work/job.log" || fail "the stall inspector did not warn"
  grep -q "missing on rank $R" "$work/job.log" || fail "the stall report does not name rank $R"
  [ "$run_rc" != 0 ] || fail "the stalled job exited 0"
  # The runtime stopped the culprit: the report must say so, not that it exited normally.
  python3 - "$work/check.json" "$R" <<'PY' || fail "check does not say that the runtime stopped rank $R"
import json, sys
report = json.load(open(sys.argv[1]))
rank = int(sys.argv[2])
notes = [d.get("note", "") for f in report["findings"] for d in f["detail"] if d["rank"] == rank and not d["present"]]
ok = notes and all(n.startswith("it was stopped by the runtime: stalled") for n in notes)
print("absent-rank notes:", notes)
sys.exit(0 if ok else 1)
PY
fi
echo "tf24 trace test ok: $mode variant blamed rank $R at step $S, line $line"
