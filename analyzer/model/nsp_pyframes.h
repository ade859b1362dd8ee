/* nsp_pyframes.h - the library-frame table: Python files whose frames the
 * reports fold into "... N library frames", so the first frame shown of a
 * Python call site is the program's own (docs/REPORT.md, "Python library
 * frames", generated from this table and compared by test an-tables).
 *
 * X(match, pattern, what), one row per pattern:
 *   DIR     a directory: the path contains it at a component's start
 *           ("/…/site-packages/torch/distributed/x.py", "torch/distributed/x.py")
 *   FILE    a file: the path ends in it, at a component's start
 *   STDLIB  the Python standard library: a file under lib/pythonX.Y/ (or
 *           lib64/) that is not in site-packages or dist-packages
 *   PREFIX  the file name begins with it (the interpreter's frozen modules)
 * The part of the path shown for a library frame starts at the match
 * (after "pythonX.Y/" for STDLIB). */
#ifndef NSP_PYFRAMES_H
#define NSP_PYFRAMES_H

#define NSP_PYFRAME_LIBRARY(X)                                                                                   \
  X(DIR, "torch/distributed/", "PyTorch's distributed package: c10d's Python API and its wrappers, FSDP, DDP's comm hooks") \
  X(DIR, "torch/nn/parallel/", "DistributedDataParallel, DataParallel")                                           \
  X(FILE, "torch/nn/modules/module.py", "nn.Module's call machinery and hooks")                                   \
  X(DIR, "torch/autograd/", "autograd: backward() and its engine")                                               \
  X(FILE, "torch/_tensor.py", "Tensor's Python methods (Tensor.backward)")                                        \
  X(DIR, "torch/amp/", "autocast and gradient scaling")                                                          \
  X(DIR, "torch/cuda/amp/", "the older autocast and gradient scaling")                                           \
  X(DIR, "torch/utils/", "PyTorch's utilities: checkpointing, hooks, data loading")                               \
  X(DIR, "torch/_dynamo/", "TorchDynamo (torch.compile) frames")                                                 \
  X(DIR, "deepspeed/comm/", "DeepSpeed's collectives")                                                           \
  X(DIR, "vllm/distributed/", "vLLM's collectives")                                                              \
  X(STDLIB, "lib/pythonX.Y/", "the Python standard library (contextlib, functools, threading, runpy, ...), outside site-packages and dist-packages") \
  X(PREFIX, "<frozen ", "the interpreter's frozen modules (<frozen runpy>, importlib)")

#endif /* NSP_PYFRAMES_H */
