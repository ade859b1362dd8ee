#!/bin/bash
# Builds ncclspy on a GPU host and runs the torch examples under the shim,
# two ranks each (NSP_NPROC=N for another count), then the analyzer on
# each job's traces.
#   examples/torch/run_gpu.sh [EXAMPLE...]      (default: ddp_amp c01_amp_dtype c03_main_only)
# EXAMPLE: [DIR/]NAME[:SECONDS], DIR under examples/ (torch by default).
# Results go to $OUT (default ./gpu-out): reports.txt, and traces.tgz with
# every trace and torchrun log.  NSP_SHIM_ONLY=1 builds and runs only the
# shim (analyse the traces elsewhere).
set -u
cd "$(dirname "$0")/../.."
top=$PWD
out=${OUT:-$top/gpu-out}
mkdir -p "$out"
# NVLink multicast stays off on shared hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The failure cases end by PyTorch's watchdog; skip its 60 s debug dump.
export TORCH_NCCL_DUMP_ON_TIMEOUT=${TORCH_NCCL_DUMP_ON_TIMEOUT:-0}
# Fewer GPUs than ranks: every rank on GPU 0 (examples/torch/common.py).
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -lt "${NSP_NPROC:-2}" ] && export NSP_ONE_GPU=1
build=${NSP_BUILD_DIR:-build-gpu}
if ! { [ -d "$build" ] || meson setup "$build" -Dlibunwind="${NSP_LIBUNWIND:-disabled}" -Dtests=disabled; } >"$out/build.log" 2>&1 ||
   ! ninja -C "$build" ${NSP_SHIM_ONLY:+shim/libncclspy.so} >>"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
shim=$top/$build/shim/libncclspy.so
export NCCLSPY_LIB=$shim
traces=${NSP_TRACE_ROOT:-/tmp/ncclspy-gpu}
rm -rf "$traces" && mkdir -p "$traces"
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(ddp_amp c01_amp_dtype c03_main_only)
for spec in "${examples[@]}"; do
  # [DIR/]NAME or [DIR/]NAME:SECONDS (the job's time limit, as a scheduler
  # would kill it); DIR under examples/, torch by default.  examples/jax
  # programs start their own processes; the others run under torchrun.
  ex=${spec%%:*}
  limit=${NSP_EXAMPLE_TIMEOUT:-120}
  [ "$spec" != "$ex" ] && limit=${spec#*:}
  exdir=torch
  [ "$ex" != "${ex#*/}" ] && { exdir=${ex%%/*}; ex=${ex#*/}; }
  dir=$traces/$ex
  start=$(date +%s)
  if [ "$exdir" = jax ]; then
    (cd examples/jax && NCCLSPY_DIR=$dir LD_PRELOAD=$shim timeout "$limit" python3 "$ex.py") >"$traces/$ex.log" 2>&1
  else
    (cd "examples/$exdir" && PYTHONPATH=$top/examples/torch NCCLSPY_DIR=$dir LD_PRELOAD=$shim timeout "$limit" \
       python3 -m torch.distributed.run --nproc_per_node="${NSP_NPROC:-2}" "$ex.py") >"$traces/$ex.log" 2>&1
  fi
  rc=$?
  {
    echo "=== $ex: torchrun exit $rc after $(( $(date +%s) - start )) s; ncclspy analyze:"
    if [ -z "${NSP_SHIM_ONLY:-}" ]; then
      "$build/analyzer/ncclspy" analyze "$dir" 2>&1
      echo "(analyze exit $?)"
    fi
  } | tee -a "$out/reports.txt"
  grep -E "^\[rank|it/s|^  " "$traces/$ex.log" | head -20
done
tar czf "$out/traces.tgz" -C "$traces" .
