#!/bin/sh
# Installs what building and testing ncclspy need, when it is missing.
# Sourced by demo.sh and test.sh; uses apt as root (or through sudo).
nsp_deps() {
  pkgs="gcc meson ninja-build pkg-config libzstd-dev libjson-c-dev libcmocka-dev binutils python3"
  [ "${1:-}" = test ] && pkgs="$pkgs libunwind-dev libdw-dev chromium"
  # The packages' tests (suite package: the wheel, the .deb) and the man
  # pages' (scdoc, groff).
  [ "${1:-}" = test ] && pkgs="$pkgs scdoc groff-base git python3-mesonpy python3-venv python3-pip debhelper dpkg-dev build-essential"
  missing=""
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  echo "ncclspy: installing$missing" >&2
  if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo=sudo; else
    echo "ncclspy: please install as root:$missing" >&2; return 1; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null && $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}
