/* nsp_an_site.c - call sites (NSP_REC_CALLSITE): stored per trace with
 * the frames of NCCL, ncclspy and PyTorch's c10d left out, and the
 * requests for the sites of the collectives findings name, which pass 2
 * (job/nsp_an_pass2.c) answers. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_names.h"
#include "nsp_reader.h"

/* Frames kept per site; reports show fewer. */
#define NSP_SITE_KEEP 16
/* Sites kept per trace (the shim writes one per distinct stack). */
#define NSP_SITES_MAX (1u << 16)

int nsp_an_frame_skipped(const char *module, const char *symbol) {
  const char *base = module ? strrchr(module, '/') : NULL;
  base = base ? base + 1 : module ? module : "";
  /* libnccl.so.2, libnccl-net*.so, libncclspy.so */
  if (!strncmp(base, "libnccl", 7)) return 1;
  /* c10d::ProcessGroupNCCL::... in libtorch_cuda, mangled or not. */
  if (symbol && (strstr(symbol, "c10d") || strstr(symbol, "ProcessGroupNCCL"))) return 1;
  return 0;
}

/* Frames on top of a signal that was sent or raised: the C library's
 * raise/abort/assert and the C++ runtime's terminate, between the code
 * that called abort() and the signal. */
static int runtime_frame(const char *module) {
  const char *base = module ? strrchr(module, '/') : NULL;
  base = base ? base + 1 : module ? module : "";
  return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) || !strncmp(base, "libpthread", 10) ||
         !strncmp(base, "libstdc++", 9) || !strncmp(base, "libgcc_s", 8) || !strncmp(base, "libc++", 6);
}

struct nsp_callsite *nsp_an_stack_make(const struct nsp_rec_ext *x, uint32_t id, uint32_t flags, int skip_runtime_top) {
  size_t n = x ? x->nframes : 0, keep = 0, skipped = 0, top = 0;
  if (skip_runtime_top)
    while (top < n && (runtime_frame(x->frame_module[top]) ||
                       nsp_an_frame_skipped(x->frame_module[top], x->frame_symbol[top])))
      top++;
  if (top == n) top = 0; /* nothing but the runtime: show it */
  for (size_t i = top; i < n; i++) {
    if (nsp_an_frame_skipped(x->frame_module[i], x->frame_symbol[i])) skipped++;
    else keep++;
  }
  int filter = keep > 0; /* all frames NCCL's: show them rather than nothing */
  if (!filter) {
    keep = n - top;
    skipped = 0;
  }
  skipped += top;
  if (keep > NSP_SITE_KEEP) keep = NSP_SITE_KEEP;
  size_t bytes = sizeof(struct nsp_callsite) + keep * sizeof(struct nsp_frame);
  size_t kept = 0;
  for (size_t i = top; i < n && kept < keep; i++) {
    if (filter && nsp_an_frame_skipped(x->frame_module[i], x->frame_symbol[i])) continue;
    bytes += strlen(x->frame_module[i] ? x->frame_module[i] : "") + strlen(x->frame_symbol[i] ? x->frame_symbol[i] : "") + 2;
    kept++;
  }
  struct nsp_callsite *cs = malloc(bytes);
  if (!cs) return NULL;
  struct nsp_frame *fr = (struct nsp_frame *)(cs + 1);
  char *str = (char *)(fr + keep);
  kept = 0;
  for (size_t i = top; i < n && kept < keep; i++) {
    if (filter && nsp_an_frame_skipped(x->frame_module[i], x->frame_symbol[i])) continue;
    const char *mod = x->frame_module[i] ? x->frame_module[i] : "";
    const char *sym = x->frame_symbol[i] ? x->frame_symbol[i] : "";
    size_t ml = strlen(mod) + 1, sl = strlen(sym) + 1;
    memcpy(str, mod, ml);
    fr[kept].module = str;
    str += ml;
    memcpy(str, sym, sl);
    fr[kept].symbol = str;
    str += sl;
    fr[kept].offset = x->frame_offset[i];
    fr[kept].function = fr[kept].file = NULL; /* nsp_an_symbolize */
    fr[kept].line = 0;
    fr[kept].interrupted = id == 0 && i == 0; /* a signal's innermost frame */
    kept++;
  }
  cs->id = id;
  cs->flags = flags;
  cs->nframes = keep;
  cs->frames = fr;
  cs->nskipped = skipped;
  cs->ntotal = n;
  return cs;
}

int nsp_an_site_add(struct nsp_trace *t, const struct nsp_rec *rec) {
  const struct nsp_rec_ext *x = rec->ext;
  if (!rec->site || !x || t->info.nsites >= NSP_SITES_MAX) return 0;
  if (nsp_u64map_get(&t->site_by_id, rec->site)) return 0; /* the first record of an id wins */
  struct nsp_callsite *cs = nsp_an_stack_make(x, rec->site, rec->flags, 0);
  if (!cs) return NSP_AN_ENOMEM;
  if (nsp_grow(&t->sites, &t->sites_cap, t->info.nsites + 1, sizeof *t->sites) < 0 ||
      nsp_u64map_put(&t->site_by_id, rec->site, t->info.nsites) < 0) {
    free(cs);
    return NSP_AN_ENOMEM;
  }
  t->sites[t->info.nsites++] = cs;
  return 0;
}

const struct nsp_callsite *nsp_an_site(const struct nsp_trace *t, uint32_t id) {
  if (!id) return NULL;
  const size_t *i = nsp_u64map_get(&t->site_by_id, id);
  return i ? t->sites[*i] : NULL;
}

void nsp_an_sites_free(struct nsp_trace *t) {
  for (size_t i = 0; i < t->info.nsites; i++) free(t->sites[i]);
  free(t->sites);
  t->sites = NULL;
  t->info.nsites = 0;
  nsp_u64map_free(&t->site_by_id);
}

int nsp_an_want_site(struct nsp_job *job, size_t trace, uint32_t local, uint64_t seq, struct nsp_proc *out) {
  const struct nsp_trace *t = job->traces[trace];
  if (!t->info.nsites && !t->info.npysites) return 0; /* no call sites in that trace */
  /* A collective in flight has no CALL record to read again; its
   * INFLIGHT record named its Python site (a native one it has none). */
  uint64_t comm_id = 0;
  for (size_t i = 0; t->ninflight && i < job->nmembers && !comm_id; i++)
    if (job->members[i].trace == trace && job->members[i].local == local) comm_id = job->comms[job->members[i].comm]->info.id;
  for (size_t i = 0; comm_id && i < t->ninflight; i++) {
    const struct nsp_inflight *f = &t->inflight[i];
    if (f->call.comm_id == comm_id && f->call.seq == seq && nsp_api_kind(f->call.api) == NSP_K_COLL) {
      out->pysite = f->pysite;
      return 0;
    }
  }
  NSP_TRY(nsp_grow(&job->site_req, &job->site_req_cap, job->nsite_req + 1, sizeof *job->site_req));
  job->site_req[job->nsite_req++] = (struct nsp_site_req){trace, local, seq, out, 0};
  return 0;
}
