/* nsp_an_end.c - how each process ended (format 1.5).
 *
 * A process that runs its exit handlers writes an EXIT record and removes
 * its crash ring; one that is killed, crashes or calls _exit leaves the
 * ring, from which the reader makes a RINGSTATE record (the writer
 * thread's heartbeat, the time exit handlers ran if they did) and the
 * INFLIGHT records of the calls that had not returned.  A process still
 * running has its ring too, with a heartbeat a few ms old.  From those,
 * the job's "now", a SIGNAL record and, for a process of this host,
 * /proc/<pid>, each trace gets its end state (nsp_trace_info.end), never
 * claiming more than it knows.  LIBNCCL records (a libnccl the shim does
 * not interpose) are kept here too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nsp_an_model.h"
#include "nsp_names.h"

/* Calls (api, entry) remembered for the INFLIGHT duplicate check: the
 * reader of a live process's ring may see a call in flight and then its
 * record, committed microseconds later; a few thousand records cover that. */
#define NSP_RECENT 4096

/* The shortest time a running process's call must have waited to be a
 * hang, and the longest since a heartbeat for a process to be running
 * (unless nsp_job_set_live_min says otherwise). */
#define NSP_LIVE_MIN_NS 10000000000ull

/* /proc's start time is from the boot time, in whole seconds: this much
 * later than the trace's start still counts as the same process. */
#define NSP_START_SLACK_NS 2000000000ll

uint64_t nsp_an_live_ns(const struct nsp_trace *t) {
  uint64_t flush_ms = nsp_an_env_ms(&t->info, "NCCLSPY_FLUSH_MS", 1000, 1, 3600000);
  uint64_t ns = 3 * flush_ms * 1000000u, min = t->live_min_ns ? t->live_min_ns : NSP_LIVE_MIN_NS;
  return ns > min ? ns : min;
}

int nsp_an_end_note_call(struct nsp_trace *t, int api, uint64_t t_enter) {
  if (!t->recent && !(t->recent = calloc(NSP_RECENT, sizeof *t->recent))) return NSP_AN_ENOMEM;
  t->recent[t->nrecent++ % NSP_RECENT] = (struct nsp_call_key){t_enter, api};
  return 0;
}

int nsp_an_end_seen(const struct nsp_trace *t, int api, uint64_t t_enter) {
  size_t n = t->nrecent < NSP_RECENT ? t->nrecent : NSP_RECENT;
  for (size_t i = 0; i < n; i++)
    if (t->recent[i].t_enter == t_enter && t->recent[i].api == api) return 1;
  return 0;
}

int nsp_an_end_load(struct nsp_trace *t, const struct nsp_rec *rec) {
  switch (rec->kind) {
    case NSP_REC_EXIT:
      t->has_exit = 1;
      t->exit_mono = nsp_rec_exit_t(rec);
      t->exit_inflight = nsp_rec_exit_inflight(rec);
      t->exit_status = nsp_rec_exit_status(rec);
      return 0;
    case NSP_REC_RINGSTATE:
      t->has_ring = 1;
      t->ring_heartbeat = nsp_rec_ringstate_heartbeat(rec);
      t->ring_heartbeat_wall = nsp_rec_ringstate_heartbeat_wall(rec);
      t->ring_exited = nsp_rec_ringstate_exited(rec);
      t->ring_unslotted = nsp_rec_ringstate_unslotted(rec);
      return 0;
    case NSP_REC_LIBNCCL: {
      const char *path = rec->ext ? nsp_rec_libnccl_path(rec) : NULL;
      NSP_TRY(nsp_grow(&t->libnccl, &t->libnccl_cap, t->nlibnccl + 1, sizeof *t->libnccl));
      struct nsp_libnccl *l = &t->libnccl[t->nlibnccl];
      if (!(l->path = strdup(path ? path : ""))) return NSP_AN_ENOMEM;
      l->version = rec->ext ? nsp_rec_libnccl_version(rec) : 0;
      l->time_ns = nsp_an_wall(t, nsp_rec_libnccl_t(rec));
      t->nlibnccl++;
      return 0;
    }
    default:
      return 0;
  }
}

/* The local host name /proc may answer for; NULL none. */
static const char *local_host(struct nsp_job *job) {
  if (job->local_host_set) return job->local_host && job->local_host[0] ? job->local_host : NULL;
  char h[NSP_HOST_MAX + 1] = "";
  if (gethostname(h, sizeof h - 1) != 0) h[0] = 0;
  job->local_host = strdup(h);
  job->local_host_set = 1;
  return job->local_host && job->local_host[0] ? job->local_host : NULL;
}

