/* nsp_standin_cuda.h - the CUDA driver API of the stand-in libcuda.so.1
 * (nsp_standin_cuda.c), declared without CUDA's headers.
 *
 * Types and values are those of CUDA 13.0's cuda.h (the real header must
 * not be included with this one).  The driver names cuda.h maps to a
 * versioned symbol (cuStreamDestroy -> cuStreamDestroy_v2, ...) are
 * declared here under both names, with the ABI each symbol has in the
 * real driver: the unsuffixed cuStreamBeginCapture and cuGetProcAddress
 * are the legacy ones (no capture mode; no status argument). */
#ifndef NSP_STANDIN_CUDA_H
#define NSP_STANDIN_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream; /* the same type as NCCL's cudaStream_t */
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef uint64_t cuuint64_t;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

/* CUresult values used by the stand-in (cuda.h's CUresult enum). */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_DEINITIALIZED 4
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_ILLEGAL_STATE 401
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_CAPTURED_EVENT 907
#define CUDA_ERROR_UNKNOWN 999

/* CUstreamCaptureStatus */
typedef enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
} CUstreamCaptureStatus;

/* CUstreamCaptureMode */
typedef enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
} CUstreamCaptureMode;

/* CUdriverProcAddressQueryResult */
typedef enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2

#define CU_STREAM_DEFAULT 0x0
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

#define CU_EVENT_DEFAULT 0x0
#define CU_EVENT_BLOCKING_SYNC 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_EVENT_INTERPROCESS 0x4
#define CU_EVENT_RECORD_DEFAULT 0x0
#define CU_EVENT_RECORD_EXTERNAL 0x1

/* The driver entry points the stand-in exports. */
CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamQuery(CUstream hStream);
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuStreamBeginCapture(CUstream hStream); /* legacy ABI: global mode */
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode);
CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult cuEventQuery(CUevent hEvent);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventDestroy(CUevent hEvent);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuGetErrorString(CUresult error, const char **pStr);
CUresult cuGetErrorName(CUresult error, const char **pStr);
/* legacy ABI (CUDA 11.3) */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);

/* ---- the stand-in's own hook, for the NCCL stand-in ---------------------
 *
 * int nsp_standin_stream_enqueue(void *stream, fn, arg)
 *
 * Queues fn(arg, NSP_STANDIN_TASK_RUN) on the worker thread of `stream` (a
 * CUstream; NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD mean the NULL
 * stream of the calling thread's current context), in stream order with
 * the stream's other work (event markers, other tasks).  The stream is
 * busy (cuStreamQuery: not ready; events recorded after it pending) until
 * fn returns.  Returns:
 *   NSP_STANDIN_ENQ_QUEUED    0: fn will be called exactly once, on the
 *                             worker: with NSP_STANDIN_TASK_RUN when its
 *                             turn comes, or with NSP_STANDIN_TASK_CANCEL
 *                             if the work is dropped before it started
 *                             (the process is exiting), only so that it
 *                             can release `arg`.
 *   NSP_STANDIN_ENQ_CAPTURED  1: the stream is capturing a graph; the work
 *                             belongs to the graph, which the stand-in
 *                             never replays: nothing is queued, fn is never
 *                             called (the caller still owns `arg`).
 *   NSP_STANDIN_ENQ_ERROR    -1: not queued, fn never called: invalid
 *                             stream, no current context for the NULL
 *                             stream, cuInit not called, out of memory,
 *                             or the library is shutting down.
 * fn runs on the stream's worker thread, whose current context is the
 * stream's; it must not wait for its own stream (cuStreamSynchronize,
 * cuEventSynchronize of an event recorded after it): that would never
 * return.  The stream's later work waits while fn runs, as a GPU's does
 * behind a kernel that hangs.  Thread-safe. */
#define NSP_STANDIN_ENQ_QUEUED 0
#define NSP_STANDIN_ENQ_CAPTURED 1
#define NSP_STANDIN_ENQ_ERROR (-1)
#define NSP_STANDIN_TASK_RUN 0
#define NSP_STANDIN_TASK_CANCEL 1
typedef void (*nsp_standin_task_fn)(void *arg, int why);
typedef int (*nsp_standin_stream_enqueue_fn)(void *stream, nsp_standin_task_fn fn, void *arg);
int nsp_standin_stream_enqueue(void *stream, nsp_standin_task_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* NSP_STANDIN_CUDA_H */
