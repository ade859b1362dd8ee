# nsp_pkg_lib.sh - what test_wheel.sh and test_deb.sh share (sourced): a
# copy of the source tree to build a package from, and the stand-in job
# run with an installed `ncclspy run`.  The callers define ok() (TAP) and
# $work, and set $launch and $cases (tests/cases' nsp_launch and
# nsp_cases: a 2-rank job over the CPU stand-in NCCL, which they link).

# nsp_version ROOT: meson.build's project version.
nsp_version() {
  sed -n "/^project(/,/)/s/.*version *: *'\([^']*\)'.*/\1/p" "$1/meson.build" | head -1
}

# nsp_copy_source ROOT DEST: the files git tracks, and those it does not
# ignore (nothing of a build directory); every file but .git without git.
nsp_copy_source() {
  mkdir -p "$2"
  if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$1" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -cf - -T - 2>/dev/null) |
      tar -xf - -C "$2"
  else
    tar -C "$1" --exclude=./.git --exclude='./build*' -cf - . | tar -xf - -C "$2"
  fi
}

# nsp_check_run NCCLSPY SHIM WHAT: the stand-in case c01 (rank 0
# float16, rank 1 float32) under NCCLSPY run, from WHAT: the job's exit
# status, the analysis naming the dtype mismatch, the traces written by
# SHIM (the LD_PRELOAD their PROCESS record holds); a command killed by
# SIGTERM ends ncclspy the same way; the job's ignored signals are the
# caller's.  Four ok lines.
nsp_check_run() {
  local ncclspy=$1 shim=$2 what=$3 rc
  (cd "$work" && NSP_STANDIN_TIMEOUT_MS=2000 "$ncclspy" run -d job -- "$launch" -n 2 -- "$cases" c01 >run.out 2>run.err)
  rc=$?
  [ $rc = 1 ] &&
    grep -q "^seq 2 all-reduce on communicator .*: rank 0 passed float16 where rank 1 passed float32 (dtype mismatch)" "$work/run.err"
  ok $? "$what: ncclspy run -- (c01 on the stand-in) ends with the job's status (1; got $rc) and its analysis names the dtype mismatch"
  local rec
  rec=$("$ncclspy" dump --json "$work"/job/*.rank0.ncclspy 2>/dev/null | grep -m1 '"record":"process"')
  case $rec in *"\"LD_PRELOAD\":\"$shim\""*) true ;; *) false ;; esac
  ok $? "$what: the traces were written by its shim ($shim)"
  (cd "$work" && "$ncclspy" run --no-analyze -d sig -- sh -c 'kill -TERM $$')
  rc=$?
  [ $rc = 143 ]
  ok $? "$what: a command killed by SIGTERM ends ncclspy by SIGTERM (143; got $rc)"
  local want got
  want=$(sh -c 'grep SigIgn /proc/$$/status')
  got=$(cd "$work" && "$ncclspy" run --no-analyze -d ign -- sh -c 'grep SigIgn /proc/$$/status')
  [ -n "$want" ] && [ "$got" = "$want" ]
  ok $? "$what: the job ignores the signals its caller ignores, no more ($got; want $want)"
}
