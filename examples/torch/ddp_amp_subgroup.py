"""A healthy DDP loop under AMP with a subgroup all-gather each step:
ncclspy must report nothing.

The world splits into subgroups of two ranks (torch.distributed.
new_subgroups); each step every rank trains under autocast, then
all-gathers a float16 statistic inside its subgroup. The subgroups'
communicators have their own ranks (job ranks 2 and 3 are ranks 0 and 1
of theirs), which the report must not confuse.

torchrun --nproc_per_node=4 examples/torch/ddp_amp_subgroup.py [steps]
"""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import log, setup


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rank, world, dev = setup()
    sub, _ = dist.new_subgroups(group_size=2)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(steps):
        x = torch.randn(32, 256, device=dev)
        y = torch.randint(0, 10, (32,), device=dev)
        with torch.autocast("cuda", dtype=torch.float16):
            out = ddp(x)
            loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        stat = out.detach().mean(dim=0).half()
        gathered = [torch.empty_like(stat) for _ in range(dist.get_world_size(sub))]
        dist.all_gather(gathered, stat, group=sub)
    torch.cuda.synchronize()
    log(rank, f"done {steps} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
