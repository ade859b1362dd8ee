/* nsp_bench_drv.c - the wrapper's instructions per call, for callgrind.
 *
 *   NCCLSPY_DIR=/tmp/d LD_PRELOAD=build/shim/libncclspy.so \
 *     valgrind --tool=callgrind --callgrind-out-file=cg.out build/bench/nsp_bench_drv 20000
 *   callgrind_annotate --inclusive=yes cg.out | grep ncclAllReduce
 *
 * A 1-rank job on the CPU stand-in for NCCL that calls a 4-byte
 * ncclAllReduce N times (default 20,000): the shim's ncclAllReduce,
 * inclusive, divided by N is the wrapper's cost in instructions per call
 * plus the stand-in's (its own ncclAllReduce line, inclusive, over N).
 * Instruction counts do not move with the machine's load, so two shims
 * built from different commits compare exactly (bench/README.md). */
#include <stdio.h>
#include <stdlib.h>

#include "nsp_nccl.h"

NSP_NCCL_DECLARE(nccl)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 1;
  float x = 1;
  for (int i = 0; i < n; i++)
    if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess) return 1;
  ncclCommDestroy(comm);
  printf("%d all-reduces, x = %g\n", n, (double)x);
  return 0;
}
