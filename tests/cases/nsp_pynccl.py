#!/usr/bin/env python3
"""nsp_pynccl.py - a rank of a job that reaches NCCL the way vLLM's and
SGLang's PyNccl do (vllm/distributed/device_communicators/pynccl_wrapper.py):
ctypes.CDLL(path) on libnccl, each entry point taken by attribute access
(dlsym on that handle) with its argtypes and restype declared, then called
through ctypes.  Host buffers and a NULL stream (the CPU stand-in for NCCL).

    nsp_launch -n 2 -- python3 nsp_pynccl.py

Environment: RANK, WORLD_SIZE and NSP_UID_FILE as for nsp_cases (rank 0
writes the ncclUniqueId there; nsp_launch sets it), and
    NSP_PYNCCL_LIBNCCL  the library (default "libnccl.so.2")
    NSP_PYNCCL_STEPS    all-reduces (default 20), 1024 float32 sums each
    NSP_PYNCCL_ODD      "R:S:C": rank R passes count C at step S (from 1)
    NSP_PYNCCL_PYTHREADS set: every all-reduce on a new Python thread
    NSP_PYNCCL_BUSY        "N:LIB": after the steps, N all-reduces on a
                           native thread (LIB: nsp_pythread.c) while this
                           thread runs Python through 2000 lines
    NSP_PYNCCL_ODD_LINE set: rank R makes that call from another line
                        (odd_all_reduce) than the others (NCCLLibrary.call)
    NSP_PYNCCL_THREAD   "S:LIB": at step S every rank's all-reduce runs on
                        a native thread of LIB (tests/cases/nsp_pythread.c)
                        that the Python main thread waits for
Lines the tests look for carry a comment "nsp-pysite: <what>".
Every result is checked.  A call that fails, or wrong values, ends the rank
as a watchdog would (ncclCommAbort, exit 1).  At the end: "rank R returned
N calls" on stdout.  Exit status: 0 healthy, 1 an NCCL error or wrong
values, 2 usage.
"""
import ctypes
import os
import sys
import threading
import time

ncclResult_t = ctypes.c_int
ncclComm_t = ctypes.c_void_p
cudaStream_t = ctypes.c_void_p
buffer_type = ctypes.c_void_p
ncclFloat32, ncclSum = 7, 0


class ncclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


# name, restype, argtypes: as pynccl_wrapper.py's exported_functions
FUNCTIONS = [
    ("ncclGetErrorString", ctypes.c_char_p, [ncclResult_t]),
    ("ncclGetVersion", ncclResult_t, [ctypes.POINTER(ctypes.c_int)]),
    ("ncclGetUniqueId", ncclResult_t, [ctypes.POINTER(ncclUniqueId)]),
    ("ncclCommInitRank", ncclResult_t,
     [ctypes.POINTER(ncclComm_t), ctypes.c_int, ncclUniqueId, ctypes.c_int]),
    ("ncclAllReduce", ncclResult_t,
     [buffer_type, buffer_type, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ncclComm_t, cudaStream_t]),
    ("ncclCommDestroy", ncclResult_t, [ncclComm_t]),
    ("ncclCommAbort", ncclResult_t, [ncclComm_t]),
]


class NCCLLibrary:
    def __init__(self, so_file):
        self.lib = ctypes.CDLL(so_file)
        self.calls = 0
        self._funcs = {}
        for name, restype, argtypes in FUNCTIONS:
            f = getattr(self.lib, name)
            f.restype = restype
            f.argtypes = argtypes
            self._funcs[name] = f

    def call(self, name, *args):
        r = self._funcs[name](*args)  # nsp-pysite: call
        self.calls += 1
        return r


def odd_all_reduce(nccl, *args):
    nccl.calls += 1
    return nccl._funcs["ncclAllReduce"](*args)  # nsp-pysite: odd


