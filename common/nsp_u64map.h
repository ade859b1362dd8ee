/* nsp_u64map.h - an open-addressing hash map from uint64_t keys (any
 * value, 0 too) to size_t values: the analyzer's index of communicators
 * by id, pages by number, peers, call sites.  Linear probing, load kept
 * under 1/2, deletion by backward shift (no tombstones).  A zeroed struct
 * is an empty map. */
#ifndef NSP_U64MAP_H
#define NSP_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct nsp_u64map {
  uint64_t *keys;
  size_t *vals;
  uint8_t *used;
  size_t cap, len; /* cap: slots (0 or a power of two); len: keys held */
};

/* Sets key -> val.  Returns 0, or -1 when out of memory (the map is
 * unchanged). */
int nsp_u64map_put(struct nsp_u64map *m, uint64_t key, size_t val);
/* Removes key; returns 1 when it was there. */
int nsp_u64map_del(struct nsp_u64map *m, uint64_t key);
/* The value slot of key, or NULL.  Valid until the next put or del. */
size_t *nsp_u64map_get(const struct nsp_u64map *m, uint64_t key);
/* Frees the map's memory and leaves it empty. */
void nsp_u64map_free(struct nsp_u64map *m);

/* The map's hash: splitmix64's finaliser.  Communicator ids are already
 * hashes, but page numbers and peers are small consecutive integers that
 * would cluster; exposed for tables that hash keys of their own. */
static inline uint64_t nsp_u64map_hash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

#endif /* NSP_U64MAP_H */
