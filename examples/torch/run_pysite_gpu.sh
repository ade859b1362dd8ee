#!/bin/bash
# Issue 14's device proofs, in one call: builds with the Debian packages
# carried in .dev/debs (libunwind, libdw, json-c), then runs, two ranks on
# one GPU:
#   c01_amp_dtype   under ncclspy and PyTorch's flight recorder at once,
#                   then torchfrtrace on the flight recorder's dumps;
#   ddp_grad_dtype  a DDP+AMP step whose gradient all-reduce mismatches;
#   bench_pysite    dist.all_reduce 4 KiB in one process, Python sites on
#                   and off in interleaved rounds.
# Results under $OUT: reports.txt (ncclspy), fr.txt (torchfrtrace),
# bench.txt, traces.tgz.  NSP_NO_BENCH=1 skips the bench.
set -u
cd "$(dirname "$0")/../.."
. examples/torch/device_env.sh
export NSP_LIBUNWIND=enabled NCCLSPY_RING=256
{ ls /usr/bin/python3* /usr/local/bin/python3* 2>/dev/null; python3 -VV; python3 -c 'import torch; print(torch.__version__)'; } >"$out/pythons.txt" 2>&1
rm -rf build-gpu
traces=${NSP_TRACE_ROOT:-/tmp/ncclspy-gpu}
# 1. c01 with the flight recorder on: the hung rank's watchdog dumps it,
#    the rank that returned dumps its own (common.fr_dump).
fr=/tmp/nsp-fr
rm -rf "$fr" && mkdir -p "$fr"
TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=$fr/nccl_trace_rank_ \
  NSP_TRACE_ROOT=$traces/a OUT=$out/c01 examples/torch/run_gpu.sh c01_amp_dtype:60
{
  ls -la "$fr"
  echo "=== torchfrtrace $fr -p nccl_trace_rank_"
  torchfrtrace "$fr" -p nccl_trace_rank_ 2>&1 | tail -60
  echo "=== torchfrtrace -j (entries, with stacks)"
  torchfrtrace "$fr" -p nccl_trace_rank_ -j 2>&1 | head -120
} >"$out/fr.txt" 2>&1
# 2. DDP+AMP, gradient all-reduce mismatch.
NSP_BUILD_DIR=build-gpu NSP_TRACE_ROOT=$traces/b OUT=$out/ddp examples/torch/run_gpu.sh ddp_grad_dtype:90
# 3. The cost of Python sites in a torch loop, one process.
# (the ring at its default size: a small one would drop records here)
[ -n "${NSP_NO_BENCH:-}" ] || (cd examples/torch && unset NCCLSPY_RING && NCCLSPY_LIB=$top/build-gpu/shim/libncclspy.so LD_PRELOAD=$top/build-gpu/shim/libncclspy.so \
   NCCLSPY_DIR=/tmp/nsp-bench timeout 240 python3 -m torch.distributed.run --nproc_per_node=1 bench_pysite.py 300) \
   >"$out/bench.txt" 2>&1
tail -20 "$out/bench.txt"
