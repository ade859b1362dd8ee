#!/bin/bash
# test_export.sh - `ncclspy export --perfetto` (analyzer/cli/nsp_export.c):
# the file of a dtype mismatch (c02) and of a hang killed inside its calls
# (hang) on the CPU stand-in, and of the real 2xH200 straggler
# (tests/data/gpu/c11_straggler), validated against the trace event format
# by check_trace_events.py with the values asserted; the options narrow
# the file; a big job is cut to a window; a file with a flow's end removed
# is refused by the checker.  TAP.
#   test_export.sh NCCLSPY NSP_LAUNCH NSP_CASES CHECKER GPU_DATA_DIR
set -u
ncclspy=$(readlink -f "$1") launch=$(readlink -f "$2") cases=$(readlink -f "$3") check=$(readlink -f "$4")
gpu=$(readlink -f "$5")
work=$(mktemp -d /tmp/nsp-export-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
checks() { python3 "$check" "$@" | sed 's/^/# /'; return "${PIPESTATUS[0]}"; }
echo "1..20"

NSP_STANDIN_TIMEOUT_MS=2000 "$ncclspy" run --no-analyze -d c02 -- "$launch" -n 4 -- "$cases" c02 >/dev/null 2>&1
"$ncclspy" export --perfetto c02 -o c02.json
rc=$?
checks c02.json processes=4 ranks=0-3 "slice:all-reduce seq 1=0,2" "slice:all-reduce seq 1 (error)=1,3" \
  "arg:all-reduce seq 1:dtype=bfloat16@0,2" "arg:all-reduce seq 1 (error):dtype=float32@1,3" \
  finding:dtype-mismatch=0-3 finding:error=1,3 flows=3 instants=6
ok $(( rc || $? )) "c02: valid; the mismatched all-reduce's slices on ranks 0,2 (bfloat16) and 1,3 (float32), one arrow to each other rank, an instant per rank the findings name"

# The hang, killed (SIGKILL after 3 s) while rank 0 waits inside seq 3.
NSP_STANDIN_TIMEOUT_MS=60000 "$ncclspy" run --no-analyze -d hang -- "$launch" -n 2 -t 3 -- "$cases" hang >/dev/null 2>&1
"$ncclspy" export --perfetto hang -o hang.json
rc=$?
checks hang.json processes=2 "slice:all-reduce seq 3 (never returned)=0" "slice:all-reduce seq 2=0,1" \
  finding:hang=0,1 flows=2
ok $(( rc || $? )) "hang: valid; rank 0's seq 3 never returned (drawn to its trace's end), the hang marked on both ranks"

"$ncclspy" export --perfetto "$gpu/c11_straggler" -o c11.json
rc=$?
checks c11.json processes=2 "gpu:all-reduce seq 5 (never completed)=0" "gpu:all-reduce seq 2=0,1" "gpu:all-reduce seq 4=-" "arg:all-reduce seq 4:completed=yes@0,1" \
  "slice:all-reduce seq 5=0" finding:hang=0,1 flows=4 instants=2
ok $(( rc || $? )) "c11 on 2xH200: GPU slices from the timed completions (seq 4 completed untimed: none), rank 0's seq 5 never completed"

# A file that is no trace beside them: left out, and said so on stderr.
cp -r c02 c02junk && echo "not a trace" > c02junk/zz-junk.ncclspy
"$ncclspy" export --perfetto c02junk -o junk.json 2>junk.err && checks junk.json processes=4 &&
  grep -q "^ncclspy export: notes" junk.err && grep -q "zz-junk.ncclspy" junk.err
ok $? "a file that is no trace: the timeline of the others, the note on stderr"

"$ncclspy" export --perfetto --ranks 1 c02 -o r1.json && checks r1.json processes=1 ranks=1 slices=1 finding:dtype-mismatch=1
ok $? "--ranks 1: rank 1's process only"

comm=$(python3 -c 'import json,sys; print(next(e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X")["args"]["comm"][:6])' c02.json)
"$ncclspy" export --perfetto --comm "$comm" c02 -o comm.json && checks comm.json processes=4 slices=4 flows=3
ok $? "--comm $comm (a prefix of the id): its calls"

"$ncclspy" export --perfetto --comm ffffffffffff c02 -o none.json 2>err
[ $? = 2 ] && grep -q "names no communicator" err
ok $? "--comm naming no communicator: exit status 2"

"$ncclspy" export --perfetto --from 2.5s hang -o late.json && checks late.json slices=1 "slice:all-reduce seq 3 (never returned)=0" min_ts=0
ok $? "--from 2.5s: only the call still in flight then"

"$ncclspy" export --perfetto --from 100 hang -o empty.json && checks empty.json processes=2 slices=0 instants=0
ok $? "--from 100 (seconds): no call, the processes still named"

"$ncclspy" export --perfetto --to 1ms c02 -o early.json && checks early.json slices=0 max_ts=1000
ok $? "--to 1ms: nothing after it"

"$ncclspy" export --perfetto -o - c02 >stdout.json && cmp -s stdout.json c02.json &&
  "$ncclspy" export --perfetto c02 >stdout2.json && cmp -s stdout2.json c02.json
ok $? "-o - and no -o: the same file on standard output"

NSP_EXPORT_MAX_RANKS=1 "$ncclspy" export --perfetto "$gpu/c11_straggler" -o big.json 2>err
rc=$?
grep -q "writing only +.* s to +.* s, around the first finding" err && checks big.json processes=2 finding:hang=0,1
ok $(( rc || $? )) "more ranks than the limit and no choice: a window around the first finding, said on stderr"

"$ncclspy" export c02 >/dev/null 2>err
[ $? = 2 ] && grep -q "needs a format" err
ok $? "no --perfetto: usage error (2)"

"$ncclspy" export --perfetto --from 12x c02 >/dev/null 2>err
[ $? = 2 ] && grep -q "takes a time" err
ok $? "--from 12x: usage error (2)"

# The checker refuses a file with a flow's end removed.
python3 - c02.json broken.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
i = next(i for i, e in enumerate(ev) if e["ph"] == "f")
del ev[i]
json.dump(d, open(sys.argv[2], "w"))
PY
out=$(python3 "$check" broken.json)
[ $? = 1 ] && echo "$out" | grep -q "1 start(s), 0 finish(es)"
ok $? "the checker fails a file whose flow has no end ($(echo "$out" | head -1 | cut -c1-80))"

"$ncclspy" export --perfetto --comm "" c02 -o none.json 2>none.err
[ $? = 2 ] && grep -q -- "--comm needs communicator ids" none.err
ok $? "--comm with no id: a usage error, not every communicator"
# Only GPU tracks that hold a slice are named (the CPU stand-in times none).
python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
used = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "X"}
named = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
sys.exit(0 if names and named == used else 1)' c02.json
ok $? "every track named holds a slice, every slice's track is named"

