"""A healthy DDP training loop under AMP: ncclspy must report nothing.

torchrun --nproc_per_node=2 examples/torch/ddp_amp.py [steps]
"""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import log, setup


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    rank, world, dev = setup()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
        torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
    ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(steps):
        x = torch.randn(64, 512, device=dev)
        y = torch.randint(0, 10, (64,), device=dev)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    loss_t = loss.detach().float()
    dist.all_reduce(loss_t)
    torch.cuda.synchronize()
    log(rank, f"done {steps} steps, mean loss {loss_t.item() / world:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
