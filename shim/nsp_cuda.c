/* nsp_cuda.c - the CUDA driver, found at run time. */
#include "nsp_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nsp_shim.h"

static struct nsp_cuda nsp_cu;
static const struct nsp_cuda *nsp_cu_ok;
static pthread_once_t nsp_cu_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_fn)(const char *, void **, int, uint64_t, int *);

/* cuGetProcAddress_v2 first (the driver's own idea of which version of
 * a name to hand out for CUDA 12.0), else dlsym of `versioned`. */
static void *sym(void *lib, get_proc_fn gp, const char *name, const char *versioned) {
  void *f = NULL;
  int status = 0;
  if (gp && gp(name, &f, 12000, 0, &status) == NSP_CUDA_SUCCESS && f) return f;
  f = dlsym(lib, versioned);
  return f ? f : dlsym(lib, name);
}

#define NSP_CU_SYM(member, name, versioned)                    \
  do {                                                         \
    void *p_ = sym(lib, gp, name, versioned);                  \
    memcpy(&nsp_cu.member, &p_, sizeof p_);                    \
  } while (0)

static void load(void) {
  /* NCCL has loaded the driver by the time it is called; loading it
   * ourselves otherwise is harmless, and fails cleanly without a GPU. */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  get_proc_fn gp = NULL;
  void *g = dlsym(lib, "cuGetProcAddress_v2");
  memcpy(&gp, &g, sizeof g);
  NSP_CU_SYM(DriverGetVersion, "cuDriverGetVersion", "cuDriverGetVersion");
  NSP_CU_SYM(CtxGetCurrent, "cuCtxGetCurrent", "cuCtxGetCurrent");
  NSP_CU_SYM(CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent");
  NSP_CU_SYM(CtxGetDevice, "cuCtxGetDevice", "cuCtxGetDevice");
  NSP_CU_SYM(StreamGetCtx, "cuStreamGetCtx", "cuStreamGetCtx");
  NSP_CU_SYM(StreamIsCapturing, "cuStreamIsCapturing", "cuStreamIsCapturing");
  NSP_CU_SYM(StreamCreate, "cuStreamCreate", "cuStreamCreate");
  NSP_CU_SYM(EventCreate, "cuEventCreate", "cuEventCreate");
  NSP_CU_SYM(EventRecord, "cuEventRecord", "cuEventRecord");
  NSP_CU_SYM(EventQuery, "cuEventQuery", "cuEventQuery");
  NSP_CU_SYM(EventSynchronize, "cuEventSynchronize", "cuEventSynchronize");
  NSP_CU_SYM(EventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime_v2");
  NSP_CU_SYM(EventDestroy, "cuEventDestroy", "cuEventDestroy_v2");
  NSP_CU_SYM(DeviceGetUuid, "cuDeviceGetUuid", "cuDeviceGetUuid_v2");
  NSP_CU_SYM(DeviceGetPCIBusId, "cuDeviceGetPCIBusId", "cuDeviceGetPCIBusId");
  NSP_CU_SYM(DeviceGetName, "cuDeviceGetName", "cuDeviceGetName");
  NSP_CU_SYM(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode",
             "cuThreadExchangeStreamCaptureMode");
  if (nsp_cu.CtxGetCurrent && nsp_cu.CtxSetCurrent && nsp_cu.StreamGetCtx && nsp_cu.StreamIsCapturing &&
      nsp_cu.StreamCreate && nsp_cu.EventCreate && nsp_cu.EventRecord && nsp_cu.EventQuery &&
      nsp_cu.EventSynchronize && nsp_cu.EventElapsedTime && nsp_cu.EventDestroy)
    nsp_cu_ok = &nsp_cu;
}

const struct nsp_cuda *nsp_cuda_get(void) {
  pthread_once(&nsp_cu_once, load);
  return nsp_cu_ok;
}

void nsp_cuda_identity(int device, char uuid[64], char bus[64], char name[64]) {
  uuid[0] = bus[0] = name[0] = 0;
  const struct nsp_cuda *cu = nsp_cuda_get();
  /* A CUdevice is the device ordinal (cuDeviceGet(&d, i) gives d == i). */
  CUdevice dev = device;
  if (!cu) return;
  if (device < 0 && (!cu->CtxGetDevice || cu->CtxGetDevice(&dev) != NSP_CUDA_SUCCESS)) return;
  CUuuid u;
  if (cu->DeviceGetUuid && cu->DeviceGetUuid(&u, dev) == NSP_CUDA_SUCCESS) {
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(uuid, 64,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  }
  if (cu->DeviceGetPCIBusId && cu->DeviceGetPCIBusId(bus, 64, dev) != NSP_CUDA_SUCCESS) bus[0] = 0;
  if (cu->DeviceGetName && cu->DeviceGetName(name, 64, dev) != NSP_CUDA_SUCCESS) name[0] = 0;
  bus[63] = name[63] = 0;
}
