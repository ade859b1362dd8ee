#!/bin/bash
# test_html.sh - `ncclspy analyze --html` (analyzer/cli/nsp_report_html.c)
# opened in a browser: two jobs on the CPU stand-in (c03, a kind mismatch
# at seq 11 with markup in its trace directory's name and in an
# environment value; hang, killed while rank 0 waits in seq 3 that rank 1
# never calls), each report rendered by headless Chromium (Debian's
# `chromium`): the rendered text says the finding (kind, seq, the ranks of
# each side), the swimlane's highlighted boxes sit on the finding's ranks
# and seq, the markup from the traces stayed text, and the page names
# nothing to fetch.  The screenshots stay as artifacts (their paths are
# printed).  Exit status: 0 pass, 1 fail, 77 skip (no chromium).
#   test_html.sh NCCLSPY NSP_LAUNCH NSP_CASES ARTIFACT_DIR
set -u
ncclspy=$(readlink -f "$1") launch=$(readlink -f "$2") cases=$(readlink -f "$3") art=$4
chromium=$(command -v chromium || command -v chromium-browser)
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium; tools-deps.sh lists it)"
  exit 77
fi
mkdir -p "$art" && art=$(readlink -f "$art")
work=$(mktemp -d /tmp/nsp-html-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }

# Chromium without a network: every host name resolves to nothing, and its
# own background fetches are off.
browse() {
  timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --host-resolver-rules="MAP * ~NOTFOUND" \
    --user-data-dir="$work/profile" "$@" 2>>"$work/chromium.log"
}

# What a rendered page says: its text (scripts and styles left out), and
# the swimlane's boxes as "CLASS|TOOLTIP" lines.
cat >"$work/dom.py" <<'EOF'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.text = []; self.stack = []; self.boxes = []; self.elems = []
    def handle_starttag(self, tag, attrs):
        self.elems.append(tag)
        a = dict(attrs)
        self.stack.append((tag, a.get("class", "")))
        if tag == "title" and len(self.stack) > 1 and self.stack[-2][0] == "g":
            self.boxes.append([self.stack[-2][1], ""])
    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag: pass
    def handle_data(self, d):
        if self.stack and self.stack[-1][0] in ("style", "script"): return
        if self.stack and self.stack[-1][0] == "title" and len(self.stack) > 1 and self.stack[-2][0] == "g":
            self.boxes[-1][1] += d
        self.text.append(d)
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
mode = sys.argv[2]
if mode == "text": print(" ".join(" ".join(p.text).split()))
elif mode == "boxes": print("\n".join(c + "|" + t for c, t in p.boxes))
else: print("\n".join(p.elems))
EOF

# Markup in the trace directory's name (the report shows trace paths) and
# in an NCCL_* value (the environment table shows those).
mark='<script>alert(1)</script>'
dir="c03-<script>x"
NSP_STANDIN_TIMEOUT_MS=3000 "$ncclspy" run --no-analyze -d "$dir" -- \
  "$launch" -n 4 -e "NCCL_TEST_MARKUP=$mark" -- "$cases" c03 >/dev/null 2>&1
"$ncclspy" analyze --html -o c03.html "$dir"
rc=$?
[ $rc = 1 ] && head -c 15 c03.html | grep -q '<!DOCTYPE html>'
ok $? "analyze --html -o: a page, exit status 1 as with findings (got $rc)"

! grep -qi '<script' c03.html && [ "$(grep -o '&lt;script&gt;' c03.html | wc -l)" -ge 2 ]
ok $? "markup from a trace path and an environment value is escaped, never a tag"

# Nothing to fetch: no external URL, no src, no stylesheet link, no
# @import or url(); links only to places in the page.
! grep -Eiq 'https?:|src=|<link|@import|url\(|<iframe|<object|<embed' c03.html &&
  ! grep -o 'href="[^"]*"' c03.html | grep -vq 'href="#'
ok $? "self-contained: no URL, src, link, @import or url() in the page"

browse --dump-dom "file://$work/c03.html" >c03.dom
python3 dom.py c03.dom text >c03.txt
python3 dom.py c03.dom elems >c03.elems
! grep -qx script c03.elems && grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' c03.dom
ok $? "rendered: no script element, the environment value shows as text"

grep -q "seq 11 .*communicator [0-9a-f]\{16\}.*rank 0 .*all-gather.*ranks 1-3 .*all-reduce.*(kind mismatch)" c03.txt &&
  grep -q "\[1\] kind-mismatch on communicator [0-9a-f]\{16\} (4 ranks), seq 11 (all-gather)" c03.txt &&
  grep -q "side 1 rank 0 all-gather" c03.txt && grep -q "side 2 ranks 1-3 all-reduce" c03.txt