/* Boot time, s since the epoch (/proc/stat's btime); 0 unknown. */
static long long boot_time(void) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return 0;
  char line[256];
  long long bt = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "btime %lld", &bt) == 1) break;
  fclose(f);
  return bt;
}

/* True when process pid has ncclspy mapped (libncclspy.so, or its crash
 * ring <trace>.ring): a traced process, not a kernel thread or a
 * container's neighbour that happens to have the pid.  False when its maps
 * cannot be read (another user's process): nothing is claimed. */
static int maps_ncclspy(uint32_t pid) {
  char path[64], line[4096];
  snprintf(path, sizeof path, "/proc/%u/maps", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, "ncclspy") != NULL;
  fclose(f);
  return found;
}

/* True when process pid of this host is alive (not a zombie), started no
 * later than start_ns (wall clock, ns) and has ncclspy mapped: the process
 * that wrote a trace opened then, not a later one that got its pid. */
static int pid_alive_since(uint32_t pid, int64_t start_ns) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%u/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
  const char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ') return 0;
  char state = p[2];
  if (state == 'Z' || state == 'X' || state == 'x') return 0;
  /* Field 22, starttime (clock ticks after boot), is the 20th after ")". */
  p += 2;
  for (int field = 3; field < 22 && p; field++) {
    p = strchr(p, ' ');
    if (p) p++;
  }
  unsigned long long ticks;
  long hz = sysconf(_SC_CLK_TCK);
  long long bt = boot_time();
  if (!p || sscanf(p, "%llu", &ticks) != 1 || hz <= 0 || !bt) return 0;
  int64_t started = (int64_t)bt * 1000000000ll + (int64_t)(ticks * (1000000000ull / (unsigned long long)hz));
  return started <= start_ns + NSP_START_SLACK_NS && maps_ncclspy(pid);
}

