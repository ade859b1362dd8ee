/* nsp_an_job.c - the job object: adding traces, accessors, teardown. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "nsp_an_job.h"
#include "nsp_reader.h"

struct nsp_job *nsp_job_create(void) {
  struct nsp_job *job = calloc(1, sizeof(struct nsp_job));
  if (job) job->error_id = job->signal_id = SIZE_MAX;
  return job;
}

void nsp_job_destroy(struct nsp_job *job) {
  if (!job) return;
  for (size_t i = 0; i < job->ntraces; i++) nsp_an_trace_free(job->traces[i]);
  free(job->traces);
  for (size_t i = 0; i < job->ncomms; i++) nsp_an_comm_free(job->comms[i]);
  free(job->comms);
  nsp_u64map_free(&job->comm_by_id);
  nsp_u64map_free(&job->trace_by_process);
  for (size_t i = 0; i < job->nmembers; i++) nsp_an_member_free(&job->members[i]);
  free(job->members);
  nsp_u64map_free(&job->member_by_trace);
  for (size_t i = 0; i < job->nnotes; i++) free(job->notes[i]);
  free(job->notes);
  for (size_t i = 0; i < job->nfindings; i++) nsp_an_finding_free(&job->findings[i]);
  free(job->findings);
  free(job->site_req);
  nsp_an_perf_free(job->perf);
  free(job->summary);
  free(job->headline);
  free(job->files);
  nsp_u64map_free(&job->file_by_id);
  free(job->local_host);
  for (size_t r = 0; r < job->nruns; r++) free(job->runs[r].id);
  free(job->runs);
  free(job->run_sel);
  nsp_an_sym_destroy(job->sym);
  free(job);
}

int nsp_job_set_now(struct nsp_job *job, int64_t now_ns) {
  if (!job || now_ns < 0) return NSP_AN_EINVAL;
  if (job->ntraces || job->analyzed) return NSP_AN_ESTATE;
  job->now_ns = now_ns;
  return 0;
}

int nsp_job_set_live_min(struct nsp_job *job, int64_t ns) {
  if (!job || ns <= 0) return NSP_AN_EINVAL;
  if (job->ntraces || job->analyzed) return NSP_AN_ESTATE;
  job->live_min_ns = ns;
  return 0;
}

int nsp_job_set_threads(struct nsp_job *job, int n) {
  if (!job || n < 0 || n > NSP_JOB_THREADS_MAX) return NSP_AN_EINVAL;
  if (job->ntraces || job->analyzed) return NSP_AN_ESTATE;
  job->threads = n;
  return 0;
}

int nsp_job_set_full_read(struct nsp_job *job, int on) {
  if (!job) return NSP_AN_EINVAL;
  if (job->ntraces || job->analyzed) return NSP_AN_ESTATE;
  job->full_read = on != 0;
  return 0;
}

uint64_t nsp_job_frames_stepped_over(const struct nsp_job *job) { return job ? job->frames_skipped : 0; }

void nsp_job_set_progress(struct nsp_job *job, nsp_job_progress_fn *fn, void *arg) {
  if (!job) return;
  job->progress_fn = fn;
  job->progress_arg = arg;
}

int nsp_job_set_local_host(struct nsp_job *job, const char *host) {
  if (!job) return NSP_AN_EINVAL;
  if (job->ntraces || job->analyzed) return NSP_AN_ESTATE;
  char *h = host ? strdup(host) : NULL;
  if (host && !h) return NSP_AN_ENOMEM;
  free(job->local_host);
  job->local_host = h;
  job->local_host_set = host != NULL; /* NULL: gethostname() when needed */
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* A crash-ring sidecar: read along with its trace, never on its own. */
static int is_ring(const char *path) { return ends_with(path, ".ncclspy.ring"); }

/* Whether the file st describes (device and inode) was added before, by
 * another path or another spelling of its directory: 1 (counted as read
 * for progress), or 0 and it is now known.  NSP_AN_ENOMEM. */
