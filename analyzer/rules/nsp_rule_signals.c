/* nsp_rule_signals.c - rule 7 of docs/REPORT.md: processes that died of a
 * fatal signal (format 1.3; model/nsp_an_sigload.c loads them).  One
 * finding names the first process to die, its signal and where it was,
 * then the others; its link makes the hangs, wavefronts and errors that a
 * dead rank explains follow from it. */
#include <stdlib.h>
#include <string.h>

#include "nsp_names.h"
#include "nsp_rule.h"

static int died(const struct nsp_trace *t) { return t->has_sig && !t->sig.went_on; }

static int cmp_sig_trace(const void *pa, const void *pb, void *ctx) {
  const struct nsp_job *job = ctx;
  const struct nsp_trace *a = job->traces[*(const size_t *)pa], *b = job->traces[*(const size_t *)pb];
  if (a->sig.time_ns != b->sig.time_ns) return a->sig.time_ns < b->sig.time_ns ? -1 : 1;
  return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

/* nsp_an_sides_by_key callbacks of the signal finding: by signal, each
 * process with its last call, its signal and the stack it died with. */
static int sig_key(const struct nsp_trace *t) { return t->sig.signo; }

static int sig_proc(struct nsp_job *job, struct nsp_proc *p, const struct nsp_trace *t) {
  (void)job;
  if (t->last_call.valid) p->call = t->last_call.call;
  p->call.last_error = NULL;
  p->signal = &t->sig;
  p->site = t->sig.stack;
  return 0;
}

static int sig_side(struct nsp_job *job, struct nsp_side *side) {
  (void)job;
  return nsp_an_set_side_text(side, side->procs[0].signal->name);
}

static const char *base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* "SIGSEGV (SEGV_MAPERR: address not mapped to an object, at address 0x0)" */
static void put_signal(struct nsp_sbuf *b, const struct nsp_signal *s, uint32_t own_pid) {
  nsp_sbuf_printf(b, "%s", s->name);
  if (s->code > 0 && s->code_name[0]) {
    nsp_sbuf_printf(b, " (%s: %s", s->code_name, s->code_text);
    if (s->signo != 6 && s->code != 0x80) nsp_sbuf_printf(b, ", at address 0x%llx", (unsigned long long)s->addr);
    nsp_sbuf_printf(b, ")");
  } else if (s->code <= 0 && s->sender_pid && (uint32_t)s->sender_pid == own_pid) {
    nsp_sbuf_printf(b, " (raised by the process itself: abort(), a failed assert, raise())");
  } else if (s->code <= 0 && s->sender_pid) {
    nsp_sbuf_printf(b, " (sent by pid %d)", s->sender_pid);
  }
}

/* " in FUNC (MODULE+0xOFF)" for the first frame of the stack kept. */
static void put_where(struct nsp_sbuf *b, const struct nsp_signal *s) {
  if (!s->stack || !s->stack->nframes) return;
  const struct nsp_frame *f = &s->stack->frames[0];
  /* As the stack below names it: function and file:line from the debug
   * information when there is some (nsp_an_symbolize.c). */
  if (f->function && f->file && f->line > 0)
    nsp_sbuf_printf(b, " in %s (%s:%d)", f->function, base_name(f->file), f->line);
  else if (f->symbol[0]) nsp_sbuf_printf(b, " in %s (%s+0x%llx)", f->symbol, base_name(f->module), (unsigned long long)f->offset);
  else nsp_sbuf_printf(b, " at %s+0x%llx", f->module[0] ? base_name(f->module) : "?", (unsigned long long)f->offset);
  /* Where it hit, when that frame was left out: inside NCCL. */
  const char *m0 = base_name(s->first_module);
  if (s->stack->nskipped && !strncmp(m0, "libnccl", 7) && strncmp(m0, "libncclspy", 10))
    nsp_sbuf_printf(b, ", inside NCCL (%s%s%s)", m0, s->first_symbol[0] ? " " : "", s->first_symbol);
}

static int message(struct nsp_job *job, struct nsp_finding_priv *f) {
  const struct nsp_proc *o = &f->sides[0].procs[0];
  const struct nsp_trace *t = job->traces[o->trace];
  struct nsp_sbuf b = {0};
  nsp_an_put_job_ranks(&b, job, &o->rank, 1);
  nsp_sbuf_printf(&b, " (%s pid %u) died of ", o->host, (unsigned)o->pid);
  put_signal(&b, o->signal, o->pid);
  put_where(&b, o->signal);
  if (o->call.api >= 0) {
    char cb[256];
    nsp_format_call(cb, sizeof cb, &o->call);
    int64_t gap = (int64_t)((uint64_t)o->signal->time_ns - (uint64_t)o->call.time_ns);
    if (gap < 1000000000 && gap > -1000000000) nsp_sbuf_printf(&b, "; its last NCCL call, %.3f ms before: %s", (double)gap / 1e6, cb);
    else nsp_sbuf_printf(&b, "; its last NCCL call, %.3f s before: %s", (double)gap / 1e9, cb);
    if (nsp_api_kind(o->call.api) == NSP_K_COLL || nsp_api_kind(o->call.api) == NSP_K_P2P)
      nsp_sbuf_printf(&b, " seq %llu", (unsigned long long)o->call.seq);
    if (o->call.comm_id) nsp_sbuf_printf(&b, " on communicator %016llx", (unsigned long long)o->call.comm_id);
    if (o->call.done >= 0) nsp_sbuf_printf(&b, " (%s)", o->call.done ? "completed" : "never completed");
  } else {
    nsp_sbuf_printf(&b, "; it had made no NCCL call on a communicator");
  }
  if (o->signal->flags & NSP_SIG_CHAINED) nsp_sbuf_printf(&b, "; the program's own handler ran after it");
  if (t->first_err.valid && t->first_err.call.time_ns <= o->signal->time_ns) {
    char rb[32];
    nsp_sbuf_printf(&b, "; it had an NCCL error first (%s)", nsp_result_name(t->first_err.call.result, rb, sizeof rb));
  }
  if (f->pub.nsides > 1) {
    nsp_sbuf_printf(&b, "; later:");
    for (size_t s = 1; s < f->pub.nsides; s++) {
      nsp_sbuf_printf(&b, "%s ", s > 1 ? "," : "");
      nsp_an_put_side_ranks(&b, job, &f->pub, &f->sides[s]);
      nsp_sbuf_printf(&b, " %s", f->sides[s].text);
    }
  }
  return nsp_an_take_message(f, &b);
}

static int check(struct nsp_job *job) {
  size_t n = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    struct nsp_trace *t = job->traces[i];
    if (died(t)) n++;
    else if (t->has_sig) {
      char rb[32];
      NSP_TRY(nsp_job_notef(job, "%s: %s at +%.6f s did not end the process (its NCCL calls went on: the "
                                 "program's own handler dealt with it)",
                            t->info.path, nsp_signal_name(t->sig.signo, rb, sizeof rb),
                            /* times come from the traces: no signed overflow */
                            (double)(int64_t)((uint64_t)t->sig.time_ns - (uint64_t)job->start_ns) / 1e9));
    }
  }
  if (!n) return 0;
  size_t *ti = malloc(n * sizeof *ti);
  int ret = ti ? 0 : NSP_AN_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; !ret && i < job->ntraces; i++)
    if (died(job->traces[i])) ti[k++] = i;
  if (!ret) qsort_r(ti, n, sizeof *ti, cmp_sig_trace, job);
  /* Sides: the first to die, then the others by signal, in the order
   * each signal first appeared. */
  struct nsp_finding_priv *f = ret ? NULL : nsp_an_new_finding(job, NSP_FIND_SIGNAL, NULL);
  if (!ret && !f) ret = NSP_AN_ENOMEM;
  if (!ret) ret = nsp_an_sides_by_key(job, f, ti, n, sig_key, sig_proc, sig_side);
  free(ti);
  NSP_TRY(ret);
  const struct nsp_proc *o = &f->sides[0].procs[0];
  f->pub.time_ns = o->signal->time_ns;
  f->pub.later = n - 1;
  NSP_TRY(nsp_an_set_odd(f, &o->rank, 1));
  job->signal_id = f->id;
  return 0;
}

