#!/bin/sh
# test_data_dumps.sh NCCLSPY SRCDIR [--write] - every trace kept under
# tests/data reads the same: `ncclspy dump` of each (its crash ring
# included) against tests/data/dumps/<case>.<trace>.txt.  The traces are
# real ones, written by earlier shims (format 1.2 to 1.4) on 2xH200, so a
# change to the record schema or the reader that changes what an old file
# decodes to fails here.  --write regenerates the expected dumps (on
# purpose, after checking the change is wanted).  TAP.
set -u
ncclspy=$1 src=$2 write=${3:-}
cd "$src" || exit 2
out=tests/data/dumps
n=0 bad=0
for t in $(find tests/data/gpu -name '*.ncclspy' | sort); do
  case_dir=$(basename "$(dirname "$t")")
  want="$out/$case_dir.$(basename "$t" .ncclspy).txt"
  n=$((n + 1))
  got=$("$ncclspy" dump "$t" 2>&1; echo "exit $?")
  if [ "$write" = --write ]; then
    mkdir -p "$out" && printf '%s\n' "$got" >"$want"
    echo "ok $n - $t (written)"
  elif [ -f "$want" ] && [ "$(cat "$want")" = "$got" ]; then
    echo "ok $n - $t"
  else
    echo "not ok $n - $t: dump differs from $want"
    printf '%s\n' "$got" | diff "$want" - | head -5 | sed 's/^/# /'
    bad=1
  fi
done
echo "1..$n"
if [ $bad -ne 0 ]; then
  echo "# dump shows each trace's fields up to its own format version, so appending a field changes"
  echo "# none of these; if the change is wanted all the same, regenerate with:"
  echo "#   $0 $ncclspy $src --write"
fi
exit $bad
