"""Case c11 (straggler hang): four healthy all-reduces, then rank 1 sleeps
600 s before seq 5 while rank 0 waits inside it.  The job's time limit
ends it (examples/torch/run_gpu.sh c11_straggler:25 kills it after 25 s,
as a scheduler would).  The rank to look at is rank 1, which never
arrived.  Measured on 2xH200 with torch 2.11: the 20 s watchdog timeout
set below did not end the job (rank 0 stayed in seq 5 past 30 s), so do
not count on it.

timeout 25 torchrun --nproc_per_node=2 examples/torch/c11_straggler.py
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
        time.sleep(600)  # a straggler: data loading, a slow disk, a stuck host thread
    dist.all_reduce(g)  # seq 5
    torch.cuda.synchronize()
    log(rank, "seq 5 done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
