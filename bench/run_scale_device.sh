#!/bin/sh
# The scale benchmark (nsp_bench_scale) on a machine with more cores than
# this project's 2-core build machine: the device host (16 cores).
# Builds the command and the benchmark with the Debian packages carried in
# .dev/debs, then times analyze and perf with 1 to 16 threads on two
# generated jobs.  Results in $OUT (default ./gpu-out).
#   run from the top of the tree:  sh bench/run_scale_device.sh
set -e
. examples/torch/device_env.sh
meson setup "$top/build-scale" -Dtests=auto -Dman=disabled >"$out/setup.log" 2>&1 ||
  { tail -30 "$out/setup.log"; exit 1; }
ninja -C "$top/build-scale" analyzer/ncclspy bench/nsp_bench_scale >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; exit 1; }
nproc | tee "$out/nproc.txt"
b="$top/build-scale/bench/nsp_bench_scale"
"$b" --preset mid --threads 1,2,4,8,16 --mismatch none,end --perf --dir /tmp/scale-mid 2>&1 | tee "$out/mid.txt"
"$b" --ranks 2048 --calls 50000 --threads 1,2,4,8,16 --mismatch none,end --dir /tmp/scale-2k 2>&1 | tee "$out/2048x50k.txt"