static int file_seen(struct nsp_job *job, const struct stat *st) {
  uint64_t dev = (uint64_t)st->st_dev, ino = (uint64_t)st->st_ino;
  /* Found by the pair's hash; a hash two files share falls back to
   * comparing every file (never seen, but exact either way). */
  uint64_t key = nsp_u64map_hash(dev) ^ ino;
  const size_t *seen = nsp_u64map_get(&job->file_by_id, key);
  size_t from = 0, to = 0;
  if (seen && job->files[*seen].dev == dev && job->files[*seen].ino == ino) from = *seen, to = *seen + 1;
  else if (seen) to = job->nfiles;
  for (size_t i = from; i < to; i++)
    if (job->files[i].dev == dev && job->files[i].ino == ino) {
      nsp_an_progress_file(job, (uint64_t)st->st_size);
      return 1;
    }
  NSP_TRY(nsp_grow(&job->files, &job->files_cap, job->nfiles + 1, sizeof *job->files));
  if (!seen && nsp_u64map_put(&job->file_by_id, key, job->nfiles) < 0) return NSP_AN_ENOMEM;
  job->files[job->nfiles].dev = dev;
  job->files[job->nfiles].ino = ino;
  job->nfiles++;
  return 0;
}

/* Loads one trace file unless file_seen.  Returns 1 (added or already
 * there), NSP_AN_EREAD or NSP_AN_ENOMEM. */
static int add_file(struct nsp_job *job, const char *path, const struct stat *st) {
  int seen = file_seen(job, st);
  if (seen) return seen;
  nsp_an_load_begin(job);
  return nsp_an_load_trace(job, path, NULL, 0);
}

/* Whether directory `path` holds a *.ncclspy file (one level, no more). */
static int dir_has_traces(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d))) found = e->d_name[0] != '.' && ends_with(e->d_name, ".ncclspy");
  closedir(d);
  return found;
}

/* One file of a directory, for the order it is read in. */
struct dir_entry {
  char *name;
  size_t pos;         /* in name order */
  size_t size;        /* bytes */
  uint8_t id[32 + NSP_HOST_MAX]; /* the header's clock pair, pid and host; all 0 when unreadable */
};

/* The bytes of a trace header that say which process wrote it (the copy
 * check of nsp_an_load_trace compares the same fields). */
static void read_identity(struct dir_entry *e) {
  const void *m;
  size_t len;
  memset(e->id, 0, sizeof e->id);
  e->size = 0;
  if (nsp_map_regular(e->name, 0, &m, &len) < 0) return;
  const uint8_t *d = m;
  if (len >= 48 + NSP_HOST_MAX && !memcmp(d, NSP_MAGIC, 8)) {
    memcpy(e->id, d + 16, 24);        /* realtime, monotonic, pid */
    memcpy(e->id + 32, d + 48, NSP_HOST_MAX);
    e->size = len;
  }
  if (m) munmap((void *)m, len);
}

static int cmp_identity(const void *a, const void *b) {
  const struct dir_entry *x = a, *y = b;
  int c = memcmp(x->id, y->id, sizeof x->id);
  if (c) return c;
  if (x->size != y->size) return x->size > y->size ? -1 : 1; /* longest first */
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Copies of one process's trace (a trace renamed to .rank<R> mid-copy, a
 * snapshot beside the final file) are one process, read once, the first
 * in reading order: put the longest copy (traces are only appended to)
 * where the first copy by name was.  names[n] are in name order. */
static void longest_copy_first(char **names, size_t n) {
  struct dir_entry *e = calloc(n ? n : 1, sizeof *e);
  if (!e) return; /* name order, then: still correct, maybe not the longest */
  for (size_t i = 0; i < n; i++) {
    e[i].name = names[i];
    e[i].pos = i;
    read_identity(&e[i]);
  }
  qsort(e, n, sizeof *e, cmp_identity);
  static const uint8_t none[sizeof e->id];
  for (size_t i = 0, j; i < n; i = j) {
    size_t first = e[i].pos;
    for (j = i + 1; j < n && !memcmp(e[j].id, e[i].id, sizeof e->id); j++)
      if (e[j].pos < first) first = e[j].pos;
    if (j - i < 2 || !memcmp(e[i].id, none, sizeof none) || first == e[i].pos) continue;
    char *t = names[first]; /* e[i] is the longest copy */
    names[first] = names[e[i].pos];
    names[e[i].pos] = t;
  }
  free(e);
}

