"""Shared set-up for the torchrun examples: one process per GPU, NCCL
(NSP_ONE_GPU=1: every rank on GPU 0, for a host with one GPU).

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
    if os.environ.get("NSP_ONE_GPU"):
        # Every rank on GPU 0 (a host with one GPU): each rank its own
        # NCCL_HOSTID, so NCCL takes them for separate hosts and joins
        # them over sockets (slow, but the collectives are the same).
        os.environ["NCCL_HOSTID"] = f"nsp-rank-{rank}"
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        local_rank = 0
    torch.cuda.set_device(local_rank)
    # A short timeout: the failure cases hang on purpose, and the watchdog
    # ends them (and the trace must survive that).
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=timeout_s))
    return rank, dist.get_world_size(), torch.device("cuda", local_rank)


def log(rank, msg):
    print(f"[rank {rank}] {msg}", flush=True)


def fr_dump(rank):
    """With TORCH_FR_DUMP_TEMP_FILE set (and TORCH_NCCL_TRACE_BUFFER_SIZE > 0),
    writes this rank's PyTorch flight recorder dump where its watchdog
    would on a timeout: so a rank that did not time out can be read by
    torchfrtrace next to one that did (ncclspy side by side with it)."""
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
    if not prefix:
        return
    data = torch._C._distributed_c10d._dump_nccl_trace()
    with open(f"{prefix}{rank}", "wb") as f:
        f.write(data)
