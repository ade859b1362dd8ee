"""A rank that never makes the first collective on a new process group.

Both ranks all-reduce on the world, then make a new group of both ranks
(PyTorch creates a group's NCCL communicator at its first collective).
Rank 0 all-reduces on the new group, so it enters communicator creation
(ncclCommInitRankConfig) and waits there for rank 1, which took another
code path and sleeps. Nothing returns: without calls in flight, rank 0's
trace would end at its last world all-reduce, as rank 1's does. Under the
shim, `ncclspy analyze` names rank 0 waiting inside communicator creation
and rank 1 as the one to look at. The job's time limit ends it
(run_gpu.sh new_group_skip:40).

timeout 40 torchrun --nproc_per_node=2 examples/torch/new_group_skip.py
"""
import time

import torch
import torch.distributed as dist

from common import log, setup


def main():
    rank, world, dev = setup(timeout_s=120)
    g = torch.ones(1024, device=dev)
    for _ in range(2):  # world seq 1-2
        dist.all_reduce(g)
    torch.cuda.synchronize()
    log(rank, "world seq 1-2 done")
    group = dist.new_group(ranks=list(range(world)))
    if rank == 1:
        log(rank, "takes another code path: never all-reduces on the new group")
        time.sleep(3600)
    log(rank, "first all-reduce on the new group: creates its communicator")
    dist.all_reduce(g, group=group)  # rank 0 waits in communicator creation
    torch.cuda.synchronize()
    log(rank, "new group seq 1 done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
