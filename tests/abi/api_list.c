/* api_list.c - prints "ncclName" for every entry of NSP_NCCL_APIS, one a
 * line: the exported set libncclspy.so must have, no more, no less. */
#include <stdio.h>

#include "nsp_nccl.h"

#define NSP_PRINT_(name, kind, ret, params, args, since, op) puts("nccl" #name);

int main(void) {
  NSP_NCCL_APIS(NSP_PRINT_)
  return 0;
}