static char *rank_name_of(const char *dir, const char *listed);

static int add_dir(struct nsp_job *job, const char *path) {
  DIR *d = opendir(path);
  if (!d) {
    snprintf(job->err, sizeof job->err, "%s: %s", path, strerror(errno));
    return NSP_AN_EREAD;
  }
  const char *sep = ends_with(path, "/") ? "" : "/";
  char **names = NULL;
  size_t n = 0, cap = 0;
  int ret = 0;
  /* Subdirectories are not searched; when the directory has no trace of
   * its own, the error text names those that hold traces. */
  char subdirs[256] = "";
  size_t nsub = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (!ends_with(e->d_name, ".ncclspy")) {
      if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN && e->d_type != DT_LNK) continue;
      char *sub = nsp_asprintf("%s%s%s", path, sep, e->d_name);
      struct stat st;
      if (sub && stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && dir_has_traces(sub)) {
        size_t len = strlen(subdirs);
        if (nsub < 3) snprintf(subdirs + len, sizeof subdirs - len, "%s%s", nsub ? ", " : "", sub);
        else if (nsub == 3) snprintf(subdirs + len, sizeof subdirs - len, ", ...");
        nsub++;
      }
      free(sub);
      continue;
    }
    char *full = nsp_asprintf("%s%s%s", path, sep, e->d_name);
    if (!full || nsp_grow(&names, &cap, n + 1, sizeof *names) < 0) {
      free(full);
      ret = NSP_AN_ENOMEM;
      break;
    }
    names[n++] = full;
  }
  closedir(d);
  /* Name order makes the report independent of readdir order. */
  if (n) qsort(names, n, sizeof *names, cmp_str);
  longest_copy_first(names, n);
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0) bytes += (uint64_t)st.st_size;
  }
  nsp_an_progress_more(job, n, bytes);
  /* Which file each name reads (a live process may have renamed its
   * trace after its rank meanwhile), each file once; then the files, in
   * order, decoded on the job's threads. */
  const char **load = calloc(n ? n : 1, sizeof *load);
  char **renamed = calloc(n ? n : 1, sizeof *renamed);
  int *results = calloc(n ? n : 1, sizeof *results);
  size_t nload = 0;
  if (!load || !renamed || !results) ret = NSP_AN_ENOMEM;
  for (size_t i = 0; i < n && ret == 0; i++) {
    struct stat st;
    const char *file = NULL;
    if (stat(names[i], &st) < 0 && errno == ENOENT && (renamed[i] = rank_name_of(path, names[i])) &&
        stat(renamed[i], &st) == 0 && S_ISREG(st.st_mode))
      file = renamed[i];
    else if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
      file = names[i];
    int r = file ? file_seen(job, &st) : 0;
    if (r < 0) ret = r;
    else if (!r) load[nload++] = file ? file : names[i]; /* not a regular file: its load says why */
  }
  if (ret == 0) ret = nsp_an_load_traces(job, nload, load, NULL, NULL, results, NULL);
  int added = (int)(n - nload);  /* files already added count as added */
  for (size_t k = 0; ret == 0 && k < nload; k++) added += results[k] > 0;
  for (size_t i = 0; renamed && i < n; i++) free(renamed[i]);
  free(renamed);
  free(load);
  free(results);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  if (ret == 0 && !n && nsub)
    snprintf(job->err, sizeof job->err,
             "%s: no *.ncclspy trace in it; subdirectories are not searched, and %zu of them hold traces "
             "(%s): name them instead",
             path, nsub, subdirs);
  return ret < 0 ? ret : added;
}

/* A running process's trace "<host>.<pid>.ncclspy" becomes
 * "<host>.<pid>.rank<R>.ncclspy" once its rank is known (the shim renames
 * it, its ring with it): when the listed name is gone, the new one in
 * dir, or NULL (caller frees). */
