"""Two ranks forced onto one GPU (a common launcher mistake: LOCAL_RANK
ignored, or CUDA_VISIBLE_DEVICES set alike for every rank).  NCCL refuses
with "Duplicate GPU detected"; ncclspy must name the duplicate GPU.

torchrun --nproc_per_node=2 examples/torch/dup_gpu.py
"""
import datetime
import os

import torch
import torch.distributed as dist


def main():
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(0)  # the bug: every rank on GPU 0
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=20))
    t = torch.ones(1024, device="cuda:0")
    try:
        dist.all_reduce(t)
        torch.cuda.synchronize()
        print(f"[rank {rank}] all-reduce returned {t[0].item()}", flush=True)
    except Exception as e:  # NCCL refuses: the error is the point
        print(f"[rank {rank}] {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
