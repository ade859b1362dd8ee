"""What completion tracking costs on the GPU, 2 ranks, 4 KiB and 64 MiB
all-reduces: iterations per second without the shim, with records only
(no CUDA events), with timing off (completion by one untimed CUDA event
per call), and with timing on.

Every mode runs on one communicator in one process, in interleaved
rounds of short chunks (a few ms each; hundreds of rounds), compared by
the median of each round's difference against "no shim", with a 95%
bootstrap interval: separate launches differ by ~15% at 4 KiB,
and two communicators of one process by up to 10%, both more than the
effect.  The communicator is made with NCCLSPY_BENCH_MODE_FILE set; each
round writes the mode into that file ('0' pass through unrecorded = "no
shim", '1' records only, '2' timing off, '3' timing on) and the shim reads
it at each call ('4' and '5' take timing off apart: see MODES).  "No shim" still goes through the shim's entry point and
its communicator lookup (a few ns; bench/nsp_bench measures the whole
wrapper on the CPU), so the costs below are slightly understated by that.

Two loops:
- dist.all_reduce on a process group: what a training job pays.
- ncclAllReduce from a tight ctypes loop on the same kind of communicator,
  against the real libnccl (dlsym on its own handle) as the baseline.  It
  can be GPU-bound, so what the shim adds on the GPU (an event) shows here
  as it would not in the torch loop.
Run under the shim:

  NCCLSPY_LIB=$PWD/build/shim/libncclspy.so LD_PRELOAD=$NCCLSPY_LIB \
    torchrun --nproc_per_node=2 examples/torch/bench_timing.py [rounds (600)]
"""
import ctypes
import gc
import os
import random
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

NCCL_FLOAT32, NCCL_SUM = 7, 0
MODES = {"no shim": b"0", "records only": b"1", "timing off": b"2", "timing on": b"3",
         # the parts of timing off (bench-only modes of the shim):
         "capture check": b"5",  # records + the stream's capture status and context
         "event only": b"4"}     # + the untimed event, given back at once (no poller)
# bytes, iterations per chunk (a few ms), rounds relative to the command
# line's (a 64 MiB chunk takes about as long as a 4 KiB one)
SIZES = ((4096, 100, 1.0), (64 << 20, 10, 0.5))


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class ModeFile:
    """This rank's NCCLSPY_BENCH_MODE_FILE: one byte, written in place
    (never truncated: the shim has it mapped)."""

    def __init__(self, rank):
        fd, self.path = tempfile.mkstemp(prefix=f"nsp-bench-mode-{rank}-")
        os.write(fd, b"3")
        self.fd = fd

    def set(self, mode):
        os.pwrite(self.fd, MODES[mode], 0)


def real_nccl_path():
    for line in open("/proc/self/maps"):
        if "libnccl.so" in line and "ncclspy" not in line:
            return line.split()[-1]
    raise SystemExit("libnccl is not loaded")


def with_env(env, make):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return make()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def torch_group(world):
    g = dist.new_group(ranks=list(range(world)), backend="nccl")
    x = torch.ones(1, device="cuda")
    dist.all_reduce(x, group=g)  # torch makes the communicator on first use
    torch.cuda.synchronize()
    return g


def make_comm(shim, rank, world, gloo):
    uid = UniqueId()
    if rank == 0:
        assert shim.ncclGetUniqueId(ctypes.byref(uid)) == 0
    raw = ctypes.string_at(ctypes.addressof(uid), 128)  # .internal would stop at a NUL byte
    buf = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    dist.broadcast(buf, 0, group=gloo)
    uid = UniqueId.from_buffer_copy(bytes(buf.tolist()))
    comm = ctypes.c_void_p()
    assert shim.ncclCommInitRank(ctypes.byref(comm), world, uid, rank) == 0
    return comm


