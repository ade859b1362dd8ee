/* nsp_u64map.c - see nsp_u64map.h. */
#include <stdlib.h>
#include <string.h>

#include "nsp_u64map.h"

size_t *nsp_u64map_get(const struct nsp_u64map *m, uint64_t key) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = nsp_u64map_hash(key) & mask;; i = (i + 1) & mask) {
    if (!m->used[i]) return NULL;
    if (m->keys[i] == key) return &m->vals[i];
  }
}

static int map_rehash(struct nsp_u64map *m, size_t cap) {
  struct nsp_u64map n = {0};
  n.keys = malloc(cap * sizeof *n.keys);
  n.vals = malloc(cap * sizeof *n.vals);
  n.used = calloc(cap, 1);
  if (!n.keys || !n.vals || !n.used) {
    free(n.keys);
    free(n.vals);
    free(n.used);
    return -1;
  }
  n.cap = cap;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    size_t j = nsp_u64map_hash(m->keys[i]) & (cap - 1);
    while (n.used[j]) j = (j + 1) & (cap - 1);
    n.used[j] = 1;
    n.keys[j] = m->keys[i];
    n.vals[j] = m->vals[i];
    n.len++;
  }
  nsp_u64map_free(m);
  *m = n;
  return 0;
}

int nsp_u64map_put(struct nsp_u64map *m, uint64_t key, size_t val) {
  size_t *slot = nsp_u64map_get(m, key);
  if (slot) {
    *slot = val;
    return 0;
  }
  /* Keep the load under 1/2 so probes stay short. */
  if ((m->len + 1) * 2 > m->cap) {
    if (m->cap > SIZE_MAX / 4) return -1;
    if (map_rehash(m, m->cap ? m->cap * 2 : 16) < 0) return -1;
  }
  size_t mask = m->cap - 1;
  size_t i = nsp_u64map_hash(key) & mask;
  while (m->used[i]) i = (i + 1) & mask;
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = val;
  m->len++;
  return 0;
}

int nsp_u64map_del(struct nsp_u64map *m, uint64_t key) {
  size_t *slot = nsp_u64map_get(m, key);
  if (!slot) return 0;
  size_t mask = m->cap - 1;
  size_t i = (size_t)(slot - m->vals);
  /* Backward-shift deletion: move later entries of the probe run into the
   * hole when their home slot does not lie (cyclically) after it, so
   * lookups never need tombstones. */
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (!m->used[j]) break;
    size_t home = nsp_u64map_hash(m->keys[j]) & mask;
    int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    m->keys[i] = m->keys[j];
    m->vals[i] = m->vals[j];
    i = j;
  }
  m->used[i] = 0;
  m->len--;
  return 1;
}

void nsp_u64map_free(struct nsp_u64map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  memset(m, 0, sizeof *m);
}
