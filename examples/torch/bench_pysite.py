"""What Python call sites cost a training loop: dist.all_reduce of 4 KiB
in one process (world size 1), Python sites on and off, in interleaved
rounds on one communicator, compared by the median of each round's
difference (with a 95% bootstrap interval), as bench_timing.py does.

The communicator is made with NCCLSPY_BENCH_MODE_FILE set; each round
writes "3-" (everything on, as the default settings) or "3p" (the same
without the Python call site) into that file, and the shim reads it at
each call.  The loop runs under a Python stack 10 frames deep, as a
training step's would be.

  NCCLSPY_LIB=$PWD/build/shim/libncclspy.so LD_PRELOAD=$NCCLSPY_LIB \
    torchrun --nproc_per_node=1 examples/torch/bench_pysite.py [rounds (400)]
"""
import os
import sys

import torch
import torch.distributed as dist

import bench_timing as bt

MODES = {"python sites off": b"3p", "python sites on": b"3-"}
ITERS = 200


def nested(depth, fn):
    """fn() under depth more Python frames."""
    return fn() if depth == 0 else nested(depth - 1, fn)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("cpu:gloo,cuda:nccl")
    gloo = dist.new_group(backend="gloo")
    mode_file = bt.ModeFile(rank)
    os.pwrite(mode_file.fd, MODES["python sites on"], 0)  # two bytes before the shim maps it
    group = bt.with_env({"NCCLSPY_BENCH_MODE_FILE": mode_file.path}, lambda: bt.torch_group(world))
    setters = {m: (lambda m=m: os.pwrite(mode_file.fd, MODES[m], 0)) for m in MODES}
    x = torch.ones(1024, device="cuda")

    def loop(_m):
        def calls():
            for _ in range(ITERS):
                dist.all_reduce(x, group=group)
            return ITERS
        return nested(6, calls)

    both = bt.rounds_of(setters, rounds, gloo, loop)
    if rank == 0:
        bt.report("dist.all_reduce 4 KiB, 1 rank: iterations per second", {4096: both}, "python sites off", 0)
        bt.report("dist.all_reduce 4 KiB, 1 rank: host time per call", {4096: both}, "python sites off", 1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