ok $? "rendered text: the headline, the finding's kind and seq, rank 0 on one side and ranks 1-3 on the other"

grep -q "How each process ended" c03.txt && grep -q "NCCL_TEST_MARKUP" c03.txt && grep -q "hint:" c03.txt
ok $? "rendered text: how each process ended, the environment table, the hint"

python3 dom.py c03.dom boxes >c03.boxes
hl=$(grep '^call hl|' c03.boxes | cut -d'|' -f2 | cut -d: -f1 | sort | tr '\n' ';')
[ "$hl" = "rank 0, seq 11;" ] && grep -q '^call|rank 1, seq 11: all-reduce' c03.boxes &&
  grep -q '^call|rank 3, seq 6: ' c03.boxes && [ "$(grep -c '^call' c03.boxes)" -ge 24 ]
ok $? "swimlane: seq 6-11 of 4 ranks, only rank 0's call at seq 11 highlighted (highlighted: $hl)"

browse --screenshot="$art/report.png" --window-size=1280,1600 "file://$work/c03.html" >/dev/null
[ -s "$art/report.png" ] && [ "$(stat -c %s "$art/report.png")" -gt 20000 ]
ok $? "screenshot: $art/report.png"

# A hang killed while it hangs: rank 1 never calls seq 3, rank 0 is inside it.
NSP_STANDIN_TIMEOUT_MS=60000 "$ncclspy" run --no-analyze -d hang -- "$launch" -t 3 -n 2 -- "$cases" hang \
  >/dev/null 2>&1
"$ncclspy" analyze --html -o hang.html hang
browse --dump-dom "file://$work/hang.html" >hang.dom
python3 dom.py hang.dom text >hang.txt
python3 dom.py hang.dom boxes >hang.boxes
grep -q "seq 3 all-reduce on communicator [0-9a-f]\{16\} did not complete: rank 1 did not arrive; rank 0 waits inside it (hang)" hang.txt &&
  grep -q "side 1 rank 1 did not arrive at seq 3" hang.txt && grep -q "ended without a clean exit" hang.txt
ok $? "hang: the rendered headline, sides and how the processes ended"

grep -q '^missing hl|rank 1, seq 3: did not arrive' hang.boxes &&
  grep -q '^call hl|rank 0, seq 3: all-reduce .*never returned' hang.boxes &&
  grep -q '^call|rank 1, seq 2: all-reduce' hang.boxes
ok $? "hang swimlane: rank 1's seq 3 a dashed empty box, rank 0's seq 3 highlighted and never returned"

browse --screenshot="$art/report-hang.png" --window-size=1280,1600 "file://$work/hang.html" >/dev/null
[ -s "$art/report-hang.png" ]
ok $? "screenshot: $art/report-hang.png"

"$ncclspy" analyze --html --json hang >out 2>err
rc=$?
[ $rc = 2 ] && [ ! -s out ] && grep -q -- "--json and --html" err
ok $? "--html with --json: a usage error (2; got $rc)"

"$ncclspy" analyze --html hang >stdout.html
grep -q '</html>' stdout.html
ok $? "--html without -o: the page on standard output"

# A split communicator (c2d: the DP group {1,3,5,7}): each lane names
# the process's job rank under its communicator rank, as the headline.
NSP_STANDIN_TIMEOUT_MS=3000 "$ncclspy" run --no-analyze -d c2d -- "$launch" -n 8 -t 30 -- "$cases" c2d-dp-mismatch \
  >/dev/null 2>&1
"$ncclspy" analyze --html -o c2d.html c2d >/dev/null 2>&1
lanes=$(python3 -c '
import re, sys
s = open(sys.argv[1]).read()
svg = s[s.index("<svg"):s.index("</svg>")]
print(" ".join(re.findall(r"class=\"l[nx]\">([^<]*)<", svg)))' c2d.html 2>/dev/null)
[ "$lanes" = "rank 0 job rank 1 rank 1 job rank 3 rank 2 job rank 5 rank 3 job rank 7" ]
ok $? "a split communicator's lanes: communicator rank and job rank ($lanes)"

echo "1..$n"
[ $failed = 0 ] || { echo "# chromium's log:"; tail -5 "$work/chromium.log" | sed 's/^/# /'; }
exit $failed
