#!/bin/sh
# Each shim module's external names carry its file's name (docs/DESIGN.md,
# "Shim modules"): every function or variable that shim/nsp_X.c defines
# at file scope without `static` is named nsp_X or nsp_X_*.  The wrappers'
# nccl* exports are NCCL's names and are left out.
# usage: test_prefixes.sh SHIM_SOURCE_DIR.  Prints TAP.
dir=${1:?usage: test_prefixes.sh SHIM_SOURCE_DIR}
n=0
bad=0
for f in "$dir"/*.c; do
  stem=$(basename "$f" .c)
  names=$(grep -E '^[A-Za-z_]' "$f" | grep -vE '^(static|NSP_EXPORT|typedef|struct [a-z_0-9]+ \{|enum|union)' |
          sed -nE 's/^[^(=;]*[^a-z0-9_](nsp_[a-z0-9_]+)[[:space:]]*(\(|\[|=|;).*/\1/p')
  for name in $names; do
    n=$((n + 1))
    case $name in
      "$stem" | "$stem"_*) echo "ok $n - $(basename "$f"): $name" ;;
      *) echo "not ok $n - $(basename "$f"): $name does not start with $stem"; bad=$((bad + 1)) ;;
    esac
  done
done
n=$((n + 1))
if [ "$n" -gt 40 ]; then echo "ok $n - found $((n - 1)) external names"; else echo "not ok $n - found only $((n - 1)) external names"; bad=$((bad + 1)); fi
echo "1..$n"
[ "$bad" -eq 0 ]
