"""What completion tracking costs on the GPU, 2 ranks, 4 KiB and 64 MiB
all-reduces: iterations per second without the shim, with records only
(NCCLSPY_TRACK=0), with timing off (completion by one untimed CUDA event
per call), and with timing on.

Two loops, each with every mode in one process, in interleaved rounds,
compared by medians (separate launches differ by ~15% at 4 KiB, more than
the effect):
- dist.all_reduce, one process group per mode (the shim reads its settings
  per communicator, when torch makes it); "no shim" is a communicator made
  with NCCLSPY_BENCH_PASSTHROUGH=1, whose calls the shim passes through
  unrecorded.  This is what a training job pays.
- ncclAllReduce from a tight ctypes loop against the real libnccl (dlsym
  on its own handle) on the same communicator.  It can be GPU-bound, so
  what the shim adds on the GPU (an event) shows here as it
  would not in the torch loop.
Run under the shim:

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


def make_comm(shim, rank, world, timing, track="1"):
    os.environ["NCCLSPY_TIMING"] = timing  # read by the shim at comm init
    os.environ["NCCLSPY_TRACK"] = track
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


def torch_group(world, **env):
    """A torch process group whose NCCL communicator is made under env (the
    shim reads its settings per communicator, when it is made)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    g = dist.new_group(ranks=list(range(world)), backend="nccl")
    x = torch.ones(1, device="cuda")
    dist.all_reduce(x, group=g)  # torch makes the communicator on first use
    torch.cuda.synchronize()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return g


SHIM_MODES = {
    "no shim": dict(NCCLSPY_BENCH_PASSTHROUGH="1"),
    "records only": dict(NCCLSPY_TRACK="0"),
    "timing off": dict(NCCLSPY_TIMING="0"),
    "timing on": dict(NCCLSPY_TIMING="1"),
}


def torch_loops(world, rounds, gloo):
    """dist.all_reduce loops, one process group per shim mode, interleaved
    rounds; returns {nbytes: {mode: median it/s}}."""
    groups = {m: torch_group(world, **env) for m, env in SHIM_MODES.items()}
    results = {}
    for nbytes, iters in ((4096, 2000), (64 << 20, 100)):
        x = torch.ones(nbytes // 4, device="cuda")
        rates = {m: [] for m in groups}
        for r in range(rounds + 1):
            order = list(groups) if r % 2 == 0 else list(reversed(groups))
            for m in order:
                dist.barrier(group=gloo)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(iters):
                    dist.all_reduce(x, group=groups[m])
                torch.cuda.synchronize()
                if r:  # round 0 warms up
                    rates[m].append(iters / (time.perf_counter() - t0))
        results[nbytes] = {m: statistics.median(v) for m, v in rates.items()}
    return results


def ctypes_loops(shim, real, rank, world, rounds, gloo):
    """ncclAllReduce straight from a ctypes loop (no torch between calls):
    a tight loop that can be GPU-bound, so GPU-side work the shim adds
    (an event) shows here as it would not in a torch loop."""
    comm_off = make_comm(shim, rank, world, "0")
    comm_on = make_comm(shim, rank, world, "1")
    comm_rec = make_comm(shim, rank, world, "0", track="0")
    os.environ["NCCLSPY_TIMING"], os.environ["NCCLSPY_TRACK"] = "1", "1"
    # Each shim mode is paired with "no shim" on its own communicator:
    # communicators of one process can differ by a few percent.
    modes = {"records only": (shim, comm_rec), "no shim/rec": (real, comm_rec),
             "timing off": (shim, comm_off), "no shim/off": (real, comm_off),
             "timing on": (shim, comm_on), "no shim/on": (real, comm_on)}
    base_of = {"records only": "no shim/rec", "timing off": "no shim/off", "timing on": "no shim/on"}
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
                if r:
                    rates[m].append(iters / (time.perf_counter() - t0))
        med = {m: statistics.median(v) for m, v in rates.items()}
        results[nbytes] = {m: (med[m], med[b]) for m, b in base_of.items()}
    return results


def size_name(nbytes):
    return f"{nbytes // 1024} KiB" if nbytes < (1 << 20) else f"{nbytes >> 20} MiB"


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("cpu:gloo,cuda:nccl")
    gloo = dist.new_group(backend="gloo")
    GLOO[0] = gloo
    shim = ctypes.CDLL(os.environ["NCCLSPY_LIB"])
    tl = torch_loops(world, rounds, gloo)
    real = ctypes.CDLL(real_nccl_path())
    for lib in (shim, real):
        lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                      ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    cl = ctypes_loops(shim, real, rank, world, rounds, gloo)
    if rank == 0:
        print(f"dist.all_reduce loop, {world} ranks, median of {rounds} interleaved rounds in one process,")
        print("one process group per mode ('no shim': its communicator passes calls through unrecorded)")
        for nbytes, res in tl.items():
            base = res["no shim"]
            line = f"  {size_name(nbytes):>7}: no shim {base:9.1f} it/s"
            for m in SHIM_MODES:
                if m == "no shim":
                    continue
                extra_us = 1e6 / res[m] - 1e6 / base
                line += f" | {m} {res[m]:9.1f} it/s ({100 * (1 - res[m] / base):+.2f}%, {extra_us:+.2f} us)"
            print(line, flush=True)
        print(f"ctypes ncclAllReduce loop (tight, may be GPU-bound), cost against the real libnccl on the same communicator")
        for nbytes, res in cl.items():
            line = f"  {size_name(nbytes):>7}:"
            for m, (v, base) in res.items():
                extra_us = 1e6 / v - 1e6 / base
                line += f" | {m} {v:9.1f} it/s ({100 * (1 - v / base):+.2f}%, {extra_us:+.2f} us)"
            print(line, flush=True)
    dist.barrier(group=gloo)


if __name__ == "__main__":
    main()
