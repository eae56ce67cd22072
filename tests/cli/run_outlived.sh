#!/usr/bin/env bash
# `lockstep run` returns only once every traced process of the job has ended, as Open MPI's ranks (each
# in a process group of its own) may outlive the launcher: a launcher that leaves a traced process
# behind, in a session of its own, is waited for; one stopped at --timeout has its leftover killed.
# usage: run_outlived.sh LOCKSTEP OUTLIVE_CHILD
set -uo pipefail
lockstep=$1 child=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Running, not a zombie waiting for whoever adopted it to reap it.
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$(cat "$1")/stat" 2> /dev/null | cut -d' ' -f1)
  [ -n "$state" ] && [ "$state" != Z ]
}
wait_for() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# The launcher starts the child and exits at once; the child lives 2 s more.
cat > "$tmp/launch.sh" <<SH
#!/bin/sh
setsid "$child" "$tmp/pid1" 2 &
for _ in \$(seq 200); do [ -s "$tmp/pid1" ] && exit 0; sleep 0.05; done
exit 1
SH
chmod +x "$tmp/launch.sh"
"$lockstep" run -o "$tmp/t1" --grace 10 -- "$tmp/launch.sh" > "$tmp/run1.log" 2>&1
rc=$?
cat "$tmp/run1.log"
[ "$rc" = 0 ] || fail "run exited $rc"
wait_for "$tmp/pid1" || fail "the child never started"
alive "$tmp/pid1" && fail "run returned while the traced child was still running"
grep -q "still running" "$tmp/run1.log" && fail "a warning for a child that ended within the grace time"

# A launcher stopped at --timeout, whose child ignores SIGTERM and would live a minute. The launcher
# waits until the child has its trace before it waits for good: a process stopped before it traced
# anything is not one run can know of.
cat > "$tmp/launch2.sh" <<SH
#!/bin/sh
setsid "$child" "$tmp/pid2" 60 ignore-term &
for _ in \$(seq 200); do [ -s "$tmp/pid2" ] && break; sleep 0.05; done
sleep 60
SH
chmod +x "$tmp/launch2.sh"
"$lockstep" run -o "$tmp/t2" --timeout 4 --grace 1 -- "$tmp/launch2.sh" > "$tmp/run2.log" 2>&1
rc=$?
cat "$tmp/run2.log"
[ "$rc" = 124 ] || fail "run of a job stopped at --timeout exited $rc, want 124"
wait_for "$tmp/pid2" || fail "the second child never started"
alive "$tmp/pid2" && { kill -9 "$(cat "$tmp/pid2")"; fail "the stopped job's leftover process is still running"; }
grep -q "1 traced process(es) outlived the stopped launcher (pid $(cat "$tmp/pid2")): SIGKILL" "$tmp/run2.log" ||
  fail "run did not say which process it killed"
# A trace file whose name gives the pid of a live process that does not write it (a pid reused since,
# or a file copied in): that process is not one of the job's and is not waited for.
sleep 30 &
stranger=$!
mkdir -p "$tmp/t3"
cat > "$tmp/launch3.sh" <<SH
#!/bin/sh
: > "$tmp/t3/rank-0.elsewhere.$stranger.lstrace"
SH
chmod +x "$tmp/launch3.sh"
"$lockstep" run -o "$tmp/t3" --grace 10 -- "$tmp/launch3.sh" > "$tmp/run3.log" 2>&1
rc=$?
kill "$stranger" 2> /dev/null
cat "$tmp/run3.log"
[ "$rc" = 0 ] || fail "run of a launcher that left a stranger's file exited $rc"
grep -q "still running" "$tmp/run3.log" && fail "run took a process that does not write its trace for one of the job's"
echo "PASS"
