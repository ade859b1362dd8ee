/* nsp_hash.h - FNV-1a, the hash of ncclspy's identities.
 *
 * Communicator ids (of ncclUniqueId bytes, of a parent and a split) and
 * call-site keys are FNV-1a hashes.  Communicator ids are written in
 * traces and compared across ranks and runs, so the function must never
 * change. */
#ifndef NSP_HASH_H
#define NSP_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of len bytes at data, continued from h (start with
 * NSP_FNV_INIT). */
#define NSP_FNV_INIT 0xcbf29ce484222325ull
uint64_t nsp_fnv1a(uint64_t h, const void *data, size_t len);

#endif /* NSP_HASH_H */