def rounds_of(modes, rounds, gloo, loop):
    """Seconds per iteration for each mode in each round, and seconds of
    host time per call (the loop alone, before waiting for the GPU: what
    the calls cost the calling thread, whether or not the GPU keeps up).  A round runs
    every mode once, as a short chunk (both ranks start it together, after
    a barrier, and it ends when the GPU is done); the order of the modes
    rotates and reverses from round to round, so each mode holds each
    position equally often.  Round 0 warms up.  modes: name -> setup()."""
    names = list(modes)
    times = {m: [] for m in modes}
    host = {m: [] for m in modes}
    gc.collect()
    gc.disable()  # a collection inside a chunk would land on one mode
    try:
        for r in range(rounds + 1):
            k = r % len(names)
            order = names[k:] + names[:k]
            if (r // len(names)) % 2:
                order.reverse()
            for m in order:
                modes[m]()
                dist.barrier(group=gloo)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                n = loop(m)
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                if r:
                    times[m].append((time.perf_counter() - t0) / n)
                    host[m].append((t1 - t0) / n)
    finally:
        gc.enable()
    return times, host


def cost(times, mode, base):
    """(median it/s, median per-round extra us against base, and a 95%
    bootstrap interval of that median)."""
    d = [(a - b) * 1e6 for a, b in zip(times[mode], times[base])]
    med = statistics.median(d)
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(1000))
    return 1 / statistics.median(times[mode]), med, boots[25], boots[974]


def report(title, results, base, which=0):
    """which: 0 iterations per second, 1 host time per call."""
    print(title)
    for nbytes, both in results.items():
        times = both[which]
        name = f"{nbytes // 1024} KiB" if nbytes < (1 << 20) else f"{nbytes >> 20} MiB"
        base_s = statistics.median(times[base])
        if which:
            print(f"  {name:>7}: {base} {base_s * 1e6:.3f} us per call ({len(times[base])} rounds)")
        else:
            print(f"  {name:>7}: {base} {1 / base_s:9.1f} it/s ({base_s * 1e6:.2f} us per iteration, "
                  f"{len(times[base])} rounds)")
        for m in times:
            if m == base:
                continue
            rate, med, lo, hi = cost(times, m, base)
            us = base_s * 1e6
            head = f"{m:13} {1e6 / rate:9.3f} us" if which else f"{m:13} {rate:9.1f} it/s"
            print(f"           {head}: {med:+.3f} us per {'call' if which else 'iteration'} = "
                  f"{100 * med / us:+.2f}% (95% interval {100 * lo / us:+.2f}% .. {100 * hi / us:+.2f}%)",
                  flush=True)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("cpu:gloo,cuda:nccl")
    gloo = dist.new_group(backend="gloo")
    shim = ctypes.CDLL(os.environ["NCCLSPY_LIB"])
    mode_file = ModeFile(rank)
    bench_env = {"NCCLSPY_BENCH_MODE_FILE": mode_file.path}

    # dist.all_reduce on one process group, every mode.
    group = with_env(bench_env, lambda: torch_group(world))
    setters = {m: (lambda m=m: mode_file.set(m)) for m in MODES}
    torch_results = {}
    for nbytes, iters, share in SIZES:
        x = torch.ones(nbytes // 4, device="cuda")

        def loop(_m, x=x, iters=iters):
            for _ in range(iters):
                dist.all_reduce(x, group=group)
            return iters
        torch_results[nbytes] = rounds_of(setters, int(rounds * share), gloo, loop)

    # ctypes ncclAllReduce on one communicator: the shim in each mode, and
    # the real libnccl.
    real = ctypes.CDLL(real_nccl_path())
    for lib in (shim, real):
        lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                      ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    comm = with_env(bench_env, lambda: make_comm(shim, rank, world, gloo))
    lib_of = {"real libnccl": real, **{m: shim for m in MODES if m != "no shim"}}
    csetters = {m: (lambda m=m: mode_file.set("timing on" if m == "real libnccl" else m)) for m in lib_of}
    ctypes_results = {}
    for nbytes, iters, share in SIZES:
        x = torch.ones(nbytes // 4, device="cuda")
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ptr = ctypes.c_void_p(x.data_ptr())

        def cloop(m, ptr=ptr, stream=stream, count=nbytes // 4, iters=iters):
            f = lib_of[m].ncclAllReduce
            for _ in range(iters):
                f(ptr, ptr, count, NCCL_FLOAT32, NCCL_SUM, comm, stream)
            return iters
        ctypes_results[nbytes] = rounds_of(csetters, int(rounds * share), gloo, cloop)

    if rank == 0:
        report(f"dist.all_reduce, {world} ranks, one process group in every mode, interleaved rounds, "
               "medians:", torch_results, "no shim")
        report("ctypes ncclAllReduce (tight, may be GPU-bound), one communicator, against the real "
               "libnccl:", ctypes_results, "real libnccl")
        report("the same ctypes loop, host time per call (the calling thread's cost, before waiting for "
               "the GPU):", ctypes_results, "real libnccl", which=1)
    dist.barrier(group=gloo)
    os.close(mode_file.fd)
    os.unlink(mode_file.path)


if __name__ == "__main__":
    main()
