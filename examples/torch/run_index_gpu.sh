#!/bin/bash
# Device: real torch jobs under the shim; each job's traces analysed
# through the index and in full, compared, and perf's figures with 1, 2
# and 7 threads, compared.
cd "$(dirname "$0")/../.."
source examples/torch/device_env.sh
export OUT=$out NSP_BUILD_DIR=build-gpu NCCLSPY_FLUSH_MS=20
examples/torch/run_gpu.sh ddp_amp c01_amp_dtype c03_main_only skip_allreduce new_group_skip late_skip:150 > $out/run.txt 2>&1
echo "run_gpu exit $?" >> $out/run.txt
export NSP_ANALYZE_NOW_NS=1800000000000000000
for d in /tmp/ncclspy-gpu/*/; do
  n=$(basename $d)
  for m in "analyze" "analyze --json" "perf --json"; do
    build-gpu/analyzer/ncclspy $m $d > $out/$n.ix 2>&1; a=$?
    build-gpu/analyzer/ncclspy $m --full-read $d > $out/$n.full 2>&1; b=$?
    if cmp -s $out/$n.ix $out/$n.full && [ $a = $b ]; then echo "$n [$m]: same (exit $a)"; else echo "$n [$m]: DIFFER (exit $a vs $b)"; diff $out/$n.ix $out/$n.full | head -20; fi
  done >> $out/compare.txt
  # perf folds on every thread: the same figures for 1, 2 and 7 threads.
  build-gpu/analyzer/ncclspy perf --json --threads 1 $d > $out/$n.perf1 2>&1; a=$?
  for t in 2 7; do
    build-gpu/analyzer/ncclspy perf --json --threads $t $d > $out/$n.perf$t 2>&1; b=$?
    if cmp -s $out/$n.perf1 $out/$n.perf$t && [ $a = $b ]; then echo "$n [perf --threads 1 / $t]: same (exit $a)"; else echo "$n [perf --threads 1 / $t]: DIFFER (exit $a vs $b)"; diff $out/$n.perf1 $out/$n.perf$t | head -20; fi
  done >> $out/compare.txt
  grep -o '"timed": *[0-9]*' $out/$n.perf1 | head -3 >> $out/compare.txt
  ls $d | head -3 >> $out/compare.txt
done
cp /tmp/ncclspy-gpu/*.log $out/ 2>/dev/null
tar czf $out/late_skip_traces.tgz -C /tmp/ncclspy-gpu late_skip 2>/dev/null
cat $out/compare.txt
