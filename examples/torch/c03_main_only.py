"""Case c03 (main-only): ten healthy all-reduces, then only rank 0 calls
all-gather (a metric gathered under `if is_main_process()`), while the
other ranks go on to their next all-reduce.

torchrun --nproc_per_node=2 examples/torch/c03_main_only.py   (any nranks >= 2)
"""
import torch
import torch.distributed as dist

from common import log, setup


def main():
    rank, world, dev = setup(timeout_s=20)
    g = torch.ones(4096, device=dev)
    for _ in range(10):  # seq 1-10
        dist.all_reduce(g)
    torch.cuda.synchronize()
    if rank == 0:  # seq 11 on rank 0 only: the bug
        metric = torch.tensor([1.0], device=dev)
        out = [torch.zeros_like(metric) for _ in range(world)]
        dist.all_gather(out, metric)
    dist.all_reduce(g)  # seq 11 on ranks 1.., seq 12 on rank 0
    torch.cuda.synchronize()
    log(rank, "finished (a healthy job never gets here this way)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
