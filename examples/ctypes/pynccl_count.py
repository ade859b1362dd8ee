"""Two processes that reach NCCL only through ctypes, as vLLM's and
SGLang's PyNccl do: ctypes.CDLL on torch's own libnccl, then one
attribute (a dlsym) per entry point. torch.distributed is used only over
gloo, to pass the ncclUniqueId. At step 3, rank 1 all-reduces 1000
elements where rank 0 all-reduces 1024: a count mismatch, which NCCL does
not check (rank 0 waits for bytes that never come, or gets wrong values).
Under the shim, its calls are traced and `ncclspy analyze` names the
mismatch. The job's time limit ends it (run_gpu.sh ctypes/pynccl_count:40).

timeout 40 torchrun --nproc_per_node=2 examples/ctypes/pynccl_count.py
"""
import ctypes
import datetime
import glob
import os

import torch
import torch.distributed as dist

NCCL_UNIQUE_ID_BYTES = 128
ncclFloat32, ncclSum = 7, 0


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * NCCL_UNIQUE_ID_BYTES)]


def torch_libnccl():
    """The libnccl torch itself loaded (as PyNccl finds it)."""
    with open("/proc/self/maps") as f:
        for line in f:
            if "libnccl.so" in line:
                return line.split()[-1]
    here = os.path.dirname(torch.__file__)
    hits = glob.glob(os.path.join(here, "..", "nvidia", "nccl", "lib", "libnccl.so*"))
    return hits[0] if hits else "libnccl.so.2"


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dev = rank
    if os.environ.get("NSP_ONE_GPU"):
        os.environ["NCCL_HOSTID"] = f"nsp-rank-{rank}"
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        dev = 0
    torch.cuda.set_device(dev)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    path = torch_libnccl()
    nccl = ctypes.CDLL(path)  # what vLLM's NCCLLibrary does
    print(f"[rank {rank}] ctypes.CDLL({path})", flush=True)
    uid = NcclUniqueId()
    if rank == 0:
        assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
    buf = torch.ByteTensor(list(bytes(uid.internal)))
    dist.broadcast(buf, 0)
    ctypes.memmove(ctypes.byref(uid), bytes(buf.tolist()), NCCL_UNIQUE_ID_BYTES)
    comm = ctypes.c_void_p()
    assert nccl.ncclCommInitRank(ctypes.byref(comm), world, uid, rank) == 0
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    x = torch.ones(1024, device="cuda")
    for step in range(1, 6):
        count = 1000 if (step == 3 and rank == 1) else 1024
        r = nccl.ncclAllReduce(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                               ctypes.c_size_t(count), ncclFloat32, ncclSum, comm, stream)
        torch.cuda.synchronize()
        print(f"[rank {rank}] step {step}: ncclAllReduce({count}) = {r}, x[0] = {x[0].item()}", flush=True)
    nccl.ncclCommDestroy(comm)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
