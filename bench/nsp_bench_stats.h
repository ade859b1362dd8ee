/* nsp_bench_stats.h - the clock and the median the benchmarks share.
 * Header-only, so that nsp_gpu_micro.c still builds on its own with cc. */
#ifndef NSP_BENCH_STATS_H
#define NSP_BENCH_STATS_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC now, ns. */
static inline uint64_t nsp_bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int nsp_bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0, n) (n >= 1); sorts v. */
static inline double nsp_bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, nsp_bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* NSP_BENCH_STATS_H */
