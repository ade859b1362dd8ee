"""A DDP training step under AMP whose gradient all-reduce mismatches:
rank 1 keeps its output layer in float16 (a mixed-precision slip: one
rank ran `model[-1].half()`), so DDP's reducer puts that layer's
gradients in a float16 bucket where rank 0 has float32.  DDP's start-up
check compares parameter shapes, not dtypes, and init_sync=False skips
the start-up broadcast, so the first collective that differs is a
gradient all-reduce, issued by the autograd engine's thread while the
main thread waits in backward().  ncclspy must name that backward()
line on each rank.

torchrun --nproc_per_node=2 examples/torch/ddp_grad_dtype.py
"""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from common import log, setup


def make_model(rank, dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    if rank == 1:
        model[-1].half()  # the slip: rank 1's output layer in float16
    return model


def train_step(ddp, opt, scaler, dev):
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(ddp(x).float(), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()  # DDP's gradient all-reduces run here
    torch.cuda.synchronize()  # rank 0 or 1 hangs here
    return loss


def main():
    rank, world, dev = setup(timeout_s=20)
    model = make_model(rank, dev)
    try:
        ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=1, init_sync=False)
    except TypeError:  # a torch without init_sync
        ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(3):
        loss = train_step(ddp, opt, scaler, dev)
        log(rank, f"step {step} loss {loss.item():.4f}")
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
