#!/bin/bash
# test_run.sh - `ncclspy run` and `ncclspy shim-path` (analyzer/cli/nsp_run.c):
# the shim found next to the command, a job run under it on the CPU
# stand-in with its report on stderr, exit statuses and signals passed
# through, LD_PRELOAD kept, one directory per launcher job, only rank 0
# analysing.  TAP.
#   test_run.sh NCCLSPY NSP_LAUNCH NSP_CASES
set -u
ncclspy=$(readlink -f "$1") launch=$(readlink -f "$2") cases=$(readlink -f "$3")
work=$(mktemp -d /tmp/nsp-run-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
echo "1..16"

shim=$("$ncclspy" shim-path)
[ -f "$shim" ] && [ "${shim##*/}" = libncclspy.so ] && [ "${shim#/}" != "$shim" ]
ok $? "shim-path prints the shim's absolute path ($shim)"

# c01 (rank 0 float16, rank 1 float32) under run: the launcher's status,
# the traces in -d, the report on stderr (stdout stays the job's).
NSP_STANDIN_TIMEOUT_MS=2000 "$ncclspy" run -d job -- "$launch" -n 2 -- "$cases" c01 >out 2>err
rc=$?
[ $rc = 1 ]
ok $? "run ends with the job's exit status (1; got $rc)"
[ "$(ls job/*.ncclspy 2>/dev/null | wc -l)" = 2 ]
ok $? "run -d: both ranks' traces in the directory"
grep -q "^seq 2 all-reduce on communicator .*: rank 0 passed float16 where rank 1 passed float32 (dtype mismatch)" err &&
  ! grep -q "dtype mismatch" out
ok $? "the analysis names c01's dtype mismatch, on stderr only"

"$ncclspy" run --no-analyze -d d2 -- sh -c 'exit 7' 2>err2
rc=$?
[ $rc = 7 ] && ! grep -q "ncclspy analyze" err2
ok $? "--no-analyze: the command's status (7; got $rc), no analysis"

"$ncclspy" run --no-analyze -d d3 -- sh -c 'kill -TERM $$'
rc=$?
[ $rc = 143 ]
ok $? "a command killed by SIGTERM: ncclspy ends by SIGTERM too (status 143; got $rc)"

out=$(LD_PRELOAD=/nonexistent-other.so NCCLSPY_DIR= "$ncclspy" run --no-analyze -d d4 -- sh -c 'echo "$LD_PRELOAD|$NCCLSPY_DIR"' 2>/dev/null)
[ "$out" = "$shim:/nonexistent-other.so|d4" ]
ok $? "LD_PRELOAD keeps the preload already there, after the shim; NCCLSPY_DIR is -d ($out)"

out=$(env -u NCCLSPY_DIR SLURM_JOB_ID=4242 SLURM_PROCID=1 "$ncclspy" run -- sh -c 'echo "$NCCLSPY_DIR"' 2>err5)
[ "$out" = ncclspy-4242 ] && [ -d ncclspy-4242 ] && ! grep -q "ncclspy analyze" err5
ok $? "under srun: every rank writes into ncclspy-<job id>; rank 1 does not analyse ($out)"

"$ncclspy" run --no-analyze -d d6 -- sleep 30 &
pid=$!
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 143 ]
ok $? "SIGTERM sent to ncclspy reaches the command, and ncclspy ends as it did (143; got $rc)"

"$ncclspy" run --no-analyze -d d7 -- /nonexistent-command 2>err7
rc=$?
[ $rc = 127 ] && grep -q "nonexistent-command" err7
ok $? "a command that does not exist: 127 and its name (got $rc)"

# SIGINT sent by a process (kill, timeout -s INT, a supervisor) is passed
# on; from a terminal the command has it already.  (A background job of
# a script starts with SIGINT ignored, which the command inherits: it
# sets the default action itself.)
"$ncclspy" run --no-analyze -d d8 -- python3 -c 'import signal, time
signal.signal(signal.SIGINT, signal.SIG_DFL)
open("d8-ready", "w").close()
time.sleep(30)' &
pid=$!
# Signalled once the command has set its action (not after a fixed time:
# a loaded machine may take longer than that to start python).
for i in $(seq 300); do [ -e d8-ready ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ]
ok $? "SIGINT sent to ncclspy by a process reaches the command (130; got $rc)"

"$ncclspy" run -d d9/sub/job -- /nonexistent-command >out9 2>err9
rc=$?
[ $rc = 127 ] && [ ! -e d9 ] && ! grep -q "analyze" err9
ok $? "a command that never ran: no directory left (nor the parents -d made), no analysis (got $rc; $(tr '\n' ' ' <err9))"

NSP_STANDIN_TIMEOUT_MS=2000 "$ncclspy" run -d deep/er/job -- "$launch" -n 2 -- "$cases" c01 >/dev/null 2>err10
[ "$(ls deep/er/job/*.ncclspy 2>/dev/null | wc -l)" = 2 ]
ok $? "-d makes missing parents, as the shim does with NCCLSPY_DIR"

touch plain
"$ncclspy" run -d plain -- true 2>err11
rc=$?
[ $rc = 2 ] && grep -q "cannot write traces into plain: Not a directory" err11
ok $? "-d naming a file: 2 before the command runs (got $rc: $(cat err11))"

NSP_STANDIN_TIMEOUT_MS=2000 "$ncclspy" run -d deep/er/job -- "$launch" -n 2 -- "$cases" c01 >/dev/null 2>err12
grep -q "deep/er/job already holds traces of an earlier run" err12
ok $? "a directory reused: run says so before the job"
"$ncclspy" run -d "" -- true 2>err13
rc=$?
[ $rc = 2 ] && grep -q -- "-d needs a directory" err13
ok $? "-d with an empty name: a usage error (got $rc)"
exit $failed
