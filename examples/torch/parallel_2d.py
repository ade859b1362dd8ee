"""A 2-D parallel job: tensor parallel (TP) x data parallel (DP), the GPU
twin of the CPU cases c2d-healthy, c2d-dp-mismatch and c2d-stall
(tests/cases/nsp_cases.c, tests/integration/test_2d.c).

    torchrun --nproc_per_node=8 examples/torch/parallel_2d.py MODE [options]
    MODE: healthy       200 steps of a small TP MLP under AMP; exits 0
          dp-mismatch   at step 3 the odd rank (default 5) all-reduces its
                        gradient bucket in float16, its DP peers in float32;
                        the job hangs until the watchdog (--timeout) ends it
          stall         the stall rank (default 3) sleeps NSP_C2D_SLEEP_S
                        seconds (default 60) before step 5's forward TP
                        all-reduce; the others wait until the watchdog ends
                        the job (or the scheduler kills it)

Layout (8 ranks, --tp 2): TP groups of consecutive ranks {0,1} {2,3} {4,5}
{6,7} (NCCL color rank // tp), DP groups of ranks with the same TP rank
{0,2,4,6} {1,3,5,7} (color rank % tp); and, nested, each DP group split
again into shards of 2 ({0,2} {4,6} {1,3} {5,7}, as HSDP's shard groups),
with dist.split_group where this torch has it, else new_group.  The world
group is initialized eagerly (device_id), so torch makes the groups with
ncclCommSplit from it, as the CPU cases do.

Per step: TP all-reduces the activations (forward, row-parallel output) and
their gradients (backward, column-parallel input) of each block, in
float16 under autocast; DP all-reduces the flattened float32 gradients;
the shard group all-reduces the step's loss.  Every 50 steps the DP
replicas check that their weights agree (min == max of a checksum).

A smoke test on 2 GPUs: --tp 2 (TP=2 x DP=1) or --tp 1 (TP=1 x DP=2):
    torchrun --nproc_per_node=2 examples/torch/parallel_2d.py healthy --tp 1
(dp-mismatch needs DP >= 2; with 2 ranks its odd rank is 1.)

NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as in every example here.
"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import log

STEPS = 200
MISMATCH_STEP = 3
STALL_STEP = 5


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["healthy", "dp-mismatch", "stall"])
    p.add_argument("--tp", type=int, default=2, help="tensor-parallel size (default 2)")
    p.add_argument("--steps", type=int, default=STEPS, help=f"training steps (default {STEPS})")
    p.add_argument("--timeout", type=float, default=None,
                   help="NCCL watchdog timeout, seconds (default: 600 healthy, 30 otherwise)")
    p.add_argument("--odd-rank", type=int, default=None,
                   help="dp-mismatch: the rank that uses float16 (default: TP rank tp-1 of DP index min(2, dp-1))")
    p.add_argument("--stall-rank", type=int, default=None,
                   help="stall: the rank that sleeps (default min(3, world-1))")
    p.add_argument("--no-nested", action="store_true", help="no shard groups split from DP")
    return p.parse_args()


def setup(timeout_s):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    timeout = datetime.timedelta(seconds=timeout_s)
    try:
        # device_id: the world communicator is made now, and new groups are
        # split from it (ncclCommSplit) instead of initialized anew.
        dist.init_process_group("nccl", timeout=timeout, device_id=dev)
    except TypeError:  # torch < 2.3: no device_id
        dist.init_process_group("nccl", timeout=timeout)
    return rank, dist.get_world_size(), dev


def make_groups(rank, world, tp, nested):
    """Returns (tp_pg, dp_pg, shard_pg or None, description)."""
    dp = world // tp
    tp_ranks = [list(range(i * tp, (i + 1) * tp)) for i in range(dp)]  # color rank // tp
    dp_ranks = [list(range(j, world, tp)) for j in range(tp)]  # color rank % tp
    # Every rank creates every group, in the same order (new_group's rule).
    tp_pg, _ = dist.new_subgroups_by_enumeration(tp_ranks)
    dp_pg, _ = dist.new_subgroups_by_enumeration(dp_ranks)
    my_dp = dp_ranks[rank % tp]
    shard_pg, how = None, "none"
    if nested and dp >= 2 and dp % 2 == 0:
        # Make the DP communicator now: split_group needs its parent initialized.
        warm = torch.zeros(1, device="cuda")
        dist.all_reduce(warm, group=dp_pg)
        torch.cuda.synchronize()
        split = getattr(dist, "split_group", None)
        doc = getattr(split, "__doc__", "") or ""
        if split is not None and "group rank (instead of global rank)" in doc:
            # ranks of the parent (DP) group: pairs of DP ranks
            try:
                shard_pg = split(parent_pg=dp_pg, split_ranks=[[k, k + 1] for k in range(0, dp, 2)])
                how = "split_group from DP (nested ncclCommSplit)"
            except (RuntimeError, ValueError, TypeError) as e:  # refused before any split
                log(rank, f"split_group refused ({e}); shards from the world instead")
        if shard_pg is None:
            shard_ranks = [[g[k], g[k + 1]] for g in dp_ranks for k in range(0, dp, 2)]
            shard_pg, _ = dist.new_subgroups_by_enumeration(shard_ranks)
            how = "new_group (split from the world)"
    desc = (f"TP={tp} x DP={dp}: tp {tp_ranks[rank // tp]}, dp {my_dp}"
            + (f", shard {[r for r in my_dp if my_dp.index(r) // 2 == my_dp.index(rank) // 2]} ({how})"
               if shard_pg is not None else ""))
    return tp_pg, dp_pg, shard_pg, desc


class CopyToTP(torch.autograd.Function):
    """Identity forward; all-reduces the gradient over TP in backward (the
    input of a column-parallel layer)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous().clone()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class ReduceFromTP(torch.autograd.Function):
    """All-reduces the partial outputs of a row-parallel layer over TP;
    identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        y = x.contiguous().clone()
        dist.all_reduce(y, group=group)
        return y

    @staticmethod
    def backward(ctx, g):
        return g, None


class TPBlock(torch.nn.Module):
    """x + RowParallel(gelu(ColumnParallel(x))): hidden -> ffn/tp -> hidden."""

    def __init__(self, hidden, ffn, tp, group):
        super().__init__()
        self.group = group
        self.w1 = torch.nn.Linear(hidden, ffn // tp)
        self.w2 = torch.nn.Linear(ffn // tp, hidden, bias=False)
        self.bias = torch.nn.Parameter(torch.zeros(hidden))  # after the reduction: replicated

    def forward(self, x):
        h = F.gelu(self.w1(CopyToTP.apply(x, self.group)))
        return x + ReduceFromTP.apply(self.w2(h), self.group) + self.bias


def dp_allreduce_grads(params, dp_pg, dp, float16):
    """One flattened gradient bucket, all-reduced over DP (sum, then mean)."""
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])  # float32
    if float16:
        flat = flat.half()  # as if autocast had produced this bucket
    dist.all_reduce(flat, group=dp_pg)
    flat = flat.float() / dp
    off = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[off:off + n].view_as(g))
        off += n


def check_replicas(params, dp_pg, rank, step):
    """The DP replicas' weights must agree: min == max of a checksum."""
    s = torch.stack([p.detach().double().sum() for p in params]).sum().reshape(1)
    lo, hi = s.clone(), s.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=dp_pg)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=dp_pg)
    if lo.item() != hi.item():
        log(rank, f"step {step}: DP replicas differ: checksum {lo.item()!r} vs {hi.item()!r}")
        sys.exit(1)


