#!/bin/bash
# test_install.sh - what `meson install` puts in place (into a DESTDIR):
# the command and the shim, which `ncclspy shim-path` finds from there;
# the trace format's headers and their pkg-config file, with which a
# program compiles; bash completion; the man pages, when built.  TAP.
#   test_install.sh BUILD_DIR
set -u
build=$(readlink -f "$1")
dest=$(mktemp -d /tmp/nsp-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
echo "1..8"
DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet >"$dest/install.log" 2>&1
ok $? "meson install into $dest"
bin=$(find "$dest" -path '*/bin/ncclspy' | head -1)
shim=$(find "$dest" -name libncclspy.so | head -1)
[ -n "$bin" ] && [ -n "$shim" ] && [ "$("$bin" shim-path)" = "$(readlink -f "$shim")" ]
ok $? "the installed ncclspy finds the installed shim ($shim)"
pc=$(find "$dest" -name ncclspy-trace.pc | head -1)
prefix=$(sed -n 's/^prefix=//p' "$pc")
cflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$dest$prefix" --cflags ncclspy-trace)
printf '#include <ncclspy/trace.h>\nint main(void) { return NSP_FORMAT_MAJOR == 1 && NSP_REC_PYSITE == 17 ? 0 : 1; }\n' >"$dest/t.c"
cc $cflags -o "$dest/t" "$dest/t.c" && "$dest/t"
ok $? "a program compiles against <ncclspy/trace.h> with pkg-config's ncclspy-trace ($cflags)"
cp "$dest/t.c" "$dest/t.cpp"
c++ -std=c++17 -Wall -Wextra -pedantic $cflags -o "$dest/tx" "$dest/t.cpp" && "$dest/tx"
ok $? "and a C++ program (extern \"C\", static_assert)"
[ -f "$(dirname "$(dirname "$bin")")/include/ncclspy/trace_schema.h" ]
ok $? "trace_schema.h installed beside trace.h"
comp=$(find "$dest" -path '*/bash-completion/completions/ncclspy' | head -1)
[ -n "$comp" ] && bash -c "source '$comp' && complete -p ncclspy" >/dev/null 2>&1 &&
  [ "$(bash -c "source '$comp'; COMP_WORDS=(ncclspy ru); COMP_CWORD=1; _ncclspy; echo \${COMPREPLY[*]}")" = run ]
ok $? "bash completion installed and completes 'ncclspy ru' to run"
got=$(cd "$dest" && bash -c "source '$comp'; COMP_WORDS=(ncclspy watch --interval ''); COMP_CWORD=3; _ncclspy; echo \"\${COMPREPLY[*]}\"")
[ -z "$got" ]
ok $? "it offers no file names after watch --interval (seconds) (got: $got)"
if [ -f "$build/docs/ncclspy.1" ]; then
  mandir=$(dirname "$(dirname "$(find "$dest" -path '*/man1/ncclspy.1' | head -1)")")
  [ -f "$mandir/man7/libncclspy.7" ] && [ "$(MANPATH=$mandir man -w ncclspy 2>/dev/null)" = "$mandir/man1/ncclspy.1" ] &&
    [ "$(MANPATH=$mandir man -w 7 libncclspy 2>/dev/null)" = "$mandir/man7/libncclspy.7" ]
  ok $? "man pages ncclspy(1) and libncclspy(7) installed where man finds them ($mandir)"
else
  echo "ok 6 - # SKIP the man pages were not built (no scdoc)"
fi
exit $failed
