#!/bin/sh
# README's settings table is the table of shim/nsp_setting.h, rendered:
# the same variables in the same order, with the same defaults, ranges and
# meanings.  And every NCCLSPY_* variable the code names is a row of it.
# usage: test_settings_doc.sh README TEST_SETTINGS SOURCE_ROOT [--update]
# With --update, README's block is rewritten from the table instead.
set -eu
readme=$1 prog=$2 root=$3
begin='<!-- settings: made from shim/nsp_setting.h, checked by tests/shim/test_settings_doc.sh -->'
end='<!-- /settings -->'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prog" doc > "$tmp/table"
if [ "${4:-}" = --update ]; then
  awk -v b="$begin" -v e="$end" -v t="$tmp/table" '
    $0 == e { inside = 0 }
    !inside { print }
    $0 == b { inside = 1; while ((getline line < t) > 0) print line }' "$readme" > "$tmp/readme"
  cp "$tmp/readme" "$readme"
  exit 0
fi
bad=0
echo "1..3"
if grep -qxF "$begin" "$readme" && grep -qxF "$end" "$readme"; then
  echo "ok 1 - README marks its settings table"
else
  echo "not ok 1 - README lacks the lines '$begin' and '$end' around its settings table"
  bad=1
fi
awk -v b="$begin" -v e="$end" '$0 == e { inside = 0 } inside { print } $0 == b { inside = 1 }' \
  "$readme" > "$tmp/readme"
if diff -u "$tmp/readme" "$tmp/table" > "$tmp/diff"; then
  echo "ok 2 - README's settings table is the table's $(($(wc -l < "$tmp/table") - 2)) rows"
else
  sed 's/^/# /' "$tmp/diff"
  echo "not ok 2 - README's settings table differs from shim/nsp_setting.h (after changing the" \
       "table, run: $0 $readme $prog $root --update)"
  bad=1
fi
"$prog" names | sort > "$tmp/names"
find "$root/shim" "$root/common" "$root/analyzer" -name '*.[ch]' -exec grep -ohE 'NCCLSPY_[A-Z_]*[A-Z]' {} + |
  sort -u > "$tmp/used"
missing=$(comm -23 "$tmp/used" "$tmp/names" | tr '\n' ' ')
if [ -z "$missing" ]; then
  echo "ok 3 - every NCCLSPY_ variable the code names is in the table ($(wc -l < "$tmp/used") named)"
else
  echo "not ok 3 - named in the code but not in shim/nsp_setting.h: $missing"
  bad=1
fi
exit $bad
