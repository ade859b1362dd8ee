#!/bin/bash
# test_man.sh - the man pages ncclspy(1) and libncclspy(7), as built from
# docs/*.scd by scdoc: each renders without a warning (man -l, and groff),
# and no line of their source starts with '.'; ncclspy(1) has a
# "ncclspy VERB" entry for every command of nsp_verbs[]
# (analyzer/cli/ncclspy_main.c) and names every option that `ncclspy help
# VERB` lists; libncclspy(7) names every setting of shim/nsp_setting.h and
# every environment variable the shim records (shim/nsp_env.c).  TAP.
#   test_man.sh NCCLSPY TEST_SETTINGS SOURCE_ROOT NCCLSPY.1 LIBNCCLSPY.7
set -u
ncclspy=$1 settings=$2 root=$3 man1=$4 man7=$5
tmp=$(mktemp -d /tmp/nsp-man-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C.UTF-8
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
echo "1..10"

# A page as text, 200 columns, no word broken, hyphens as ASCII.
render() { groff -man -Tutf8 -P-cbou -rLL=200n -rHY=0 "$1" 2>/dev/null | sed 's/\xe2\x80\x90/-/g; s/\xe2\x88\x92/-/g'; }
render "$man1" >"$tmp/1.txt"
render "$man7" >"$tmp/7.txt"

for page in "$man1" "$man7"; do
  name=${page##*/}
  warn=$( { groff -man -Tutf8 -ww -z "$page"; } 2>&1)
  if command -v man >/dev/null; then
    warn="$warn$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)"
  fi
  [ -z "$warn" ]
  ok $? "$name renders without warnings (groff -ww$(command -v man >/dev/null && echo ', man --warnings -l'))${warn:+: $warn}"
  # scdoc 1.11 drops the '.' that starts a line of text ("./app" comes
  # out as "/app"), with no warning from anyone: the source has none.
  scd=$root/docs/$name.scd
  bad=$(grep -nE "^[[:space:]]*\." "$scd" | head -3)
  [ -f "$scd" ] && [ -z "$bad" ]
  ok $? "docs/$name.scd: no line of text starts with '.' (scdoc would drop it)${bad:+: $bad}"
done

missing=""
for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
  grep -qx "$s" "$tmp/1.txt" || missing="$missing '$s'"
done
for s in NAME SYNOPSIS DESCRIPTION SETTINGS "ENVIRONMENT RECORDED" "WHAT IT NEVER DOES" FILES "SEE ALSO"; do
  grep -qx "$s" "$tmp/7.txt" || missing="$missing '$s' (7)"
done
[ -z "$missing" ]
ok $? "the pages have their sections${missing:+; missing:$missing}"

# The commands: the rows of nsp_verbs[].
verbs=$(sed -n '/nsp_verbs\[\] = {/,/^};/p' "$root/analyzer/cli/ncclspy_main.c" | grep -oE '^ *\{"[a-z-]+"' | tr -d ' {"')
missing=""
for v in $verbs; do
  grep -qE "^ {7}ncclspy $v( |$)" "$tmp/1.txt" || missing="$missing $v"
done
[ -n "$verbs" ] && [ -z "$missing" ]
ok $? "ncclspy(1) has an entry for each of the $(echo $verbs | wc -w) commands of nsp_verbs[] ($(echo $verbs))${missing:+; missing:$missing}"

# The options each command's help names, long and short.
missing=""
for v in $verbs; do
  [ "$v" = help ] && continue
  opts=$("$ncclspy" help "$v" | grep -oE '(^|[ ,]| \[)--?[a-zA-Z][a-z-]*' | sed 's/^ *\[*,*//' | sort -u)
  for o in $opts; do
    grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$tmp/1.txt" || missing="$missing $v:$o"
  done
done
opts=$("$ncclspy" --help | sed -n '/^options:/,$p' | grep -oE -- '--?[a-zA-Z][a-z-]*' | sort -u)
for o in $opts; do
  grep -qE -- "^ {7}(-[a-zA-Z], )?$o([^a-z-]|$)" "$tmp/1.txt" || missing="$missing ncclspy:$o"
done
[ -z "$missing" ]
ok $? "ncclspy(1) names every option of \`ncclspy help COMMAND\` and \`ncclspy --help\`${missing:+; missing:$missing}"

# The settings, from the table.
missing=""
for s in $("$settings" names); do
  grep -qE "^ {7}$s( |\$)" "$tmp/7.txt" || missing="$missing $s"
done
[ -z "$missing" ]
ok $? "libncclspy(7) has an entry for each of the $("$settings" names | wc -l) settings of shim/nsp_setting.h${missing:+; missing:$missing}"

# The environment variables the shim records, and the name parts it never
# records: the string lists of nsp_env_allowed(), the launchers' variables
# (common/nsp_launchers.h) and LD_PRELOAD.
names=$({ sed -n '/^int nsp_env_allowed/,/^}/p' "$root/shim/nsp_env.c" | sed -n '/static const char/,/};/p'
          grep -E '^ *X\("' "$root/common/nsp_launchers.h" | cut -d, -f2; echo '"LD_PRELOAD"'; } |
  grep -oE '"[A-Za-z_]+"' | tr -d '"')
missing=""
for e in $names; do
  grep -qE "(^|[^A-Za-z_])$e([^A-Za-z_]|$)" "$tmp/7.txt" || missing="$missing $e"
done
[ "$(echo $names | wc -w)" -gt 30 ] && [ -z "$missing" ]
ok $? "libncclspy(7) lists the $(echo $names | wc -w) names and name parts of the shim's environment allowlist${missing:+; missing:$missing}"

# ncclspy(1)'s exit statuses: those `ncclspy help analyze` gives.
codes=$("$ncclspy" help analyze | sed -n '/^exit status:/,$p' | grep -oE '(^|, |: )[0-9]+ ' | grep -oE '[0-9]+' | sort -u | tr '\n' ' ')
missing=""
for c in $codes; do
  sed -n '/^EXIT STATUS$/,/^ENVIRONMENT$/p' "$tmp/1.txt" | grep -qE "^ +$c\$" || missing="$missing $c"
done
[ -n "$codes" ] && [ -z "$missing" ]
ok $? "ncclspy(1)'s EXIT STATUS has analyze's statuses ($codes)${missing:+; missing:$missing}"
exit $failed
