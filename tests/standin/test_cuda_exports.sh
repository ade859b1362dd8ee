#!/bin/sh
# The CUDA driver stand-in exports exactly the driver entry points of
# nsp_standin_cuda.h (real ABI names, versioned and unversioned) and its
# hook for the NCCL stand-in, nothing else.
# usage: test_cuda_exports.sh LIBCUDA
set -eu
lib=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $3}' | sort > "$tmp/exported"
sort > "$tmp/want" <<'LIST'
cuCtxGetCurrent
cuCtxGetDevice
cuCtxSetCurrent
cuDeviceGet
cuDeviceGetCount
cuDeviceGetName
cuDeviceGetPCIBusId
cuDeviceGetUuid
cuDeviceGetUuid_v2
cuDevicePrimaryCtxRetain
cuDriverGetVersion
cuEventCreate
cuEventDestroy
cuEventDestroy_v2
cuEventElapsedTime
cuEventElapsedTime_v2
cuEventQuery
cuEventRecord
cuEventRecordWithFlags
cuEventSynchronize
cuGetErrorName
cuGetErrorString
cuGetProcAddress
cuGetProcAddress_v2
cuInit
cuStreamBeginCapture
cuStreamBeginCapture_v2
cuStreamCreate
cuStreamDestroy
cuStreamDestroy_v2
cuStreamEndCapture
cuStreamGetCtx
cuStreamIsCapturing
cuStreamQuery
cuStreamSynchronize
cuThreadExchangeStreamCaptureMode
nsp_standin_stream_enqueue
LIST
echo "1..2"
if diff -u "$tmp/want" "$tmp/exported" > "$tmp/diff"; then
  echo "ok 1 - libcuda.so.1 exports exactly the $(wc -l < "$tmp/want") expected symbols"
else
  sed 's/^/# /' "$tmp/diff"
  echo "not ok 1 - exported symbols differ from the list"
fi
if readelf -d "$lib" | grep -q 'SONAME.*\[libcuda\.so\.1\]'; then
  echo "ok 2 - soname libcuda.so.1"
else
  echo "not ok 2 - soname is not libcuda.so.1"
fi
