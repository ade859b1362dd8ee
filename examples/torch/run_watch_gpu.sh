#!/bin/bash
# Issue 15's device proof, in one call: case c11 (a straggler hang) run
# as a user would, `ncclspy run -- torchrun ...`, with `ncclspy watch`
# beside it as in a second shell; the job's time limit (a scheduler's)
# ends it after NSP_LIMIT seconds (default 70).  Then the timeline and the
# HTML report of that run.  Two ranks share GPU 0 (NSP_ONE_GPU).
# Builds and installs with the Debian packages carried in .dev/debs.
# Results under $OUT: watch.txt (watch's output, each line with the time
# it was printed), run.txt (the job's output and run's analysis, timed
# the same way), c11.perfetto.json, c11.html, traces.tgz.
set -u
cd "$(dirname "$0")/../.."
. examples/torch/device_env.sh
export TORCH_NCCL_DUMP_ON_TIMEOUT=0 NSP_ONE_GPU=1 PYTHONPATH=$top/examples/torch
inst=$top/.inst
rm -rf build-gpu "$inst"
if ! { meson setup build-gpu -Dtests=disabled -Dlibunwind=enabled -Dlibdw=enabled --prefix="$inst" &&
       meson install -C build-gpu; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
export PATH=$inst/bin:$PATH
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%T.%N | cut -c1-12)" "$l"; done; }
dir=/tmp/ncclspy-c11
rm -rf "$dir"
cd examples/torch
echo "$(date +%T.%N | cut -c1-12) start: timeout ${NSP_LIMIT:-70} ncclspy run -d $dir -- torchrun --nproc_per_node=2 c11_straggler.py" >"$out/run.txt"
( timeout "${NSP_LIMIT:-70}" ncclspy run -d "$dir" -- python3 -m torch.distributed.run --nproc_per_node=2 \
    c11_straggler.py 2>&1; echo "ncclspy run exit status $?" ) | stamp >>"$out/run.txt" &
job=$!
sleep 2
# The second shell.
( timeout $(( ${NSP_LIMIT:-70} + 60 )) ncclspy watch "$dir" 2>&1; echo "ncclspy watch exit status $?" ) | stamp >"$out/watch.txt" &
watcher=$!
wait "$job"
wait "$watcher"
cd "$top"
ncclspy export --perfetto "$dir" -o "$out/c11.perfetto.json" >"$out/export.txt" 2>&1
echo "export exit $?" >>"$out/export.txt"
ncclspy analyze --html -o "$out/c11.html" "$dir" >>"$out/export.txt" 2>&1
echo "analyze --html exit $?" >>"$out/export.txt"
tar czf "$out/traces.tgz" -C "$dir" .
cat "$out/watch.txt"
tail -30 "$out/run.txt"
cat "$out/export.txt"
