"""A long training loop whose one rank skips an all-reduce near the end.

Each step all-reduces the gradients (4096 floats), then the loss (one
float); NSP_STEPS steps (default 3000). At step NSP_STEPS - 20 rank 1
skips the loss all-reduce, as skip_allreduce.py does early. Run with a
short NCCLSPY_FLUSH_MS (say 20) the traces have hundreds of frames:
`ncclspy analyze` reads their indexes, steps over the frames where both
ranks agree, and names the skip at the same seq, with the same report,
as `ncclspy analyze --full-read` (issue #16).

NCCLSPY_FLUSH_MS=20 timeout 120 torchrun --nproc_per_node=2 examples/torch/late_skip.py
"""
import os

import torch
import torch.distributed as dist

from common import log, setup


def main():
    rank, world, dev = setup(timeout_s=30)
    steps = int(os.environ.get("NSP_STEPS", "3000"))
    grads = torch.ones(4096, device=dev)
    loss = torch.ones(1, device=dev)
    for step in range(steps):
        dist.all_reduce(grads)  # seq 2*step+1
        if rank == 1 and step == steps - 20:
            log(rank, f"step {step}: skips the loss all-reduce")
            continue
        dist.all_reduce(loss)  # seq 2*step+2
    torch.cuda.synchronize()
    log(rank, "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
