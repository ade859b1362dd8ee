/* nsp_an_sigload.c - loading fatal signals (format 1.3).
 *
 * The shim's signal handler writes a SIGNAL record (signal, si_code,
 * address, thread, time and the thread's stack) into the crash ring just
 * before the process dies.  The loader keeps each trace's first one, and
 * at the trace's end whether the process went on after it; the "signal"
 * rule (rules/nsp_rule_signals.c) makes the finding. */
#include <stdlib.h>
#include <string.h>

#include "nsp_an_model.h"
#include "nsp_names.h"

/* Calls this long after a signal mean the process did not die of it. */
#define NSP_SIG_WENT_ON_NS 2000000000ull

int nsp_an_signal_load(struct nsp_trace *t, const struct nsp_rec *rec) {
  t->info.signals++;
  if (t->has_sig) return 0; /* the first one is what ended it (or began the end) */
  char nb[32];
  const struct nsp_rec_ext *x = rec->ext && rec->ext->nframes ? rec->ext : NULL;
  t->sig_name = strdup(nsp_signal_name((int)nsp_rec_signal_signo(rec), nb, sizeof nb));
  t->sig_mod0 = strdup(x && x->frame_module[0] ? x->frame_module[0] : "");
  t->sig_sym0 = strdup(x && x->frame_symbol[0] ? x->frame_symbol[0] : "");
  if (!t->sig_name || !t->sig_mod0 || !t->sig_sym0) return NSP_AN_ENOMEM;
  /* Sent or raised (abort): the runtime's frames on top are not where the
   * problem is. */
  if (x && !(t->sig_stack = nsp_an_stack_make(x, 0, NSP_SITE_FULL, nsp_rec_signal_code(rec) <= 0))) return NSP_AN_ENOMEM;
  struct nsp_signal *s = &t->sig;
  memset(s, 0, sizeof *s);
  s->signo = (int)nsp_rec_signal_signo(rec);
  s->name = t->sig_name;
  s->code = nsp_rec_signal_code(rec);
  s->code_name = nsp_signal_code_name(s->signo, s->code);
  s->code_text = nsp_signal_code_text(s->signo, s->code);
  s->addr = nsp_rec_signal_addr(rec);
  s->tid = nsp_rec_signal_tid(rec);
  s->sender_pid = nsp_rec_signal_sender_pid(rec) > 0 ? nsp_rec_signal_sender_pid(rec) : 0;
  s->flags = nsp_rec_signal_flags(rec);
  s->time_ns = nsp_an_wall(t, nsp_rec_signal_t(rec));
  s->stack = t->sig_stack;
  s->first_module = t->sig_mod0;
  s->first_symbol = t->sig_sym0;
  t->sig_mono = nsp_rec_signal_t(rec);
  t->has_sig = 1;
  t->info.signal = s;
  return 0;
}

void nsp_an_signal_finish(struct nsp_trace *t) {
  if (t->has_sig && t->max_call_mono > t->sig_mono && t->max_call_mono - t->sig_mono > NSP_SIG_WENT_ON_NS)
    t->sig.went_on = 1;
}

void nsp_an_signal_survived(struct nsp_trace *t, uint64_t alive_mono) {
  if (t->has_sig && alive_mono > t->sig_mono && alive_mono - t->sig_mono > NSP_SIG_WENT_ON_NS) t->sig.went_on = 1;
}

void nsp_an_signal_free(struct nsp_trace *t) {
  free(t->sig_stack);
  free(t->sig_name);
  free(t->sig_mod0);
  free(t->sig_sym0);
}
