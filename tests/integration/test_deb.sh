#!/bin/bash
# test_deb.sh - the Debian package (debian/, debhelper): built from a copy
# of the source tree in a temporary directory with `dpkg-buildpackage -b
# -us -uc` (nothing is left beside the checkout), unpacked with dpkg -x
# into a temporary root (the system is not touched); the command there
# finds the shim in the package's private directory and runs a job under
# it.  Skips (77) without dpkg-buildpackage and debhelper, or with build
# dependencies missing.  TAP.
#   test_deb.sh SOURCE_ROOT NSP_LAUNCH NSP_CASES
set -u
root=$(readlink -f "$1") launch=$(readlink -f "$2") cases=$(readlink -f "$3")
. "$(dirname "$0")/nsp_pkg_lib.sh"
for t in dpkg-buildpackage dpkg-checkbuilddeps dh dpkg-deb; do
  if ! command -v $t >/dev/null; then
    echo "1..0 # SKIP no $t (Debian: dpkg-dev debhelper)"
    exit 77
  fi
done
work=$(mktemp -d /tmp/nsp-deb-XXXXXX)
trap 'rm -rf "$work"' EXIT
nsp_copy_source "$root" "$work/src"
if ! unmet=$(cd "$work/src" && dpkg-checkbuilddeps 2>&1); then
  echo "1..0 # SKIP $unmet"
  exit 77
fi
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
echo "1..9"

version=$(nsp_version "$root")
arch=$(dpkg-architecture -qDEB_HOST_ARCH) multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[ "$(cd "$work/src" && dpkg-parsechangelog -S Version)" = "$version" ]
ok $? "debian/changelog's version is meson.build's ($version)"

# No debug-symbol package, no test run (test.sh runs the tests).
(cd "$work/src" && DEB_BUILD_OPTIONS="nocheck noddebs" dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1
deb=$work/ncclspy_${version}_$arch.deb
[ -f "$deb" ]
ok $? "dpkg-buildpackage -b gives ncclspy_${version}_$arch.deb$([ -f "$deb" ] || tail -5 "$work/build.log" | tr '\n' ' ')"

files=$(dpkg-deb -c "$deb" 2>/dev/null | awk '{print $6}')
missing=""
for f in usr/bin/ncclspy usr/lib/$multiarch/ncclspy/libncclspy.so usr/share/man/man1/ncclspy.1.gz \
         usr/share/man/man7/libncclspy.7.gz usr/share/bash-completion/completions/ncclspy \
         usr/include/ncclspy/trace.h usr/lib/$multiarch/pkgconfig/ncclspy-trace.pc usr/share/doc/ncclspy/copyright; do
  echo "$files" | grep -qx "\./$f" || missing="$missing $f"
done
extra=$(echo "$files" | grep -E 'nsp_cases|nsp_launch|standin|test_' | tr '\n' ' ')
[ -z "$missing" ] && [ -z "$extra" ]
ok $? "the package holds the command, the shim, the man pages, completion and headers, and no test${missing:+; missing:$missing}${extra:+; extra: $extra}"

depends=$(dpkg-deb -f "$deb" Depends 2>/dev/null)
case $depends in *libzstd1*libjson-c5*|*libjson-c5*libzstd1*) true ;; *) false ;; esac
ok $? "Depends from the libraries it links (\${shlibs:Depends}): $depends"

dpkg-deb -x "$deb" "$work/root"
ncclspy=$work/root/usr/bin/ncclspy
shim=$("$ncclspy" shim-path 2>&1)
[ "$shim" = "$work/root/usr/lib/$multiarch/ncclspy/libncclspy.so" ]
ok $? "dpkg -x into a temporary root: its ncclspy finds its shim ($shim)"

nsp_check_run "$ncclspy" "$shim" "the package's ncclspy"
exit $failed
