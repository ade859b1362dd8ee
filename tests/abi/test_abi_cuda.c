/* test_abi_cuda.c - our CUDA driver constants (shim/nsp_cuda.h) against
 * the real cuda.h.  Exits 77 (skipped) when the build found no cuda.h. */
#include <stdio.h>

#include "abi_cuda.h"

extern const struct nsp_cuda_fact nsp_cuda_ours[];
#if NSP_HAVE_REAL_CUDA_H
extern const struct nsp_cuda_fact nsp_cuda_real[];
extern const int nsp_cuda_real_version;
#endif

int main(void) {
#if NSP_HAVE_REAL_CUDA_H
  int failed = 0, n = 0;
  printf("1..1\n");
  for (int i = 0; nsp_cuda_ours[i].name; i++, n++)
    if (nsp_cuda_ours[i].value != nsp_cuda_real[i].value) {
      fprintf(stderr, "# %s = %lld, but cuda.h's %s = %lld\n", nsp_cuda_ours[i].name, nsp_cuda_ours[i].value,
              nsp_cuda_real[i].name, nsp_cuda_real[i].value);
      failed++;
    }
  printf("%s 1 - %d CUDA driver constants match cuda.h %d (%d differ)\n", failed ? "not ok" : "ok", n,
         nsp_cuda_real_version, failed);
  return failed ? 1 : 0;
#else
  (void)nsp_cuda_ours;
  printf("1..0 # SKIP no /usr/local/cuda/include/cuda.h at build time\n");
  return 77;
#endif
}
