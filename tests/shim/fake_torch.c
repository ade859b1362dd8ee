/* fake_torch.c - a library that uses NCCL the way torch does: it is
 * dlopen'ed with RTLD_LOCAL by the test program and pulls libnccl.so.2 in
 * as its own dependency, so NCCL never enters the global scope and
 * dlsym(RTLD_NEXT) from the preloaded shim cannot see it. */
#include "shim_work.h"
