/* nsp_grow.h - the capacity of a growable array (an element pointer and
 * its count of slots), doubled as it fills.  Used by the analyzer's model
 * and its string builder; depends on nothing. */
#ifndef NSP_GROW_H
#define NSP_GROW_H

#include <stddef.h>

/* Grows *p (a pointer to an array of elsize-byte elements with room for
 * *cap of them; NULL with *cap 0 to start) to hold at least need
 * elements, doubling from 8.  On failure *p and *cap are unchanged.
 * Returns 0, or -1 when out of memory or the size would overflow. */
int nsp_grow(void *p, size_t *cap, size_t need, size_t elsize);

#endif /* NSP_GROW_H */
