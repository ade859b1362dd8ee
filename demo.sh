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
shim=$(cd "$build/shim" && pwd)/libncclspy.so
trace=${NSP_DEMO_DIR:-demo-trace}
rm -rf "$trace"
echo "== running 4 ranks under libncclspy.so (ranks wait 3 s for data that never comes) =="
NCCLSPY_DIR=$trace NSP_STANDIN_TIMEOUT_MS=3000 NSP_UID_FILE=$trace.uid \
  "$build/tests/cases/nsp_launch" -n 4 -t 60 -e "LD_PRELOAD=$shim" \
  -- "$build/tests/cases/nsp_cases" c02 || true
rm -f "$trace.uid"
echo
echo "== ncclspy analyze $trace =="
set +e
"$build/analyzer/ncclspy" analyze "$trace"
rc=$?
[ $rc -eq 1 ] && exit 0 # findings, as the demo intends
exit $rc
