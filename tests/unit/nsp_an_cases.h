/* nsp_an_cases.h - synthetic traces of the failure cases c01..c11 of
 * shared/cases/README.md (and healthy c10), for the analyzer's tests.
 * Each case is the calls every rank makes, written with nsp_tracegen.
 * GPU runs with completion tracking (format 1.1): "c01-gpu", "c11"
 * (c11 as a CPU run without tracking: "c11-notrack"), "c12" (a killed
 * hang: rank 1 never arrives at seq 3) and "c13" (a tensor-parallel hang
 * that causes a data-parallel one); "c14" (CPU: a data-parallel dtype
 * mismatch that stops tensor-parallel partners, split ranks differing
 * from job ranks). */
#ifndef NSP_AN_CASES_H
#define NSP_AN_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_analyze.h"
#include "nsp_tracegen.h"

/* Communicator ids the cases use (any 64-bit values would do). */
#define NSP_CASE_WORLD 0x57a1d0c0ffee0001ull
#define NSP_CASE_CHILD0 0x57a1d0c0ffee0a00ull /* split color 0 */
#define NSP_CASE_CHILD1 0x57a1d0c0ffee0a01ull /* split color 1 */
#define NSP_CASE_DP0 0x57a1d0c0ffee0b00ull    /* c13, c14: data-parallel {0,2} */
#define NSP_CASE_DP1 0x57a1d0c0ffee0b01ull    /* c13, c14: data-parallel {1,3} */

#define NSP_CASE_MAX_RANKS 8

/* Builds case `name` ("c01".."c14", "c01-gpu", "c11-notrack"): one generator per rank into gens
 * (room for NSP_CASE_MAX_RANKS).  Returns the number of ranks, -1 for an
 * unknown name or out of memory.  The caller destroys the generators. */
int nsp_case_build(const char *name, struct nsp_tracegen **gens);

/* The name of case i (0, 1, ...), NULL past the last. */
const char *nsp_case_name(size_t i);

/* Writes the case's traces into dir.  Returns the number of files, -1. */
int nsp_case_write(const char *name, const char *dir);

/* Adds the case's traces to job from memory (named "<case>.rank<R>.ncclspy").
 * Returns the number added, -1. */
int nsp_case_add(const char *name, struct nsp_job *job);

/* A fresh empty directory under $TMPDIR (or /tmp) into dir (dirlen
 * bytes); 0 or -1.  nsp_case_rmdir removes it and the files in it. */
int nsp_case_mkdtemp(char *dir, size_t dirlen);
void nsp_case_rmdir(const char *dir);

/* Writes len bytes of data as dir/name.  0, or -1 (errno set). */
int nsp_case_write_file(const char *dir, const char *name, const void *data, size_t len);

/* A new job for comparing reports: its "now" NSP_CASE_NOW_NS (the traces'
 * processes long gone), no local host (/proc never asked) and `threads`
 * threads (0: the default).  NULL when that fails. */
#define NSP_CASE_NOW_NS 1800000000000000000ll
struct nsp_job *nsp_case_job(int threads);

/* The next number of a seeded generator (splitmix64), for generated jobs
 * whose faults a seed places. */
uint64_t nsp_case_rng(uint64_t *state);

#endif /* NSP_AN_CASES_H */
