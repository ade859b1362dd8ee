/* abi_real.c - the facts and prototypes as the real nccl.h has them.
 * Compiled only where /usr/local/cuda/include/nccl.h exists. */
#include <nccl.h>
#include <stddef.h>

#include "abi_facts.h"
#include "nsp_nccl_apis.h"

const struct nsp_abi_fact nsp_abi_real[] = {NSP_ABI_FACTS(NSP_ABI_FACT_ENTRY){0, 0}};

/* Every entry point of our table has exactly the real prototype: a
 * compile-time check, so a wrong argument type fails the build of this
 * test.  (The shim itself never sees the real header.) */
#define NSP_CHECK_PROTO(name, kind, ret, params, args, since, op)                         \
  _Static_assert(__builtin_types_compatible_p(__typeof__(nccl##name), NSP_RET_##ret params), \
                 "prototype of nccl" #name " differs from nccl.h");                    \
  _Static_assert(__builtin_types_compatible_p(__typeof__(pnccl##name), NSP_RET_##ret params), \
                 "prototype of pnccl" #name " differs from nccl.h");
NSP_NCCL_APIS(NSP_CHECK_PROTO)

/* The real header's version, to print beside the result. */
const int nsp_abi_real_version = NCCL_VERSION_CODE;
