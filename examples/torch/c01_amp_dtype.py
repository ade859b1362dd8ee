"""Case c01 (amp-dtype): rank 0 all-reduces a float16 tensor (autocast
output) where rank 1 all-reduces float32.  Seq 1 is healthy; seq 2
mismatches.  On 2xH200 with NCCL 2.28.9 rank 0 returns wrong values and
rank 1 hangs until the watchdog ends the job.

torchrun --nproc_per_node=2 examples/torch/c01_amp_dtype.py
"""
import torch
import torch.distributed as dist

from common import fr_dump, log, setup


def main():
    rank, world, dev = setup(timeout_s=20)
    a = torch.ones(1024, dtype=torch.float32, device=dev)
    dist.all_reduce(a)  # seq 1
    torch.cuda.synchronize()
    log(rank, f"seq 1 ok: {a[0].item()}")
    # seq 2: under autocast the gradient of rank 0 came out float16.
    dtype = torch.float16 if rank == 0 else torch.float32
    b = torch.ones(1024, dtype=dtype, device=dev)
    dist.all_reduce(b)
    torch.cuda.synchronize()  # rank 1 hangs here
    log(rank, f"seq 2 returned {b[:4].tolist()} (expected {float(world)})")
    fr_dump(rank)  # with TORCH_FR_DUMP_TEMP_FILE set: the flight recorder's view too
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