# The native site as the report names it (function and file:line with
# libdw, module+offset without).
want=$("$ncclspy" analyze c02 2>/dev/null | grep -o -m1 "at nsp_cases_allreduce ([^)]*)" | sed 's/^at //')
got=$(python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(sorted({e["args"].get("site", "") for e in ev if e["ph"] == "X"})[0])' c02.json)
if [ -n "$want" ]; then case $got in "nsp_cases_allreduce ("*"${want#nsp_cases_allreduce (}") r=0 ;; *) r=1 ;; esac
else case $got in *nsp_cases+0x*) r=0 ;; *) r=1 ;; esac; fi
ok $r "slices' site: as the report names it (report: ${want:-module+offset}; export: $got)"

# A job too dense for a browser, exported without a choice: the window
# shrinks until about the limit of events fits, inside the job (c10's
# 4 ranks make some 80,000 events; the limit lowered to 2,000 for tests).
NSP_STANDIN_TIMEOUT_MS=3000 "$ncclspy" run --no-analyze -d c10 -- "$launch" -n 4 -- "$cases" c10 >/dev/null 2>&1
NSP_EXPORT_MAX_EVENTS=2000 "$ncclspy" export --perfetto c10 -o dense.json 2>dense.err
nev=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["traceEvents"]))' dense.json 2>/dev/null)
nsl=$(python3 -c 'import json, sys; print(sum(e["ph"] == "X" for e in json.load(open(sys.argv[1]))["traceEvents"]))' dense.json 2>/dev/null)
all=$("$ncclspy" export --perfetto c10 2>/dev/null | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["traceEvents"]))')
[ -n "$nev" ] && [ "$nev" -le 2100 ] && [ "${nsl:-0}" -ge 100 ] && [ "$all" -gt 20000 ] && grep -q "writing only +[0-9]" dense.err &&
  ! grep -q -- "+-" dense.err && python3 "$check" dense.json >/dev/null
ok $? "a dense job: the default window holds about the limit of events, calls among them ($nev of $all, $nsl slices; $(cut -c1-120 dense.err))"
"$ncclspy" export --perfetto --from 500s c02 -o past.json 2>past.err
[ $? = 0 ] && grep -q "no call in what was chosen" past.err
ok $? "a window past the job's end: the file, and a note that it holds no call"
exit $failed