static int64_t now_ns(const struct nsp_job *job) {
  if (job->now_ns) return job->now_ns;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* b - a, ns, wrapping instead of overflowing (times come from the traces). */
static int64_t diff_ns(int64_t b, int64_t a) { return (int64_t)((uint64_t)b - (uint64_t)a); }

static void set_running(struct nsp_end_info *e, int source, int64_t heard, int64_t now) {
  e->state = NSP_END_RUNNING;
  e->source = source;
  e->time_ns = heard;
  e->age_ns = heard && diff_ns(now, heard) > 0 ? diff_ns(now, heard) : 0;
}

int nsp_an_end_decide(struct nsp_job *job, struct nsp_trace *t) {
  struct nsp_end_info *e = &t->info.end;
  memset(e, 0, sizeof *e);
  e->signal = e->why = "";
  e->exit_status = -1;
  e->format_minor = t->minor;
  t->info.inflight = t->inflight;
  t->info.ninflight = t->ninflight;
  t->info.libnccl = t->libnccl;
  t->info.nlibnccl = t->nlibnccl;
  e->inflight = t->ninflight;
  e->unslotted = t->ring_unslotted;
  if (t->minor < 5) {
    /* An older shim wrote no EXIT record: nothing is claimed. */
    static const char *const older[] = {"no exit record in trace format 1.0", "no exit record in trace format 1.1",
                                        "no exit record in trace format 1.2", "no exit record in trace format 1.3",
                                        "no exit record in trace format 1.4"};
    e->why = older[t->minor];
    return 0;
  }
  int64_t now = now_ns(job), end = t->t_last ? nsp_an_wall(t, t->t_last) : 0;
  const char *host = local_host(job);
  int local = host && !strncmp(t->hdr_host, host, NSP_HOST_MAX);
  int died_of_signal = t->has_sig && !t->sig.went_on;
  if (t->has_exit) {
    e->state = NSP_END_EXITED;
    e->source = NSP_ENDSRC_EXIT;
    e->time_ns = nsp_an_wall(t, t->exit_mono);
    e->inflight = t->exit_inflight;
    e->exit_status = t->exit_status;
  } else if (t->has_ring && t->ring_exited) {
    /* Exit handlers ran, but the trace could not be finished. */
    e->state = NSP_END_EXITED;
    e->source = NSP_ENDSRC_RING;
    e->time_ns = nsp_an_wall(t, t->ring_exited);
  } else if (t->has_ring) {
    int64_t hb = t->ring_heartbeat_wall ? (int64_t)t->ring_heartbeat_wall
                 : t->ring_heartbeat    ? nsp_an_wall(t, t->ring_heartbeat)
                                        : 0;
    /* On this host /proc decides: a process killed a moment ago has a
     * recent heartbeat too.  Elsewhere, heard from within the live window
     * (a heartbeat a little ahead of "now" is another host's clock). */
    int64_t live = (int64_t)nsp_an_live_ns(t);
    if (local ? pid_alive_since(t->info.pid, t->info.realtime_ns)
              : hb && diff_ns(now, hb) <= live && diff_ns(now, hb) >= -live) {
      set_running(e, local ? NSP_ENDSRC_PROC : NSP_ENDSRC_RING, hb ? hb : end, now);
    } else {
      e->state = died_of_signal ? NSP_END_CRASHED : NSP_END_KILLED;
      e->source = NSP_ENDSRC_RING;
      e->time_ns = hb > end ? hb : end; /* its last sign of life: a call's entry may come after the heartbeat */
    }
  } else if (local && pid_alive_since(t->info.pid, t->info.realtime_ns)) {
    set_running(e, NSP_ENDSRC_PROC, end, now);
  } else if (died_of_signal) {
    e->state = NSP_END_CRASHED;
    e->source = NSP_ENDSRC_SIGNAL;
    e->time_ns = end;
  } else {
    e->why = t->ring_bad == 2 ? "no exit record, and its crash ring is unreadable and was ignored"
                              : "no exit record and no crash ring";
  }
  /* Still running well after a fatal signal: its handler went on. */
  if (e->state == NSP_END_RUNNING) nsp_an_signal_survived(t, t->t_last);
  if (e->state == NSP_END_CRASHED) {
    e->signo = t->sig.signo;
    e->signal = t->sig.name;
  }
  /* What each call in flight waited, to the last sign of life. */
  for (size_t i = 0; i < t->ninflight; i++) {
    int64_t w = diff_ns(end, t->inflight[i].call.time_ns);
    t->inflight[i].wait_ns = w > 0 ? w : 0;
  }
  return 0;
}

/* A process killed (or crashed) inside a call it had entered less than
 * this long before its last sign of life: a job stopped by its time limit
 * or an operator kills every rank in the middle of healthy calls, so such
 * a call is no evidence that it would not have returned. */
#define NSP_DEAD_YOUNG_NS 1000000000ull

int nsp_an_end_young(const struct nsp_trace *t, uint64_t t_enter) {
  int st = t->info.end.state;
  if (st == NSP_END_RUNNING) return t->t_last < t_enter || t->t_last - t_enter < nsp_an_live_ns(t);
  /* A trace cut or damaged, or one that ends without an exit record or a
   * crash ring: its process may have lived on past its last record. */
  int unseen = st == NSP_END_UNKNOWN && (t->minor >= 5 || t->read_problem);
  if (st != NSP_END_KILLED && st != NSP_END_CRASHED && !unseen) return 0;
  uint64_t last = t->ring_heartbeat > t->t_last ? t->ring_heartbeat : t->t_last;
  return last < t_enter || last - t_enter < NSP_DEAD_YOUNG_NS;
}

int nsp_an_job_starting(const struct nsp_job *job) {
  int64_t first = 0;
  for (size_t i = 0; i < job->ntraces; i++) {
    const struct nsp_trace *t = job->traces[i];
    if (t->info.end.state != NSP_END_RUNNING) return 0;
    if (!first || t->info.realtime_ns < first) first = t->info.realtime_ns;
  }
  if (!job->ntraces) return 0;
  return diff_ns(now_ns(job), first) < (int64_t)nsp_an_live_ns(job->traces[0]);
}

int nsp_an_killed_active(const struct nsp_job *job, const struct nsp_an_comm *c) {
  int64_t first = 0, last = 0;
  size_t n = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    const struct nsp_trace *t = job->traces[job->members[c->members[k]].trace];
    const struct nsp_end_info *e = &t->info.end;
    if (e->state != NSP_END_KILLED || !e->time_ns || !t->t_last) return 0;
    /* Active when it died: its last call less than NSP_DEAD_YOUNG_NS before. */
    if (diff_ns(e->time_ns, nsp_an_wall(t, t->t_last)) >= (int64_t)NSP_DEAD_YOUNG_NS) return 0;
    if (!n++ || e->time_ns < first) first = e->time_ns;
    if (e->time_ns > last) last = e->time_ns;
  }
  return n >= 2 && diff_ns(last, first) < (int64_t)NSP_DEAD_YOUNG_NS;
}

void nsp_an_end_free(struct nsp_trace *t) {
  for (size_t i = 0; i < t->nlibnccl; i++) free((void *)t->libnccl[i].path);
  free(t->libnccl);
  free(t->inflight);
  free(t->failed_inits);
  free(t->splits);
  free(t->recent);
  t->recent = NULL;
}
