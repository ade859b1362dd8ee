#!/bin/sh
# README's settings table, and the SETTINGS list of the man page
# libncclspy(7) (docs/libncclspy.7.scd), are the table of
# shim/nsp_setting.h, rendered: the same variables in the same order, with
# the same defaults, ranges and meanings.  And every NCCLSPY_* variable the
# code names is a row of it.
# usage: test_settings_doc.sh DOC TEST_SETTINGS SOURCE_ROOT [--update]
# DOC: README.md (`test_settings doc`, Markdown) or a *.scd file
# (`test_settings scd`, scdoc).  With --update, DOC's block is rewritten
# from the table instead.
set -eu
readme=$1 prog=$2 root=$3
case $readme in
  *.scd)
    what="${readme##*/}'s settings list" form=scd
    begin='; settings: made from shim/nsp_setting.h by test_settings scd, checked by tests/shim/test_settings_doc.sh'
    end='; /settings' ;;
  *)
    what="README's settings table" form=doc
    begin='<!-- settings: made from shim/nsp_setting.h, checked by tests/shim/test_settings_doc.sh -->'
    end='<!-- /settings -->' ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prog" $form > "$tmp/table"
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
  echo "ok 1 - ${readme##*/} marks its settings"
else
  echo "not ok 1 - ${readme##*/} lacks the lines '$begin' and '$end' around its settings"
  bad=1
fi
awk -v b="$begin" -v e="$end" '$0 == e { inside = 0 } inside { print } $0 == b { inside = 1 }' \
  "$readme" > "$tmp/readme"
if diff -u "$tmp/readme" "$tmp/table" > "$tmp/diff"; then
  echo "ok 2 - $what is the table's $("$prog" names | wc -l) rows"
else
  sed 's/^/# /' "$tmp/diff"
  echo "not ok 2 - $what differs from shim/nsp_setting.h (after changing the" \
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
