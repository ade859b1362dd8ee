"""A rank that dies of a fatal signal: three healthy all-reduces, then
rank 1 dereferences a bad pointer (SIGSEGV, here through ctypes; in a real
job a native extension or a driver bug) while rank 0 goes on to seq 4 and
waits inside it.  Under the shim, rank 1's trace holds a SIGNAL record
with its stack, and `ncclspy analyze` names rank 1 and the faulting
function as the cause; rank 0's wait follows from it.  The job's time
limit ends rank 0 (run_gpu.sh rank_crash:25).

timeout 25 torchrun --nproc_per_node=2 examples/torch/rank_crash.py
"""
import ctypes

import torch
import torch.distributed as dist

from common import log, setup


def main():
    rank, world, dev = setup(timeout_s=20)
    g = torch.ones(4096, device=dev)
    for _ in range(3):  # seq 1-3
        dist.all_reduce(g)
    torch.cuda.synchronize()
    log(rank, "seq 1-3 done")
    if rank == 1:
        ctypes.string_at(16)  # reads address 16: SIGSEGV
    dist.all_reduce(g)  # seq 4: rank 0 waits here
    torch.cuda.synchronize()
    log(rank, "seq 4 done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
