/* nsp_paged.h - a sparse array indexed by a uint64_t (a sequence number):
 * fixed-size pages of elements, each made zeroed on first use and found
 * through a hash map of page numbers.  Memory follows the indices in use,
 * not the highest one; a run of consecutive indices costs one lookup per
 * page to a caller that keeps the last page (see nsp_paged_page).
 *
 *     struct nsp_paged a;
 *     nsp_paged_init(&a, sizeof(struct thing), 256);
 *     struct thing *t = nsp_paged_at(&a, seq, 1);   // NULL: out of memory
 *     for (size_t k = 0; k < a.npages; k++)         // pages in the order made
 *       use(a.pages[k], a.page_nos[k] * a.per_page); // its first index
 *     nsp_paged_free(&a);
 */
#ifndef NSP_PAGED_H
#define NSP_PAGED_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_u64map.h"

struct nsp_paged {
  size_t elsize;      /* bytes per element */
  size_t per_page;    /* elements per page */
  void **pages;       /* npages pages of per_page elements, in the order made */
  uint64_t *page_nos; /* pages[k] holds indices page_nos[k] * per_page onwards */
  size_t npages, pages_cap, nos_cap;
  struct nsp_u64map index; /* page number -> k */
};

/* An empty array of elsize-byte elements, per_page to a page (both > 0). */
void nsp_paged_init(struct nsp_paged *a, size_t elsize, size_t per_page);
/* The first element of page page_no (indices page_no * per_page ..),
 * made zeroed when create is set and it is absent; NULL when it is absent
 * and create is 0, or when out of memory. */
void *nsp_paged_page(struct nsp_paged *a, uint64_t page_no, int create);
/* Element i, as nsp_paged_page makes or finds its page. */
void *nsp_paged_at(struct nsp_paged *a, uint64_t i, int create);
/* Frees every page; the array is empty (and still initialised) after. */
void nsp_paged_free(struct nsp_paged *a);

#endif /* NSP_PAGED_H */
