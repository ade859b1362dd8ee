#!/bin/sh
# The ncclspy demo: builds, runs a 4-rank job on the CPU stand-in for NCCL
# under the shim, in which ranks 0 and 2 all-reduce bfloat16 and ranks 1
# and 3 float32 (case c02), then prints the analysis of the traces.
set -eu
cd "$(dirname "$0")"
. ./tools-deps.sh
nsp_deps || exit 2
build=${NSP_BUILD_DIR:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
meson compile -C "$build" >/dev/null
ncclspy=$build/analyzer/ncclspy
trace=${NSP_DEMO_DIR:-demo-trace}
rm -rf "$trace"
echo "== ncclspy run -- a 4-rank job (ranks wait 3 s for data that never comes) =="
# ncclspy run preloads the shim it finds beside itself, writes the traces
# into -d DIR, passes the job's exit status on and prints the analysis.
set +e
NSP_STANDIN_TIMEOUT_MS=3000 NSP_UID_FILE=$trace.uid \
  "$ncclspy" run -d "$trace" -- "$build/tests/cases/nsp_launch" -n 4 -t 60 -- "$build/tests/cases/nsp_cases" c02
rc=$?
rm -f "$trace.uid"
echo
echo "== the same job as a page and as a timeline =="
"$ncclspy" analyze --html -o "$trace.html" "$trace"
"$ncclspy" export --perfetto -o "$trace.perfetto.json" "$trace" || rc=2
echo "$trace.html: the report with a swimlane of every rank's calls (open it in a browser)"
echo "$trace.perfetto.json: the timeline (drag it into ui.perfetto.dev or chrome://tracing)"
# The job's ranks fail as the demo intends (exit 1); anything else is not.
[ $rc -eq 1 ] && exit 0
exit $rc