def main():
    args = parse_args()
    timeout_s = args.timeout if args.timeout is not None else (600 if args.mode == "healthy" else 30)
    rank, world, dev = setup(timeout_s)
    tp = args.tp
    if tp < 1 or world % tp:
        log(rank, f"--tp {tp} does not divide the world size {world}")
        return 2
    dp = world // tp
    tp_rank, dp_index = rank % tp, rank // tp
    odd = args.odd_rank if args.odd_rank is not None else min(2, dp - 1) * tp + (tp - 1)
    stall_rank = args.stall_rank if args.stall_rank is not None else min(3, world - 1)
    if args.mode == "dp-mismatch" and dp < 2:
        log(rank, "dp-mismatch needs DP >= 2 (try --tp 1)")
        return 2

    tp_pg, dp_pg, shard_pg, desc = make_groups(rank, world, tp, not args.no_nested)
    log(rank, f"{args.mode}: {desc}")

    # Same weights across a DP group (same TP rank), different TP shards;
    # same data within a TP group, different across DP.
    torch.manual_seed(1234 + tp_rank)
    hidden, ffn, nblocks, batch = 256, 1024, 2, 32
    model = torch.nn.Sequential(*[TPBlock(hidden, ffn, tp, tp_pg) for _ in range(nblocks)]).to(dev)
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    gen = torch.Generator(device=dev)
    sleep_s = int(os.environ.get("NSP_C2D_SLEEP_S", "60"))

    for step in range(1, args.steps + 1):
        gen.manual_seed(1000 * dp_index + step)
        x = torch.randn(batch, hidden, device=dev, generator=gen)
        target = torch.randn(batch, hidden, device=dev, generator=gen)
        if args.mode == "stall" and step == STALL_STEP and rank == stall_rank:
            log(rank, f"stalls: sleeps {sleep_s} s before step {step}'s forward TP all-reduce")
            time.sleep(sleep_s)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.mse_loss(model(x).float(), target)  # TP all-reduces (forward)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()  # TP all-reduces (backward)
        mismatch = args.mode == "dp-mismatch" and step == MISMATCH_STEP and rank == odd
        if mismatch:
            log(rank, f"step {step}: all-reduces its gradients in float16 (DP peers: float32)")
        dp_allreduce_grads(params, dp_pg, dp, mismatch)
        scaler.step(opt)
        scaler.update()
        if shard_pg is not None:
            stats = loss.detach().float().reshape(1)
            dist.all_reduce(stats, group=shard_pg)
        torch.cuda.synchronize()  # where a real loop reads its loss
        if step % 50 == 0 or step == args.steps:
            check_replicas(params, dp_pg, rank, step)
            log(rank, f"step {step}: loss {loss.item():.4f}, scale {scaler.get_scale():g}")
    log(rank, f"done {args.steps} steps")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
