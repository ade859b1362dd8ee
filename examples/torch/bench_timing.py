"""What completion tracking costs on the GPU: iterations per second of an
all-reduce loop (torch tensors, torch's current stream, 2 ranks) without
the shim, with records only (NCCLSPY_TRACK=0), with timing off
(completion by stream markers), with timing off and completion by untimed
CUDA events (NCCLSPY_COMPLETION=events), and with timing on.

All run in one process, in interleaved rounds, and medians are compared:
separate launches differ by ~15% at 4 KiB, more than the effect.  "Without
the shim" calls the real libnccl's ncclAllReduce (dlsym on its own handle)
on the same communicator as the mode it is paired with; the shim's modes
are communicators made under different settings (the shim reads them per
communicator).  Run under the shim:

  NCCLSPY_LIB=$PWD/build/shim/libncclspy.so LD_PRELOAD=$NCCLSPY_LIB \
    torchrun --nproc_per_node=2 examples/torch/bench_timing.py [rounds]
"""
import ctypes
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

NCCL_FLOAT32, NCCL_SUM = 7, 0


GLOO = [None]


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def real_nccl_path():
    for line in open("/proc/self/maps"):
        if "libnccl.so" in line and "ncclspy" not in line:
            return line.split()[-1]
    raise SystemExit("libnccl is not loaded")


def make_comm(shim, rank, world, timing, track="1", completion="markers"):
    os.environ["NCCLSPY_TIMING"] = timing  # read by the shim at comm init
    os.environ["NCCLSPY_TRACK"] = track
    os.environ["NCCLSPY_COMPLETION"] = completion
    uid = UniqueId()
    if rank == 0:
        assert shim.ncclGetUniqueId(ctypes.byref(uid)) == 0
    raw = ctypes.string_at(ctypes.addressof(uid), 128)  # .internal would stop at a NUL byte
    buf = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    dist.broadcast(buf, 0, group=GLOO[0])
    uid = UniqueId.from_buffer_copy(bytes(buf.tolist()))
    comm = ctypes.c_void_p()
    assert shim.ncclCommInitRank(ctypes.byref(comm), world, uid, rank) == 0
    return comm


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("cpu:gloo,cuda:nccl")
    gloo = dist.new_group(backend="gloo")
    GLOO[0] = gloo
    shim = ctypes.CDLL(os.environ["NCCLSPY_LIB"])
    real = ctypes.CDLL(real_nccl_path())
    for lib in (shim, real):
        lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                      ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    comm_off = make_comm(shim, rank, world, "0")
    comm_on = make_comm(shim, rank, world, "1")
    comm_rec = make_comm(shim, rank, world, "0", track="0")
    comm_ev = make_comm(shim, rank, world, "0", completion="events")
    os.environ["NCCLSPY_TIMING"], os.environ["NCCLSPY_TRACK"] = "1", "1"
    os.environ["NCCLSPY_COMPLETION"] = "markers"
    # Each shim mode is paired with "no shim" on its own communicator:
    # communicators of one process can differ by a few percent.
    modes = {"records only": (shim, comm_rec), "no shim/rec": (real, comm_rec),
             "timing off": (shim, comm_off), "no shim/off": (real, comm_off),
             "timing on": (shim, comm_on), "no shim/on": (real, comm_on),
             "timing off, events": (shim, comm_ev), "no shim/ev": (real, comm_ev)}
    base_of = {"records only": "no shim/rec", "timing off": "no shim/off", "timing on": "no shim/on",
               "timing off, events": "no shim/ev"}
    results = {}
    for nbytes, iters in ((4096, 2000), (64 << 20, 100)):
        x = torch.ones(nbytes // 4, device="cuda")
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ptr = ctypes.c_void_p(x.data_ptr())
        rates = {m: [] for m in modes}
        for r in range(rounds + 1):
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for m in order:
                lib, comm = modes[m]
                dist.barrier(group=gloo)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(iters):
                    lib.ncclAllReduce(ptr, ptr, nbytes // 4, NCCL_FLOAT32, NCCL_SUM, comm, stream)
                torch.cuda.synchronize()
                if r:  # round 0 warms up
                    rates[m].append(iters / (time.perf_counter() - t0))
        results[nbytes] = {m: statistics.median(v) for m, v in rates.items()}
        # For scale: the same all-reduce through torch.distributed (shim on,
        # timing on), whose per-call overhead is what real jobs pay.
        tl = []
        for _ in range(rounds):
            dist.barrier(group=gloo)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            tl.append(iters / (time.perf_counter() - t0))
        results[nbytes]["torch loop"] = statistics.median(tl)
    if rank == 0:
        print(f"all-reduce loop, {world} ranks, median of {rounds} interleaved rounds in one process")
        print("(cost = extra time per iteration against 'no shim' on the same communicator; 'of torch' =")
        print(" that time as a share")
        print(" of one dist.all_reduce iteration of the same size in the same process)")
        for nbytes, res in results.items():
            size = f"{nbytes // 1024} KiB" if nbytes < (1 << 20) else f"{nbytes >> 20} MiB"
            line = f"  {size:>7}: no shim {res['no shim/off']:9.1f} it/s"
            for m in ("records only", "timing off", "timing off, events", "timing on"):
                base = res[base_of[m]]
                extra_us = 1e6 / res[m] - 1e6 / base
                line += (f" | {m} {res[m]:9.1f} it/s ({100 * (1 - res[m] / base):+.2f}%, "
                         f"{extra_us:+.2f} us, {100 * extra_us * res['torch loop'] / 1e6:+.2f}% of torch)")
            line += f" | torch loop {res['torch loop']:.1f} it/s"
            print(line, flush=True)
    dist.barrier(group=gloo)


if __name__ == "__main__":
    main()
