#!/bin/sh
# test_same_output.sh - nothing changes what the program sees: each case of
# the failure catalogue, run as a multi-rank job on the stand-in with and
# without the shim, prints the same stdout and ends with the same exit
# status (ranks print concurrently, so lines are compared sorted).
#
# usage: test_same_output.sh NSP_LAUNCH NSP_CASES LIBNCCLSPY
set -u
launch=$1 cases=$2 shim=$3
tmp=$(mktemp -d /tmp/nsp-same-XXXXXX) || exit 2
trap 'rm -rf "$tmp"' EXIT
export NSP_STANDIN_TIMEOUT_MS=1000
n=0 failed=0
for spec in c01:2 c03:4 c05:2 c07:4 c08:2 c09:4 c10:2 c10:4; do
  case=${spec%:*} ranks=${spec#*:}
  "$launch" -n "$ranks" -t 120 -- "$cases" "$case" >"$tmp/without" 2>/dev/null
  st0=$?
  "$launch" -n "$ranks" -t 120 -e "LD_PRELOAD=$shim" -e "NCCLSPY_DIR=$tmp/trace" -- \
    "$cases" "$case" >"$tmp/with" 2>"$tmp/stderr"
  st1=$?
  sort "$tmp/without" >"$tmp/without.s"
  sort "$tmp/with" >"$tmp/with.s"
  n=$((n + 1))
  if [ "$st0" = "$st1" ] && cmp -s "$tmp/without.s" "$tmp/with.s" && [ -s "$tmp/with.s" ] &&
     ! grep -q '^ncclspy:' "$tmp/stderr"; then
    echo "ok $n - $case on $ranks ranks: same stdout ($(wc -l <"$tmp/with.s") lines) and exit status ($st1) with the shim, no warning"
  else
    echo "not ok $n - $case on $ranks ranks: exit status $st0 without the shim, $st1 with it"
    diff "$tmp/without.s" "$tmp/with.s" | sed 's/^/# /'
    sed 's/^/# stderr: /' "$tmp/stderr" | grep ncclspy
    failed=1
  fi
  rm -rf "$tmp/trace"
done
echo "1..$n"
exit $failed