/* The processes that died (every side of the signal finding) include the
 * process of trace ti. */
static const struct nsp_proc *dead_proc(const struct nsp_finding_priv *sf, size_t ti) {
  for (size_t s = 0; s < sf->pub.nsides; s++)
    for (size_t p = 0; p < sf->sides[s].nranks; p++)
      if (sf->sides[s].procs[p].trace == ti) return &sf->sides[s].procs[p];
  return NULL;
}

/* Some process of side s died, after its last call there. */
static int side_has_dead(const struct nsp_finding_priv *sf, const struct nsp_side *s) {
  for (size_t p = 0; s && p < s->nranks; p++) {
    const struct nsp_proc *d = dead_proc(sf, s->procs[p].trace);
    if (d && (!s->procs[p].call.time_ns || d->signal->time_ns >= s->procs[p].call.time_ns)) return 1;
  }
  return 0;
}

/* Runs last (NSP_LINK_LAST): a dead rank explains only what nothing else
 * explains. */
static int link(struct nsp_job *job) {
  struct nsp_finding_priv *sf = job->signal_id != SIZE_MAX ? nsp_an_finding_by_id(job, job->signal_id) : NULL;
  if (!sf) return 0;
  const struct nsp_proc *o = &sf->sides[0].procs[0];
  const struct nsp_trace *ot = job->traces[o->trace];
  /* The first to die had an NCCL error before it (a watchdog that aborts
   * on a timeout): the error explains the signal. */
  if (ot->first_err.valid && ot->first_err.call.time_ns <= o->signal->time_ns && job->error_id != SIZE_MAX) {
    sf->cause_id = job->error_id;
    return 0;
  }
  /* Otherwise a dead rank explains what waited for it: the wavefronts and
   * hangs it is behind in, the sends/recvs it left unmatched, and errors
   * that came after it (its peers' timeouts and remote errors). */
  for (size_t i = 0; i < job->nfindings; i++) {
    struct nsp_finding_priv *f = &job->findings[i];
    if (f == sf || f->cause_id != SIZE_MAX) continue;
    const struct nsp_side *behind = NULL, *waiting = NULL, *unknown = NULL;
    switch (f->pub.kind) {
      case NSP_FIND_STOPPED_EARLY:
        behind = f->pub.nsides ? &f->sides[0] : NULL;
        break;
      case NSP_FIND_HANG:
      case NSP_FIND_NEVER_COMPLETED:
        for (size_t s = 0; s < f->pub.nsides; s++) {
          if (f->sides[s].role == NSP_ROLE_NOT_ARRIVED) behind = &f->sides[s];
          /* A dead rank whose trace also lost records: it did not
           * arrive either, whatever its trace can prove. */
          if (f->sides[s].role == NSP_ROLE_ARRIVAL_UNKNOWN) unknown = &f->sides[s];
          if (f->sides[s].role == NSP_ROLE_WAITING && f->pub.kind == NSP_FIND_NEVER_COMPLETED) waiting = &f->sides[s];
        }
        break;
      case NSP_FIND_P2P_UNMATCHED:
        if (f->pub.nsides == 2) behind = f->sides[0].posted < f->sides[1].posted ? &f->sides[0] : &f->sides[1];
        break;
      case NSP_FIND_ERROR:
        if (f->pub.nsides && f->sides[0].nranks && f->pub.time_ns >= sf->pub.time_ns) f->cause_id = sf->id;
        break;
      default:
        break;
    }
    if (side_has_dead(sf, behind) || side_has_dead(sf, waiting) || side_has_dead(sf, unknown)) f->cause_id = sf->id;
  }
  return 0;
}

const struct nsp_rule nsp_rule_signals = {
    .name = "signals",
    .checks = "processes that died of a fatal signal: the first to die, its signal, stack and last call",
    .kinds = NSP_RULE_KINDS(NSP_FIND_SIGNAL),
    .check = check, .link = link, .link_stage = NSP_LINK_LAST, .message = message,
};