static char *rank_name_of(const char *dir, const char *listed) {
  const char *base = strrchr(listed, '/');
  base = base ? base + 1 : listed;
  size_t blen = strlen(base), suf = strlen(".ncclspy");
  if (blen <= suf || strstr(base, ".rank")) return NULL;
  size_t stem = blen - suf; /* "<host>.<pid>" */
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char *found = NULL;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    const char *nm = e->d_name;
    if (strncmp(nm, base, stem) || strncmp(nm + stem, ".rank", 5) || !ends_with(nm, ".ncclspy")) continue;
    size_t len = strlen(dir) + 1 + strlen(nm) + 1;
    found = malloc(len);
    if (found) snprintf(found, len, "%s/%s", dir, nm);
  }
  closedir(d);
  return found;
}

int nsp_job_add_path(struct nsp_job *job, const char *path) {
  if (!job || !path || !*path) return NSP_AN_EINVAL;
  if (job->analyzed) return NSP_AN_ESTATE;
  job->err[0] = 0;
  struct stat st;
  if (stat(path, &st) < 0) {
    snprintf(job->err, sizeof job->err, "%s: %s", path, strerror(errno));
    NSP_TRY(nsp_job_notef(job, "%s: not read: %s", path, strerror(errno)));
    return NSP_AN_EREAD;
  }
  if (S_ISDIR(st.st_mode)) return add_dir(job, path);
  if (is_ring(path)) return 0; /* read by its trace (a shell glob names both) */
  nsp_an_progress_more(job, 1, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
  if (S_ISREG(st.st_mode)) return add_file(job, path, &st);
  nsp_an_load_begin(job);
  return nsp_an_load_trace(job, path, NULL, 0);
}

int nsp_job_add_paths(struct nsp_job *job, size_t n, const char *const *paths, int *results, char **errors) {
  if (!job || (n && (!paths || !results))) return NSP_AN_EINVAL;
  if (job->analyzed) return NSP_AN_ESTATE;
  for (size_t k = 0; k < n; k++) {
    if (!paths[k] || !*paths[k]) return NSP_AN_EINVAL;
    results[k] = 0;
    if (errors) errors[k] = NULL;
  }
  const char **batch = calloc(n ? n : 1, sizeof *batch);
  size_t *where = calloc(n ? n : 1, sizeof *where);
  int *got = calloc(n ? n : 1, sizeof *got);
  char **errs = calloc(n ? n : 1, sizeof *errs);
  int ret = batch && where && got && errs ? 0 : NSP_AN_ENOMEM;
  for (size_t k = 0; k < n && !ret;) {
    /* A run of regular files is read as one batch, on the job's threads;
     * anything else (a directory, a ring, what stat refuses) alone. */
    size_t nb = 0, j = k;
    struct stat st;
    while (j < n && !ret && !is_ring(paths[j]) && stat(paths[j], &st) == 0 && S_ISREG(st.st_mode)) {
      nsp_an_progress_more(job, 1, (uint64_t)st.st_size);
      int seen = file_seen(job, &st);
      if (seen < 0) ret = seen;
      else if (seen) results[j] = 1;
      else batch[nb] = paths[j], where[nb++] = j;
      j++;
    }
    if (nb && !ret) {
      ret = nsp_an_load_traces(job, nb, batch, NULL, NULL, got, errs);
      for (size_t b = 0; b < nb; b++) {
        results[where[b]] = got[b];
        if (errors) errors[where[b]] = errs[b];
        else free(errs[b]);
        errs[b] = NULL;
      }
    }
    if (j == k && !ret) {
      results[j] = nsp_job_add_path(job, paths[j]);
      if (results[j] == NSP_AN_ENOMEM) ret = NSP_AN_ENOMEM;
      if (errors && *job->err && !(errors[j] = strdup(job->err))) ret = NSP_AN_ENOMEM;
      j++;
    }
    k = j;
  }
  free(batch);
  free(where);
  free(got);
  free(errs);
  return ret;
}

int nsp_job_add_mem(struct nsp_job *job, const char *name, const void *data, size_t len) {
  if (!job || !name || !data || !len) return NSP_AN_EINVAL;
  if (job->analyzed) return NSP_AN_ESTATE;
  uint8_t *copy = malloc(len);
  if (!copy) return NSP_AN_ENOMEM;
  memcpy(copy, data, len);
  nsp_an_progress_more(job, 1, len);
  nsp_an_load_begin(job);
  return nsp_an_load_trace(job, name, copy, len); /* takes copy */
}

int nsp_job_select_run(struct nsp_job *job, const char *run) {
  if (!job) return NSP_AN_EINVAL;
  if (job->analyzed) return NSP_AN_ESTATE;
  char *sel = run && *run && strcmp(run, "all") ? strdup(run) : NULL;
  if (run && *run && strcmp(run, "all") && !sel) return NSP_AN_ENOMEM;
  free(job->run_sel);
  job->run_sel = sel;
  job->run_all = run && !strcmp(run, "all");
  return 0;
}

int nsp_job_analyze(struct nsp_job *job) {
  if (!job) return NSP_AN_EINVAL;
  if (job->analyzed) return NSP_AN_ESTATE;
  job->analyzed = 1;
  job->err[0] = 0;
  NSP_TRY(nsp_an_select_run(job));
  return nsp_an_run_rules(job);
}

const char *nsp_job_error(const struct nsp_job *job) { return job ? job->err : ""; }
size_t nsp_job_ntraces(const struct nsp_job *job) { return job->ntraces; }
const struct nsp_trace_info *nsp_job_trace(const struct nsp_job *job, size_t i) {
  return i < job->ntraces ? &job->traces[i]->info : NULL;
}

/* Communicators nobody is a member of (an id later replaced) are not
 * shown; nsp_an_prepare packs them away, so indices are direct. */
size_t nsp_job_ncomms(const struct nsp_job *job) { return job->analyzed ? job->ncomms : 0; }
const struct nsp_comm_info *nsp_job_comm(const struct nsp_job *job, size_t i) {
  return job->analyzed && i < job->ncomms ? &job->comms[i]->info : NULL;
}
const struct nsp_comm_info *nsp_job_comm_by_id(const struct nsp_job *job, uint64_t id) {
  size_t *slot = nsp_u64map_get(&job->comm_by_id, id);
  return job->analyzed && slot ? &job->comms[*slot]->info : NULL;
}
size_t nsp_job_nruns(const struct nsp_job *job) { return job->nruns; }
const struct nsp_run_info *nsp_job_run(const struct nsp_job *job, size_t i) {
  return i < job->nruns ? &job->runs[i].info : NULL;
}
uint64_t nsp_job_comm_min_seq(const struct nsp_job *job, size_t i) {
  if (!job->analyzed || i >= job->ncomms) return 0;
  const struct nsp_an_comm *c = job->comms[i];
  uint64_t min = 0;
  for (size_t k = 0; k < c->nmembers; k++) {
    uint64_t s = job->members[c->members[k]].last_seq;
    if (!k || s < min) min = s;
  }
  return min;
}
int64_t nsp_job_trace_last_call_ns(const struct nsp_job *job, size_t i) {
  return i < job->ntraces && job->traces[i]->last_call.valid ? job->traces[i]->last_call.call.time_ns : 0;
}
size_t nsp_job_nfindings(const struct nsp_job *job) { return job->nfindings; }
const struct nsp_finding *nsp_job_finding(const struct nsp_job *job, size_t i) {
  return i < job->nfindings ? &job->findings[i].pub : NULL;
}
size_t nsp_job_nnotes(const struct nsp_job *job) { return job->nnotes; }
const char *nsp_job_note(const struct nsp_job *job, size_t i) { return i < job->nnotes ? job->notes[i] : NULL; }
const char *nsp_job_summary(const struct nsp_job *job) { return job->summary ? job->summary : ""; }
const char *nsp_job_headline(const struct nsp_job *job) { return job->headline ? job->headline : ""; }
const struct nsp_job_caveats *nsp_job_caveats(const struct nsp_job *job) { return &job->caveats; }
int64_t nsp_job_start_ns(const struct nsp_job *job) { return job->start_ns; }

size_t nsp_analyze_nrules(void) { return nsp_nrules; }

const char *nsp_analyze_rule(size_t i, const char **checks) {
  if (i >= nsp_nrules) return NULL;
  if (checks) *checks = nsp_rules[i]->checks;
  return nsp_rules[i]->name;
}
