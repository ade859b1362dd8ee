#!/bin/sh
# exe_wrapper of the `valgrind` test setup (top-level meson.build,
# docs/TESTING.md).  usage: valgrind-wrap.sh VALGRIND [OPTION...] PROGRAM [ARG...]
#
# Runs PROGRAM under valgrind, except the stand-in NCCL/CUDA's own tests
# (tests/standin/test_standin*): they assert wall-clock behaviour (a call
# returns within 0.2 s, a peer gives up after 0.3 s, exit within 8 s) that
# cannot hold at memcheck's 20-50x slowdown, and one of them re-executes
# /proc/self/exe, which under valgrind is valgrind's own tool.  They run
# natively; the stand-in's code is still checked under memcheck inside the
# shim tests that link it.
i=0
prog=
for a in "$@"; do
  i=$((i + 1))
  [ "$i" -eq 1 ] && continue
  case $a in -*) continue ;; esac
  prog=$a
  break
done
case ${prog##*/} in
  test_standin|test_standin_async|test_standin_cuda)
    shift $((i - 1))
    exec "$@" ;;
esac
exec "$@"
