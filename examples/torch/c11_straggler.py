"""Case c11 (straggler hang): four healthy all-reduces, then rank 1 sleeps
30 s before seq 5 while rank 0 waits inside it.  The watchdog (20 s here)
ends the job first.  The rank to look at is rank 1, which never arrived.

torchrun --nproc_per_node=2 examples/torch/c11_straggler.py
"""
import time

import torch
import torch.distributed as dist

from common import log, setup


def main():
    rank, world, dev = setup(timeout_s=20)
    g = torch.ones(4096, device=dev)
    for _ in range(4):  # seq 1-4
        dist.all_reduce(g)
    torch.cuda.synchronize()
    log(rank, "seq 1-4 done")
    if rank == 1:
        time.sleep(30)  # a straggler: data loading, a slow disk, a stuck host thread
    dist.all_reduce(g)  # seq 5
    torch.cuda.synchronize()
    log(rank, "seq 5 done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
