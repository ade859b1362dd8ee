"""CUDA graph capture while NCCL work is still running, under the shim.

Each round enqueues two 1 GiB all-reduces through ctypes ncclAllReduce (as
vLLM's pynccl does; torch's process group, which waits for its own work
before a capture, is not involved), then at once captures a CUDA graph of
small matrix products and one small ctypes all-reduce on a side stream,
in torch's default GLOBAL capture mode, and replays it (the replayed
all-reduce must sum the ranks' ones).  The shim records the captured
all-reduce as captured: no event goes into the graph, and it is never
queried.  While the all-reduces run, the shim's poller
queries their completion events: from a thread in the GLOBAL interaction
mode, such a query invalidates the capture (capture_end fails); the shim's
poller runs in THREAD_LOCAL mode, so every capture must succeed.

  NCCLSPY_LIB=$PWD/build/shim/libncclspy.so LD_PRELOAD=$NCCLSPY_LIB \
    torchrun --nproc_per_node=2 examples/torch/graph_capture.py [rounds (20)]

Prints, per rank, how many captures succeeded; exits 1 if any failed.
"""
import ctypes
import os
import sys

import torch
import torch.distributed as dist

from bench_timing import NCCL_FLOAT32, NCCL_SUM, make_comm, real_nccl_path


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("cpu:gloo,cuda:nccl")
    gloo = dist.new_group(backend="gloo")
    lib = ctypes.CDLL(os.environ.get("NCCLSPY_LIB") or real_nccl_path())
    lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    comm = make_comm(lib, rank, world, gloo)
    big = torch.zeros(256 << 20, device="cuda")  # 1 GiB of float32
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    a = torch.randn(128, 128, device="cuda")
    small = torch.ones(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside a capture (cuBLAS makes its handle here)
        y = torch.tanh(a @ a)
    torch.cuda.synchronize()
    ok, errors = 0, []
    for r in range(rounds):
        for _ in range(2):
            assert lib.ncclAllReduce(big.data_ptr(), big.data_ptr(), big.numel(), NCCL_FLOAT32, NCCL_SUM, comm,
                                     stream) == 0
        g = torch.cuda.CUDAGraph()
        capturing = False
        try:
            with torch.cuda.stream(side):
                g.capture_begin()  # capture_error_mode "global", torch's default
                capturing = True
                y = a
                for _ in range(1000):  # some ms of capturing: the poller looks every 2 ms
                    y = torch.tanh(y @ a)
                assert lib.ncclAllReduce(small.data_ptr(), small.data_ptr(), small.numel(), NCCL_FLOAT32,
                                         NCCL_SUM, comm, side.cuda_stream) == 0
                capturing = False
                g.capture_end()
            small.fill_(1)
            torch.cuda.synchronize()
            g.replay()
            torch.cuda.synchronize()
            want = a
            for _ in range(1000):
                want = torch.tanh(want @ a)
            if not torch.allclose(y, want, atol=1e-3):
                errors.append(f"round {r}: the replayed graph gave other products")
            elif not bool((small == world).all()):
                errors.append(f"round {r}: the replayed all-reduce gave {small[0].item()}, not {world}")
            else:
                ok += 1
        except RuntimeError as e:  # torch.AcceleratorError is one
            errors.append(f"round {r}: {str(e).splitlines()[0]}")
            if capturing:
                try:
                    with torch.cuda.stream(side):
                        g.capture_end()
                except RuntimeError:
                    pass
            torch.cuda.synchronize()
        dist.barrier(group=gloo)
    print(f"[rank {rank}] graph captures with NCCL work running: {ok} of {rounds} succeeded", flush=True)
    for e in errors[:3]:
        print(f"[rank {rank}]   {e}", flush=True)
    dist.barrier(group=gloo)
    sys.exit(0 if ok == rounds else 1)


if __name__ == "__main__":
    main()
