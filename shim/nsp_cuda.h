/* nsp_cuda.h - the parts of the CUDA driver API the shim uses, resolved
 * at run time from libcuda.so.1 (nothing is linked at build time).
 *
 * Values are facts from CUDA's cuda.h (checked against CUDA 13.0's header
 * where present by tests/abi).  Entry points are taken through
 * cuGetProcAddress_v2 (CUDA 12.0+) asking for the CUDA 12.0 ABI of each
 * name, so the versioned symbol the driver means (cuEventDestroy_v2, ...)
 * is the one used; drivers without it fall back to dlsym of the
 * versioned names. */
#ifndef NSP_CUDA_H
#define NSP_CUDA_H

#include <stdint.h>

#include "nsp_nccl.h" /* struct CUstream_st, via cudaStream_t */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct {
  char bytes[16];
} CUuuid;

#define NSP_CUDA_SUCCESS 0
#define NSP_CUDA_ERROR_NOT_READY 600
#define NSP_CU_EVENT_DISABLE_TIMING 0x2
#define NSP_CU_STREAM_NON_BLOCKING 0x1
#define NSP_CU_STREAM_CAPTURE_STATUS_NONE 0
/* CUstreamCaptureMode: a thread in this mode may make potentially unsafe
 * calls (cuEventQuery, cuEventSynchronize...) while other threads capture
 * graphs, even in CU_STREAM_CAPTURE_MODE_GLOBAL (0, every thread's
 * default), whose captures such a call from a GLOBAL thread invalidates. */
#define NSP_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

/* The driver functions, or NULL members when libcuda is absent. */
struct nsp_cuda {
  CUresult (*DriverGetVersion)(int *);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetDevice)(CUdevice *);
  CUresult (*StreamGetCtx)(CUstream, CUcontext *);
  CUresult (*StreamIsCapturing)(CUstream, int *);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventQuery)(CUevent);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);
  CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  /* CUDA 10.1+; NULL on older drivers (then nothing is exchanged). */
  CUresult (*ThreadExchangeStreamCaptureMode)(int *);
};

/* Resolves the driver once.  Returns the table when every function event
 * tracking needs was found, else NULL (then the trace says completion was
 * not tracked).  Thread-safe; cheap after the first call. */
const struct nsp_cuda *nsp_cuda_get(void);

/* Identity of CUDA device `device` (an ordinal, as ncclCommCuDevice
 * gives; -1: the device of the calling thread's current context): uuid as
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", PCI bus id, name; empty
 * strings where unknown.  Buffers of 64 bytes each. */
void nsp_cuda_identity(int device, char uuid[64], char bus[64], char name[64]);

#endif /* NSP_CUDA_H */
