#!/bin/sh
# The shim exports exactly NCCL 2.28's public entry points (the table in
# common/nsp_nccl_apis.h) and the loader's functions it interposes (dlsym
# and dlvsym, shim/nsp_dlsym.c, where it can: EXTRA), nothing of its own.
# usage: test_exports.sh LIBNCCLSPY API_LIST_PROGRAM [EXTRA...]
set -eu
lib=$1 list=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" > "$tmp/nm"
"$list" > "$tmp/list"
for extra in "$@"; do echo "$extra" >> "$tmp/list"; done
awk '{print $3}' "$tmp/nm" | sort > "$tmp/exported"
sort "$tmp/list" > "$tmp/table"
echo "1..2"
if diff -u "$tmp/table" "$tmp/exported" > "$tmp/diff"; then
  echo "ok 1 - exported symbols equal the table and ${*:-nothing else} ($(wc -l < "$tmp/table") names)"
else
  sed 's/^/# /' "$tmp/diff"
  echo "not ok 1 - exported symbols differ from the table"
fi
n=$("$list" | wc -l)
if [ "$n" -eq 41 ]; then
  echo "ok 2 - the table lists NCCL 2.28's 41 entry points"
else
  echo "not ok 2 - the table lists $n entry points, NCCL 2.28's nccl.h has 41"
fi
