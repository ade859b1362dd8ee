#!/bin/sh
# Every lock of the shim is handled at fork.
#
# A child forked while another thread holds one of the shim's mutexes would
# block forever on it (CI once caught a child hung on the call-site lock).
# So each file-scope pthread_mutex_t in shim/*.c must be named inside that
# file's fork handler: a function whose name contains "atfork" or "at_fork" (taken in
# prepare, released in parent and child) or "forked" (made new in the
# child).  Usage: test_fork_locks.sh SHIM_SOURCE_DIR.  Prints TAP.
dir=${1:?usage: test_fork_locks.sh SHIM_SOURCE_DIR}
n=0
bad=0
for f in "$dir"/*.c; do
  for lock in $(sed -n 's/^static pthread_mutex_t \([a-z_0-9]*\).*/\1/p' "$f"); do
    n=$((n + 1))
    # The bodies of the fork handlers of this file.
    handled=$(awk '/^(static )?void [a-z_0-9]*(at_?fork|forked)[a-z_0-9]*\(.*\{$/ { inside = 1 }
                   inside { print }
                   inside && /^\}/ { inside = 0 }' "$f" | grep -c "&$lock\b")
    if [ "$handled" -gt 0 ]; then
      echo "ok $n - $(basename "$f"): $lock is handled at fork"
    else
      echo "not ok $n - $(basename "$f"): $lock is not named in a fork handler of its file"
      bad=$((bad + 1))
    fi
  done
done
# The check must have something to check: the shim has at least the
# start, site, resolve, comm and blob locks.
n=$((n + 1))
if [ "$n" -gt 5 ]; then echo "ok $n - found $((n - 1)) locks"; else echo "not ok $n - found only $((n - 1)) locks"; bad=$((bad + 1)); fi
echo "1..$n"
[ "$bad" -eq 0 ]
