"""A long training loop whose one rank skips an all-reduce near the end.

Each step all-reduces the gradients (4096 floats), then the loss (one
float); NSP_STEPS steps (default 3000). At step NSP_STEPS - 20 rank 1
skips the loss all-reduce, as skip_allreduce.py does early. Run with a
short NCCLSPY_FLUSH_MS (say 20) the traces have hundreds of frames:
`ncclspy analyze` reads their indexes, steps over the frames where both
ranks agree, and names the skip at the same seq, with the same report,
as `ncclspy analyze --full-read` (issue #16).

NCCLSPY_FLUSH_MS=20 timeout 120 torchrun --nproc_per_node=2 examples/torch/late_skip.py
"""
import os

from skip_allreduce import run


def main():
    steps = int(os.environ.get("NSP_STEPS", "3000"))
    run(steps, steps - 20)


if __name__ == "__main__":
    main()
