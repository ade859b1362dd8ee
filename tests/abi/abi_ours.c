/* abi_ours.c - the facts as common/nsp_nccl.h declares them. */
#include <stddef.h>

#include "abi_facts.h"
#include "nsp_nccl.h"

const struct nsp_abi_fact nsp_abi_ours[] = {NSP_ABI_FACTS(NSP_ABI_FACT_ENTRY){0, 0}};
