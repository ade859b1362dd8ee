#!/bin/sh
# Runs every test of ncclspy: installs what is missing, builds with
# warnings as errors, runs `meson test`, and ends with one line
# "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")"
. ./tools-deps.sh
nsp_deps test || exit 2
build=${NSP_BUILD_DIR:-build-test}
if [ ! -d "$build" ]; then
  meson setup "$build" -Dwerror=true -Dtests=enabled || exit 2
fi
meson compile -C "$build" || exit 2
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
rc=$?
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): passed += 1
    elif r == "SKIP": skipped += 1
    else: failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
