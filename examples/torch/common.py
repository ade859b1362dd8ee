"""Shared set-up for the torchrun examples: one process per GPU, NCCL.

Every example keeps NVLink multicast off (NCCL_NVLS_ENABLE=0): on shared
hosts a program that uses it can take the GPUs out of service.
"""
import datetime
import os

import torch
import torch.distributed as dist


def setup(timeout_s=30):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    # A short timeout: the failure cases hang on purpose, and the watchdog
    # ends them (and the trace must survive that).
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=timeout_s))
    return rank, dist.get_world_size(), torch.device("cuda", local_rank)


def log(rank, msg):
    print(f"[rank {rank}] {msg}", flush=True)
