/* test_api_facts.c - what common/nsp_names.c derives from the entry-point
 * table (common/nsp_nccl_apis.h) is what it said before the table held
 * it: the old hand-written functions are kept here as references and
 * compared for every API id, known or not.  nsp_api_size_factor and
 * nsp_api_busbw_factor are checked against nccl-tests' formulas as
 * analyzer/nsp_an_perf.c (nsp_perf_size, nsp_perf_busbw_factor) applies
 * them.  TAP. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nsp_names.h"

/* ---- the references: the functions as they were ---- */

static const char *old_op_name(int api) {
  switch (api) {
    case NSP_API_AllReduce: return "all-reduce";
    case NSP_API_AllGather: return "all-gather";
    case NSP_API_ReduceScatter: return "reduce-scatter";
    case NSP_API_Broadcast:
    case NSP_API_Bcast: return "broadcast";
    case NSP_API_Reduce: return "reduce";
    case NSP_API_AlltoAll: return "all-to-all";
    case NSP_API_Gather: return "gather";
    case NSP_API_Scatter: return "scatter";
    case NSP_API_Send: return "send";
    case NSP_API_Recv: return "recv";
    case NSP_API_GroupStart: return "group-start";
    case NSP_API_GroupEnd: return "group-end";
    case NSP_API_GroupSimulateEnd: return "group-simulate-end";
    default: return nsp_api_name(api);
  }
}

static int old_has_root(int api) {
  return api == NSP_API_Broadcast || api == NSP_API_Bcast || api == NSP_API_Reduce ||
         api == NSP_API_Gather || api == NSP_API_Scatter;
}

static int old_has_redop(int api) {
  return api == NSP_API_AllReduce || api == NSP_API_Reduce || api == NSP_API_ReduceScatter;
}

static int old_coll_class(int api) { return api == NSP_API_Bcast ? NSP_API_Broadcast : api; }

/* nccl-tests: S is count x dtype size, times nranks for all-gather,
 * reduce-scatter, all-to-all, gather and scatter; busbw = algbw x
 * 2(n-1)/n (all-reduce), (n-1)/n (those five), 1 (the rest). */
static int per_rank_count(int api) {
  return api == NSP_API_AllGather || api == NSP_API_ReduceScatter || api == NSP_API_AlltoAll ||
         api == NSP_API_Gather || api == NSP_API_Scatter;
}

static uint64_t ref_size_factor(int api, int nranks) {
  return per_rank_count(api) && nranks > 1 ? (uint64_t)nranks : 1;
}

static double ref_busbw_factor(int api, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  if (api == NSP_API_AllReduce) return 2.0 * (n - 1) / n;
  if (per_rank_count(api)) return (n - 1) / n;
  return 1.0;
}

/* ---- the table's own consistency ---- */

/* The count argument of each row's op column, as text: "0" for NSP_OP. */
#define NSP_COUNT_(as, words, send, recv, count, has_redop, redop, has_root, peer, size, busbw) #count
#define NSP_ROW_(name, kind, ret, params, args, since, op) {kind, NSP_APPLY(NSP_COUNT_, op)},
static const struct {
  int kind;
  const char *count;
} nsp_rows[] = {NSP_NCCL_APIS(NSP_ROW_)};

static int ntest, nfailed;

static void ok(int cond, const char *what, int api) {
  printf("%s %d - %s (api %d, %s)\n", cond ? "ok" : "not ok", ++ntest, what, api, nsp_api_name(api));
  nfailed += !cond;
}

int main(void) {
  static const int nranks[] = {-1, 0, 1, 2, 3, 8, 1000};
  for (int api = -2; api < NSP_API_COUNT + 2; api++) {
    int same = !strcmp(nsp_op_name(api), old_op_name(api)) && nsp_api_has_root(api) == old_has_root(api) &&
               nsp_api_has_redop(api) == old_has_redop(api) && nsp_api_coll_class(api) == old_coll_class(api);
    ok(same, "op name, root, redop and collective class as before", api);
    int factors = 1;
    for (size_t i = 0; i < sizeof nranks / sizeof *nranks; i++)
      factors &= nsp_api_size_factor(api, nranks[i]) == ref_size_factor(api, nranks[i]) &&
                 fabs(nsp_api_busbw_factor(api, nranks[i]) - ref_busbw_factor(api, nranks[i])) < 1e-12;
    ok(factors, "size and busbw factors as nccl-tests count them, for 7 values of nranks", api);
  }
  for (int api = 0; api < NSP_API_COUNT; api++) {
    int work = nsp_rows[api].kind == NSP_K_COLL || nsp_rows[api].kind == NSP_K_P2P;
    ok(work == (strcmp(nsp_rows[api].count, "0") != 0),
       "collectives and send/recv, and only they, say how their arguments fill a record (NSP_COLL)", api);
    int as = nsp_api_coll_class(api);
    ok(as == api || (!strcmp(nsp_op_name(as), nsp_op_name(api)) && nsp_api_has_root(as) == nsp_api_has_root(api) &&
                     nsp_api_has_redop(as) == nsp_api_has_redop(api) &&
                     nsp_api_size_factor(as, 8) == nsp_api_size_factor(api, 8) &&
                     nsp_api_busbw_factor(as, 8) == nsp_api_busbw_factor(api, 8)),
       "an entry point seen as another has that one's facts", api);
  }
  printf("1..%d\n", ntest);
  return nfailed ? 1 : 0;
}
