"""A rank that skips one all-reduce in the middle of its training loop.

Each step all-reduces the gradients (4096 floats), then the loss (one
float) for logging. On step 5 rank 1 skips the loss all-reduce (a
rank-dependent `continue`, as a logging path might take). From then on
rank 1's collectives line up with rank 0's one seq earlier: its next
gradient all-reduce meets rank 0's loss all-reduce. NCCL does not check;
the job hangs or computes garbage, and PyTorch's watchdog ends it.
`ncclspy analyze` names rank 1 as having skipped an all-reduce at that
seq (not a shape problem), with the line of this file on each side.

timeout 60 torchrun --nproc_per_node=2 examples/torch/skip_allreduce.py
"""
import torch
import torch.distributed as dist

from common import log, setup


def run(steps, skip_at):
    """steps steps; rank 1 skips the loss all-reduce of step skip_at."""
    rank, world, dev = setup(timeout_s=30)
    grads = torch.ones(4096, device=dev)
    loss = torch.ones(1, device=dev)
    for step in range(steps):
        dist.all_reduce(grads)  # seq 2*step+1
        if rank == 1 and step == skip_at:
            log(rank, f"step {step}: skips the loss all-reduce")
            continue
        dist.all_reduce(loss)  # seq 2*step+2
    torch.cuda.synchronize()
    log(rank, "done")
    dist.destroy_process_group()


def main():
    run(10, 5)


if __name__ == "__main__":
    main()