def main():
    rank = int(os.environ.get("RANK", "-1"))
    nranks = int(os.environ.get("WORLD_SIZE", "-1"))
    steps = int(os.environ.get("NSP_PYNCCL_STEPS", "20"))
    path = os.environ.get("NSP_UID_FILE", "")
    odd = os.environ.get("NSP_PYNCCL_ODD", "")
    odd_rank, odd_step, odd_count = (int(v) for v in odd.split(":")) if odd else (-1, 0, 0)
    odd_line = bool(os.environ.get("NSP_PYNCCL_ODD_LINE"))
    pythreads = bool(os.environ.get("NSP_PYNCCL_PYTHREADS"))
    thread = os.environ.get("NSP_PYNCCL_THREAD", "")
    thread_step, thread_lib = (int(thread.split(":", 1)[0]), thread.split(":", 1)[1]) if thread else (0, "")
    if rank < 0 or nranks < 1 or not path:
        print("usage: RANK=r WORLD_SIZE=n NSP_UID_FILE=f nsp_pynccl.py", file=sys.stderr)
        return 2
    nccl = NCCLLibrary(os.environ.get("NSP_PYNCCL_LIBNCCL") or "libnccl.so.2")
    version = ctypes.c_int(0)
    if nccl.call("ncclGetVersion", ctypes.byref(version)) != 0 or version.value <= 0:
        return 2
    uid = ncclUniqueId()
    if rank == 0:
        if nccl.call("ncclGetUniqueId", ctypes.byref(uid)) != 0:
            return 1
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(bytes(uid.internal))
        os.rename(tmp, path)
    else:
        deadline = time.monotonic() + 30
        while True:
            try:
                with open(path, "rb") as f:
                    data = f.read()
                if len(data) == 128:
                    ctypes.memmove(uid.internal, data, 128)
                    break
            except FileNotFoundError:
                pass
            if time.monotonic() > deadline:
                print("rank %d: no unique id in %s" % (rank, path), file=sys.stderr)
                return 1
            time.sleep(0.005)
    comm = ncclComm_t()
    res = nccl.call("ncclCommInitRank", ctypes.byref(comm), nranks, uid, rank)
    if res != 0:
        print("rank %d: ncclCommInitRank returned %d" % (rank, res), file=sys.stderr)
        return 1
    n = 1024
    x = (ctypes.c_float * n)()
    y = (ctypes.c_float * n)()
    for step in range(1, steps + 1):
        count = odd_count if (rank == odd_rank and step == odd_step) else n
        for i in range(n):
            x[i] = rank + 1 + (i + step) % 7
            y[i] = -1
        args = (ctypes.addressof(x), ctypes.addressof(y), count, ncclFloat32, ncclSum, comm, None)
        if step == thread_step:
            helper = ctypes.CDLL(thread_lib)
            helper.nsp_pythread_all_reduce.restype = ctypes.c_int
            helper.nsp_pythread_all_reduce.argtypes = [ctypes.c_void_p] + FUNCTIONS[4][2]
            fn = ctypes.cast(nccl._funcs["ncclAllReduce"], ctypes.c_void_p)
            nccl.calls += 1
            res = helper.nsp_pythread_all_reduce(fn, *args)  # nsp-pysite: thread
        elif pythreads:
            # each step's call on a new, short-lived Python thread, from
            # one line: one call site, whichever thread
            out = []
            t = threading.Thread(target=lambda: out.append(nccl.call("ncclAllReduce", *args)))  # nsp-pysite: pythread
            t.start()
            t.join()
            res = out[0] if out else 1
        elif odd_line and rank == odd_rank and step == odd_step:
            res = odd_all_reduce(nccl, *args)
        else:
            res = nccl.call("ncclAllReduce", *args)
        bad = res != 0
        for i in range(min(count, n)):
            if bad:
                break
            bad = y[i] != nranks * (nranks + 1) // 2 + nranks * ((i + step) % 7)
        if bad:
            what = nccl.call("ncclGetErrorString", res).decode()
            print("rank %d: all-reduce #%d: %s; aborting" % (rank, step, what if res else "wrong values"),
                  file=sys.stderr)
            nccl.call("ncclCommAbort", comm)
            print("rank %d returned %d calls" % (rank, nccl.calls))
            return 1
    busy = os.environ.get("NSP_PYNCCL_BUSY", "")
    if busy:
        # A native thread makes N all-reduces while this thread runs
        # Python through many lines (it does not wait): its borrowed
        # stacks are many, and capped.
        calls, lib = int(busy.split(":", 1)[0]), busy.split(":", 1)[1]
        helper = ctypes.CDLL(lib)
        helper.nsp_pythread_start.argtypes = [ctypes.c_void_p] + FUNCTIONS[4][2] + [ctypes.c_int]
        fn = ctypes.cast(nccl._funcs["ncclAllReduce"], ctypes.c_void_p)
        args = (ctypes.addressof(x), ctypes.addressof(y), n, ncclFloat32, ncclSum, comm, None)
        spin = {}
        exec(compile("def spin(k):\n" + "".join("    k += %d\n" % i for i in range(2000)) + "    return k\n",
                     "nsp_spin.py", "exec"), spin)
        if helper.nsp_pythread_start(fn, *args, calls) != 0:
            return 1
        k = 0
        done = [None]
        waiter = threading.Thread(target=lambda: done.__setitem__(0, helper.nsp_pythread_join()))
        waiter.start()
        while waiter.is_alive():
            k = spin["spin"](k)
        nccl.calls += calls
        if done[0] != calls:
            return 1
    if nccl.call("ncclCommDestroy", comm) != 0:
        return 1
    print("rank %d returned %d calls" % (rank, nccl.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
