#!/bin/bash
# test_watch.sh - `ncclspy watch DIR` (analyzer/cli/nsp_watch.c) on jobs of
# the CPU stand-in while they run, and the progress line of `analyze`
# (analyzer/cli/nsp_progress.c): a healthy job gives no finding and no
# "ended" claim while it runs, then a clean final report; a hang is
# reported while the job still hangs, naming the rank that did not
# arrive; Ctrl-C ends with the last report; status line and progress only
# on a terminal.  TAP.
#   test_watch.sh NCCLSPY NSP_LAUNCH NSP_CASES LIBNCCLSPY
set -u
ncclspy=$(readlink -f "$1") launch=$(readlink -f "$2") cases=$(readlink -f "$3") shim=$(readlink -f "$4")
pty=$(dirname "$(readlink -f "$0")")/nsp_pty.py
work=$(mktemp -d /tmp/nsp-watch-XXXXXX)
jobs_started=""
cleanup() {
  for p in $jobs_started; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
echo "1..20"

# A job of the stand-in under the shim, in the background: $job_pid.
#   start_job DIR CASE [VAR=VALUE...]
start_job() {
  local dir=$1 case=$2
  shift 2
  env NSP_UID_FILE="$work/uid-$dir" NCCLSPY_DIR="$work/$dir" LD_PRELOAD="$shim" "$@" \
    "$launch" -n 2 -t 60 -- "$cases" "$case" >"$dir.job.out" 2>"$dir.job.err" &
  job_pid=$!
  jobs_started="$jobs_started $job_pid"
}
# Waits up to $2 seconds for file $1 to hold the text $3.
wait_for() {
  local i
  for i in $(seq 1 $(($2 * 10))); do
    grep -q -- "$3" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

"$ncclspy" watch >/dev/null 2>err1
rc=$?
[ $rc = 2 ] && grep -q "watch needs the job's trace directory" err1 &&
  "$ncclspy" watch --interval 0 d 2>err1b >/dev/null; rc2=$?
[ $rc = 2 ] && [ $rc2 = 2 ] && grep -q -- "--interval takes seconds" err1b &&
  "$ncclspy" help watch | grep -q -- "--hang-after S"
ok $? "usage: no DIR and --interval 0 are usage errors (2; got $rc, $rc2); help watch"

# A healthy job, 4 s of all-reduces 10 ms apart, watched twice at once:
# into a file, and on a terminal.
start_job live live NSP_LIVE_S=4
"$ncclspy" watch --interval 0.3 --hang-after 1 live >w1.out 2>w1.err &
w1=$!
python3 "$pty" w1.tty -- "$ncclspy" watch --interval 0.3 --hang-after 1 live &
w1t=$!
sleep 2.5
cp w1.out w1.during
kill -0 $job_pid 2>/dev/null
running=$?
ok $running "the healthy job is still running 2.5 s in (what watch printed so far is of the run)"
grep -q "^ncclspy watch: +[0-9]*s 2 ranks; comm [0-9a-f]* seq [0-9]" w1.during &&
  ! grep -E -q "a finding|exited|ended|crashed|killed|stopped|final report" w1.during
ok $? "healthy, while it runs: status lines with 2 ranks and their seq; no finding, no rank said to have ended"
wait $job_pid
jrc=$?
wait $w1
rc=$?
wait $w1t
rct=$?
[ $jrc = 0 ] && [ $rc = 0 ] && grep -q "final report (every process has ended)" w1.out &&
  grep -q "^No problems found in 2 traces" w1.out && ! grep -q "a finding while the job runs" w1.out
ok $? "healthy, at the end: the final report, no problem, exit 0 (job $jrc, watch $rc)"
! grep -q $'\r' w1.out && ! grep -q $'\033' w1.out
ok $? "not a terminal: no carriage return or escape sequence in watch's output"
[ $rct = 0 ] && grep -q $'\r+[0-9]*s 2 ranks; comm [0-9a-f]* seq [0-9]*[^\r]*\033\[K' w1.tty &&
  grep -q $'\r\033\[Kncclspy watch: .*final report' w1.tty
ok $? "on a terminal: the status line drawn in place (\\r, clear to the end of the line), cleared before the final report"

# A hang: rank 1 never arrives at all-reduce #3, rank 0 waits inside it
# until killed (the stand-in's own timeout is a minute away).
start_job hang hang NSP_STANDIN_TIMEOUT_MS=60000 NCCLSPY_FLUSH_MS=200
"$ncclspy" watch --interval 0.3 --hang-after 1 hang >w2.out 2>w2.err &
w2=$!
wait_for w2.out 20 "(hang)"
found=$?
kill -0 $job_pid 2>/dev/null
alive=$?
cp w2.out w2.during
[ $found = 0 ] && [ $alive = 0 ]
ok $? "hang: the report appeared while the job still hangs"
grep -q "^ncclspy watch: .*: a finding while the job runs:" w2.during &&
  grep -q "^seq 3 all-reduce on communicator [0-9a-f]* did not complete: rank 1 did not arrive; rank 0 waits inside it (hang)" w2.during &&
  grep -q "rank 1 is still running" w2.during && ! grep -q "final report" w2.during
ok $? "hang: the report names rank 1 as the rank that did not arrive, both still running"
sleep 1
[ "$(grep -c "a finding while the job runs" w2.out)" = 1 ]
ok $? "hang: the report is printed once while the finding stays the same"
kill -TERM $job_pid
wait $job_pid
wait $w2
rc=$?
[ $rc = 1 ] && grep -q "final report (every process has ended)" w2.out &&
  [ "$(sed -n '/final report/,$p' w2.out | grep -c "rank 1 did not arrive; rank 0 waits inside it (hang)")" = 1 ] &&
  sed -n '/final report/,$p' w2.out | grep -q "rank 1 ended without a clean exit"
ok $? "hang, after the job was killed: the final report with the hang, exit 1 (got $rc)"

# Ctrl-C: the last report, the processes still running.
start_job intr hang NSP_STANDIN_TIMEOUT_MS=60000 NCCLSPY_FLUSH_MS=200
"$ncclspy" watch --interval 0.3 intr >w3.out 2>w3.err &
w3=$!
wait_for w3.out 20 "2 ranks"
kill -INT $w3
wait $w3
rc=$?
kill -TERM $job_pid
wait $job_pid
# 0, or 3 if the last read caught a frame half written (a cut file).
{ [ $rc = 0 ] || [ $rc = 3 ]; } && grep -q "final report (stopped while processes are still running)" w3.out &&
  grep -q "still running" w3.out && ! grep -q "(hang)" w3.out
ok $? "Ctrl-C: the last report (default --hang-after 10: no hang yet, ranks still running), exit 0 or 3 (got $rc)"

# Progress of analyze: only on a terminal, only after a second, cleared
# before the report.  NSP_TEST_PROGRESS_DELAY_MS makes reading 2 traces
# last 1.4 s.
NSP_TEST_PROGRESS_DELAY_MS=700 "$ncclspy" analyze live >p1.out 2>p1.err
rc=$?
[ $rc = 0 ] && [ ! -s p1.err ] && grep -q "^No problems found" p1.out
ok $? "analyze, standard error not a terminal: no progress bytes (stderr empty; exit $rc)"
NSP_TEST_PROGRESS_DELAY_MS=700 python3 "$pty" --stderr-only p2.tty -- "$ncclspy" analyze live
rc=$?
[ $rc = 0 ] && grep -q $'\rncclspy analyze: reading traces: 2 of 2 files, [0-9.]*[kM]* records, [0-9.]*[kM]* records/s\033\[K' p2.tty &&
  [ "$(tail -c 4 p2.tty | od -An -c | tr -d ' \n')" = '\r033[K' ] && grep -q "^No problems found" p2.tty.stdout
ok $? "analyze on a terminal, 1.4 s: the progress line (files, records, records/s), cleared at the end"
# Four files (two are copies, read and set aside): past a second, the time
# left at the rate of bytes read so far.
mkdir -p four && cp live/*.ncclspy four/ && for f in live/*.ncclspy; do cp "$f" "four/zz-${f##*/}"; done
NSP_TEST_PROGRESS_DELAY_MS=450 python3 "$pty" --stderr-only p7.tty -- "$ncclspy" analyze four
grep -q $'reading traces: 3 of 4 files, about [0-9]*s left, [0-9.]*[kM]* records, [0-9.]*[kM]* records/s\033\[K' p7.tty
ok $? "analyze on a terminal, 4 files: the time left (before the counts: an 80-column terminal shows it), at the rate of bytes since the first file"
python3 "$pty" --stderr-only p3.tty -- "$ncclspy" analyze live
[ ! -s p3.tty ]
ok $? "analyze on a terminal, under a second: no progress line"
NSP_TEST_PROGRESS_DELAY_MS=700 python3 "$pty" --stderr-only p4.tty -- "$ncclspy" perf live &&
  grep -q $'\rncclspy perf: reading traces again: 2 of 2 files' p4.tty
ok $? "perf on a terminal: the progress of its second reading"
NSP_TEST_PROGRESS_DELAY_MS=700 python3 "$pty" --stderr-only p5.tty -- "$ncclspy" export --perfetto -o p5.json live &&
  grep -q $'\rncclspy export: reading traces again: 2 of 2 files' p5.tty &&
  [ "$(tail -c 4 p5.tty | od -An -c | tr -d ' \n')" = '\r033[K' ] && [ -s p5.json ]
ok $? "export on a terminal: the progress of its readings, cleared at the end"
NSP_TEST_PROGRESS_DELAY_MS=700 "$ncclspy" export --perfetto -o p6.json live 2>p6.err
[ $? = 0 ] && [ ! -s p6.err ] && [ -s p6.json ]
ok $? "export, standard error not a terminal: no progress bytes"
# A directory whose processes had all ended: the report, and that watch
# saw no process running (a job started into it later is not watched).
timeout 20 "$ncclspy" watch --interval 0.2 live >w9.out 2>&1
rc=$?
[ $rc = 0 ] && grep -q "had ended before watch began" w9.out && grep -q "^No problems found" w9.out &&
  ! grep -q "while the job runs" w9.out
ok $? "watch on a finished job: its report, said to be of processes ended before watch began (exit $rc)"
timeout 20 "$ncclspy" watch --interval 0.2 hang >w10.out 2>&1
rc=$?
[ $rc = 1 ] && [ "$(grep -c "^ncclspy report:" w10.out)" = 1 ] && ! grep -q "while the job runs" w10.out &&
  grep -q "(hang)" w10.out
ok $? "watch on a finished job with a finding: the final report once, never 'while the job runs' (exit $rc)"
exit $failed
