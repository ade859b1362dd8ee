"""Two JAX processes (jax.distributed) on one host, one GPU each: process
1 all-gathers bfloat16 where process 0 all-gathers float32 (a dtype
mismatch, as under mixed precision). XLA reaches NCCL through dlopen and
a dlsym per entry point (xla/tsl/cuda/nccl_stub.cc); under the shim its
calls are traced and `ncclspy analyze` names the mismatch.

With one GPU, both processes use GPU 0 (local_device_ids=[0]), each with
its own NCCL_HOSTID, so NCCL joins them over sockets as separate hosts.

python3 examples/jax/jax_dtype.py           (starts both processes)
"""
import os
import signal
import subprocess
import sys


def child(pid):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import multihost_utils

    jax.distributed.initialize(coordinator_address="127.0.0.1:" + os.environ.get("NSP_JAX_PORT", "12461"),
                               num_processes=2, process_id=pid, local_device_ids=[0])
    print(f"[process {pid}] devices {jax.devices()}", flush=True)
    for step in range(1, 4):
        dtype = jnp.bfloat16 if (step == 3 and pid == 1) else jnp.float32
        x = np.arange(8, dtype=np.float32).astype(dtype) + pid
        y = multihost_utils.process_allgather(x)
        print(f"[process {pid}] step {step}: all-gather of {x.dtype} -> {y.dtype} {y.ravel()[:4]}", flush=True)


def main():
    if len(sys.argv) > 1:
        child(int(sys.argv[1]))
        return 0
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", NCCL_NVLS_ENABLE="0",
               NCCL_SOCKET_IFNAME=os.environ.get("NCCL_SOCKET_IFNAME", "lo"))
    procs = [subprocess.Popen([sys.executable, __file__, str(i)], env=dict(env, NCCL_HOSTID=f"nsp-jax-{i}"))
             for i in range(2)]
    # A time limit (SIGTERM) ends the processes, as torchrun passes it on.
    signal.signal(signal.SIGTERM, lambda *_: [p.terminate() for p in procs])
    return max(p.wait() for p in procs)


if __name__ == "__main__":
    sys.exit(main())
