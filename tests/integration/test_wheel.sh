#!/bin/bash
# test_wheel.sh - the Python wheel (pyproject.toml, meson-python): built
# from a copy of the source tree with `pip wheel --no-build-isolation
# --no-index`, installed into a new virtual environment with --no-index,
# whose `ncclspy` (a console script that execs the command inside the
# package) finds the shim inside the package and runs a job under it.
# Skips (77) without a Python that has meson-python, venv and pip.  TAP.
#   test_wheel.sh SOURCE_ROOT NSP_LAUNCH NSP_CASES
set -u
root=$(readlink -f "$1") launch=$(readlink -f "$2") cases=$(readlink -f "$3")
. "$(dirname "$0")/nsp_pkg_lib.sh"
py=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import mesonpy, venv, ensurepip, pip' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "1..0 # SKIP no python3 with meson-python, venv and pip (Debian: python3-mesonpy python3-venv python3-pip)"
  exit 77
fi
work=$(mktemp -d /tmp/nsp-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
echo "1..10"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_CONFIG_FILE=/dev/null TMPDIR=$work

version=$(nsp_version "$root")
nsp_copy_source "$root" "$work/src"
(cd "$work/src" && "$py" -m pip wheel --no-build-isolation --no-deps --no-index -w "$work/dist" .) >"$work/build.log" 2>&1
whl=$(ls "$work"/dist/ncclspy-"$version"-*.whl 2>/dev/null)
[ -n "$whl" ]
ok $? "pip wheel gives ncclspy-$version-<tag>.whl (${whl##*/})$([ -z "$whl" ] && tail -5 "$work/build.log" | tr '\n' ' ')"
# Nothing in it uses Python's ABI: one wheel for every CPython 3
# (python/retag_wheel.py undoes meson-python 0.12's cp3X tag).
whl=$("$py" "$root/python/retag_wheel.py" "$whl")
case ${whl##*/} in ncclspy-"$version"-py3-none-linux_*.whl) r=0 ;; *) r=1 ;; esac
ok $r "retagged for every Python 3: ${whl##*/}"

files=$("$py" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$whl" 2>/dev/null |
  grep -v '\.dist-info/' | sort | tr '\n' ' ')
[ "$files" = "ncclspy/__init__.py ncclspy/__main__.py ncclspy/bin/ncclspy ncclspy/lib/libncclspy.so " ]
ok $? "the wheel holds the package only: the launcher, the command and the shim ($files)"

# Another CPython than the one that built it, when this machine has one.
vpy=$py
for p in $(python3 "$(dirname "$0")/find_pythons.py" 2>/dev/null | cut -d= -f2) python3.12 python3.13 python3.10; do
  if command -v "$p" >/dev/null && [ "$("$p" -c 'import sys; print(sys.version_info[:2])' 2>/dev/null)" != \
       "$("$py" -c 'import sys; print(sys.version_info[:2])')" ] && "$p" -c 'import venv, ensurepip' 2>/dev/null; then
    vpy=$p; break
  fi
done
"$vpy" -m venv "$work/venv" && "$work/venv/bin/pip" install -q --no-index "$whl" >"$work/install.log" 2>&1
ncclspy=$work/venv/bin/ncclspy
[ -x "$ncclspy" ] && "$ncclspy" --version 2>&1 | grep -qx "ncclspy $version (trace format [0-9.]*)"
ok $? "pip install --no-index in a new venv puts ncclspy on its PATH ($("$ncclspy" --version 2>&1))"

site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
shim=$("$ncclspy" shim-path)
[ "$shim" = "$(readlink -f "$site/ncclspy/lib/libncclspy.so")" ] &&
  [ "$("$work/venv/bin/python" -m ncclspy shim-path)" = "$shim" ] &&
  [ "$("$work/venv/bin/python" -c 'import ncclspy; print(ncclspy.shim_path())')" = "$site/ncclspy/lib/libncclspy.so" ]
ok $? "ncclspy shim-path, python -m ncclspy shim-path and ncclspy.shim_path(): the shim inside the package ($shim)"

# Static libraries inside: the command and the shim need only the C
# library, so a GPU host's environment without json-c, zstd or elfutils
# runs them.
needs=$(ldd "$(dirname "$shim")/../bin/ncclspy" "$shim" 2>&1 | grep -oE '^\s+lib[^ ]+' | sort -u | tr -d '\t ' | tr '\n' ' ')
[ "$needs" = "libc.so.6 " ]
ok $? "the command and the shim link only libc ($needs)"
nsp_check_run "$ncclspy" "$shim" "the venv's ncclspy ($("$work/venv/bin/python" -V 2>&1))"
exit $failed
