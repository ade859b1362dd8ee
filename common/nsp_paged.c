/* nsp_paged.c - see nsp_paged.h. */
#include <stdlib.h>
#include <string.h>

#include "nsp_grow.h"
#include "nsp_paged.h"

void nsp_paged_init(struct nsp_paged *a, size_t elsize, size_t per_page) {
  memset(a, 0, sizeof *a);
  a->elsize = elsize;
  a->per_page = per_page;
}

void *nsp_paged_page(struct nsp_paged *a, uint64_t page_no, int create) {
  const size_t *k = nsp_u64map_get(&a->index, page_no);
  if (k) return a->pages[*k];
  if (!create) return NULL;
  void *pg = calloc(a->per_page, a->elsize);
  if (!pg) return NULL;
  if (nsp_grow(&a->pages, &a->pages_cap, a->npages + 1, sizeof *a->pages) < 0 ||
      nsp_grow(&a->page_nos, &a->nos_cap, a->npages + 1, sizeof *a->page_nos) < 0 ||
      nsp_u64map_put(&a->index, page_no, a->npages) < 0) {
    free(pg);
    return NULL;
  }
  a->pages[a->npages] = pg;
  a->page_nos[a->npages++] = page_no;
  return pg;
}

void *nsp_paged_at(struct nsp_paged *a, uint64_t i, int create) {
  char *pg = nsp_paged_page(a, i / a->per_page, create);
  return pg ? pg + (size_t)(i % a->per_page) * a->elsize : NULL;
}

void nsp_paged_free(struct nsp_paged *a) {
  for (size_t k = 0; k < a->npages; k++) free(a->pages[k]);
  free(a->pages);
  free(a->page_nos);
  nsp_u64map_free(&a->index);
  nsp_paged_init(a, a->elsize, a->per_page);
}
