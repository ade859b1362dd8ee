#!/bin/sh
# test_cli_links.sh NCCLSPY TRACE_DIR - `-o` never overwrites an input
# trace, whatever name reaches it: a symbolic link or a hard link to one
# of the traces (or to its .ring) is refused with exit 2, and the trace is
# left as it was; a plain new file is written.  TAP.
set -u
ncclspy=$1 src=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/in"
first=$(ls "$tmp/in"/*.ncclspy | head -1)
cp "$first" "$tmp/orig"

n=0 bad=0
check() { # description, command...
  desc=$1; shift
  n=$((n + 1))
  "$@" >/dev/null 2>"$tmp/err"; rc=$?
  if [ $rc -eq 2 ] && cmp -s "$first" "$tmp/orig" && grep -q "would overwrite the input trace" "$tmp/err"; then
    echo "ok $n - $desc"
  else
    echo "not ok $n - $desc (exit $rc; trace $(cmp -s "$first" "$tmp/orig" && echo intact || echo OVERWRITTEN))"
    bad=1
  fi
}
ln -s "$first" "$tmp/sym.txt"
ln "$first" "$tmp/hard.txt"
check "analyze -o SYMLINK to a trace: refused" "$ncclspy" analyze -o "$tmp/sym.txt" "$tmp/in"
check "analyze -o HARDLINK to a trace: refused" "$ncclspy" analyze -o "$tmp/hard.txt" "$tmp/in"
check "perf -o SYMLINK to a trace: refused" "$ncclspy" perf -o "$tmp/sym.txt" "$tmp/in"
check "perf -o HARDLINK to a trace: refused" "$ncclspy" perf -o "$tmp/hard.txt" "$tmp/in"
n=$((n + 1))
"$ncclspy" analyze -o "$tmp/report.txt" "$tmp/in" >/dev/null 2>&1; rc=$?
if [ $rc -le 1 ] && grep -q "ncclspy report" "$tmp/report.txt"; then
  echo "ok $n - analyze -o a new file writes the report (exit $rc)"
else
  echo "not ok $n - analyze -o a new file (exit $rc)"; bad=1
fi
echo "1..$n"
exit $bad
