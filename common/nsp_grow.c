/* nsp_grow.c - see nsp_grow.h. */
#include <stdint.h>
#include <stdlib.h>

#include "nsp_grow.h"

int nsp_grow(void *pp, size_t *cap, size_t need, size_t elsize) {
  void **p = pp;
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 8;
  while (n < need) {
    if (n > SIZE_MAX / 2 / elsize) return -1;
    n *= 2;
  }
  void *q = realloc(*p, n * elsize);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}
