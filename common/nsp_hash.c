/* nsp_hash.c - FNV-1a (see nsp_hash.h). */
#include "nsp_hash.h"

uint64_t nsp_fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
