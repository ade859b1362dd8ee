/* nsp_an_refs.c - a communicator's refs by seq (struct nsp_ref): 8 bytes
 * per seq, the signature interned in the communicator's table of distinct
 * ones, the earliest entry an offset from its page's base (whole times for
 * a page whose times spread wider than 2^31 ns).  What the rules read of
 * a ref is exactly what a whole struct nsp_sig and int64_t time per seq
 * said. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"

void nsp_an_refs_init(struct nsp_an_comm *c) {
  nsp_paged_init(&c->refs, sizeof(struct nsp_ref_page), 1);
}

struct nsp_ref_page *nsp_an_ref_page(struct nsp_an_comm *c, uint64_t page_no, int create) {
  return nsp_paged_page(&c->refs, page_no, create);
}

/* Every field, the shown ones (residence, host scalar) too: a ref keeps
 * the first rank's call as it was. */
static int sig_same(const struct nsp_sig *a, const struct nsp_sig *b) {
  return nsp_an_sig_eq(a, b) && nsp_an_sig_premul_same(a, b);
}

static uint64_t sig_hash(const struct nsp_sig *s, uint64_t salt) {
  const uint64_t v[7] = {s->count,
                         s->premul_scalar,
                         (uint64_t)(uint32_t)s->dtype << 32 | (uint32_t)s->redop,
                         (uint64_t)(uint32_t)s->root << 32 | (uint32_t)s->api,
                         (uint64_t)(uint16_t)s->premul_dtype,
                         (uint64_t)(uint8_t)s->premul_residence,
                         s->premul_scalar_known};
  uint64_t h = 1469598103934665603ull ^ salt;
  for (int i = 0; i < 7; i++) h = (h ^ v[i]) * 1099511628211ull;
  return h;
}

uint32_t nsp_an_sig_intern(struct nsp_an_comm *c, const struct nsp_sig *s, uint32_t *hint) {
  if (*hint && *hint <= c->nsigs && sig_same(&c->sigs[*hint - 1], s)) return *hint;
  /* A hash of the signature as the map's key; a collision probes on. */
  for (uint64_t salt = 0;; salt++) {
    uint64_t key = sig_hash(s, salt);
    size_t *i = nsp_u64map_get(&c->sig_index, key);
    if (i) {
      if (!sig_same(&c->sigs[*i], s)) continue;
      return *hint = (uint32_t)*i + 1;
    }
    if (c->nsigs >= NSP_REF_SIG || nsp_grow(&c->sigs, &c->sigs_cap, c->nsigs + 1, sizeof *c->sigs) < 0 ||
        nsp_u64map_put(&c->sig_index, key, c->nsigs) < 0)
      return 0;
    c->sigs[c->nsigs++] = *s;
    return *hint = (uint32_t)c->nsigs;
  }
}

int nsp_an_ref_set_time(struct nsp_ref_page *pg, unsigned e, int64_t t) {
  if (pg->wide) {
    pg->wide[e] = t;
    return 0;
  }
  if (!pg->based) {
    pg->base = t;
    pg->based = 1;
  }
  if (nsp_an_time_off(t, pg->base, &pg->r[e].t_off)) return 0;
  pg->wide = malloc(NSP_SEQ_PAGE * sizeof *pg->wide);
  if (!pg->wide) return NSP_AN_ENOMEM;
  for (unsigned i = 0; i < NSP_SEQ_PAGE; i++) pg->wide[i] = pg->base + pg->r[i].t_off;
  pg->wide[e] = t;
  return 0;
}

int nsp_an_comm_ref(const struct nsp_an_comm *c, uint64_t seq, struct nsp_ref_view *out) {
  memset(out, 0, sizeof *out);
  const struct nsp_ref_page *pg = nsp_paged_page((struct nsp_paged *)&c->refs, seq / NSP_SEQ_PAGE, 0);
  unsigned e = (unsigned)(seq % NSP_SEQ_PAGE);
  if (!pg || !(pg->r[e].sig & NSP_REF_SIG)) return 0;
  uint32_t v = pg->r[e].sig;
  out->sig = c->sigs[(v & NSP_REF_SIG) - 1];
  out->t_min = nsp_an_ref_time(pg, e);
  out->set = 1;
  out->differs = (v & NSP_REF_DIFFERS) != 0;
  out->premul_varies = (v & NSP_REF_PREMUL_VARIES) != 0;
  return 1;
}

void nsp_an_comm_refs_each(const struct nsp_an_comm *c, void (*fn)(void *ctx, uint64_t seq, const struct nsp_ref *r),
                           void *ctx) {
  for (size_t k = 0; k < c->refs.npages; k++) {
    const struct nsp_ref_page *pg = c->refs.pages[k];
    for (unsigned e = 0; e < NSP_SEQ_PAGE; e++)
      if (pg->r[e].sig & NSP_REF_SIG) fn(ctx, c->refs.page_nos[k] * NSP_SEQ_PAGE + e, &pg->r[e]);
  }
}

void nsp_an_comm_drop_refs(struct nsp_an_comm *c) {
  for (size_t k = 0; k < c->refs.npages; k++) free(((struct nsp_ref_page *)c->refs.pages[k])->wide);
  nsp_paged_free(&c->refs);
  free(c->sigs);
  c->sigs = NULL;
  c->nsigs = c->sigs_cap = 0;
  nsp_u64map_free(&c->sig_index);
}
