/* test_an_cli.c - the `ncclspy` command as users and scripts run it: exit
 * codes, where messages go, the JSON report parsed with json-c, the dump,
 * and golden text reports (zstd cli-tests style).
 *
 * Environment (set by meson): NCCLSPY = the binary, NSP_GOLDEN_DIR = the
 * golden files' folder.  NSP_UPDATE_GOLDEN=1 rewrites the golden files
 * from the current output instead of comparing (review the diff!). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_an_cases.h"
#include "nsp_config.h"

#include <json-c/json.h>

extern char **environ;

static const char *ncclspy;
static char tmpdir[256];

struct result {
  int status; /* exit code; -1 when killed */
  char *out, *err;
};

/* dir/zz-junk.ncclspy, a file named like a trace that is none; its path
 * into path. */
static void write_junk(const char *dir, char *path, size_t len) {
  snprintf(path, len, "%s/zz-junk.ncclspy", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("not a trace", f);
  fclose(f);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Runs ncclspy with args (NULL-terminated, without argv[0]). */
static struct result run(const char *const *args) {
  const char *argv[32];
  int n = 0;
  argv[n++] = ncclspy;
  for (int i = 0; args[i]; i++) argv[n++] = args[i];
  argv[n] = NULL;
  char outp[300], errp[300];
  snprintf(outp, sizeof outp, "%s/stdout", tmpdir);
  snprintf(errp, sizeof errp, "%s/stderr", tmpdir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, ncclspy, &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  struct result r = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(outp), slurp(errp)};
  unlink(outp);
  unlink(errp);
  return r;
}

static void result_free(struct result *r) {
  free(r->out);
  free(r->err);
}

static void assert_contains(const char *hay, const char *needle) {
  if (!strstr(hay, needle)) fail_msg("output does not contain \"%s\":\n%s", needle, hay);
}

/* A case's traces in a fresh directory. */
static void case_dir(const char *name, char *dir, size_t len) {
  snprintf(dir, len, "%s/%s", tmpdir, name);
  struct stat st;
  if (stat(dir, &st) == 0) return; /* made by an earlier test */
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_true(nsp_case_write(name, dir) > 0);
}

static int teardown_dirs(void **state) {
  (void)state;
  static const char *const names[] = {"c01", "c05", "c07", "c08", "c09", "c10", "c11", "c01-gpu", "c12", "c13",
                                      "cut", "empty"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char d[300];
    snprintf(d, sizeof d, "%s/%s", tmpdir, names[i]);
    nsp_case_rmdir(d);
  }
  return 0;
}

/* ---- usage and exit codes ----------------------------------------------- */

static void test_help_version_usage(void **state) {
  (void)state;
  struct result r = run((const char *[]){"--help", NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "usage: ncclspy COMMAND");
  result_free(&r);
  r = run((const char *[]){"--version", NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "ncclspy " NSP_VERSION);
  result_free(&r);
  r = run((const char *[]){"help", "analyze", NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "exit status: 0 no findings (processes still running included), 1 findings,\n"
                         "2 usage error");
  assert_contains(r.out, "3 no findings, but a process ended without a clean exit");
  result_free(&r);
  r = run((const char *[]){"analyze", "--help", NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "usage: ncclspy analyze");
  result_free(&r);
  /* Usage errors: exit 2, message on stderr, nothing on stdout. */
  const char *const *bad[] = {
      (const char *[]){NULL},
      (const char *[]){"frobnicate", NULL},
      (const char *[]){"help", "frobnicate", NULL},
      (const char *[]){"--bogus", NULL},
      (const char *[]){"analyze", NULL},
      (const char *[]){"analyze", "--bogus", "x", NULL},
      (const char *[]){"dump", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    r = run(bad[i]);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_true(strlen(r.err) > 0);
    result_free(&r);
  }
}

static void test_exit_codes(void **state) {
  (void)state;
  char c01[300], c10[300], empty[300];
  case_dir("c01", c01, sizeof c01);
  case_dir("c10", c10, sizeof c10);
  snprintf(empty, sizeof empty, "%s/empty", tmpdir);
  assert_int_equal(mkdir(empty, 0755), 0);

  struct result r = run((const char *[]){"analyze", c10, NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "No problems found in 4 traces");
  result_free(&r);
  r = run((const char *[]){"analyze", c01, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "[1] dtype-mismatch on communicator 57a1d0c0ffee0001");
  result_free(&r);
  /* No readable trace at all: 2. */
  r = run((const char *[]){"analyze", empty, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "no readable trace");
  result_free(&r);
  r = run((const char *[]){"analyze", "/nonexistent/traces", NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "/nonexistent/traces");
  result_free(&r);
  /* One missing path among good ones is a warning, not a failure. */
  r = run((const char *[]){"analyze", c01, "/nonexistent/traces", NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "warning: /nonexistent/traces");
  assert_contains(r.out, "Notes (1)");
  result_free(&r);
  /* Single files work too. */
  char f0[400], f1[400];
  snprintf(f0, sizeof f0, "%s/node-a.1000.rank0.ncclspy", c01);
  snprintf(f1, sizeof f1, "%s/node-a.1001.rank1.ncclspy", c01);
  r = run((const char *[]){"analyze", f0, f1, NULL});
  assert_int_equal(r.status, 1);
  result_free(&r);
  /* One rank alone has nothing to disagree with, but the other rank's
   * trace is missing, and the report says so. */
  r = run((const char *[]){"analyze", f0, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "Environment (differences between the ranks)\n[1] env-missing-ranks on communicator "
                         "57a1d0c0ffee0001");
  assert_contains(r.out, "no trace for rank 1");
  result_free(&r);
  /* -o writes the report there and nothing to stdout. */
  char outf[400];
  snprintf(outf, sizeof outf, "%s/report.txt", tmpdir);
  r = run((const char *[]){"analyze", "-o", outf, c01, NULL});
  assert_int_equal(r.status, 1);
  assert_string_equal(r.out, "");
  char *rep = slurp(outf);
  assert_contains(rep, "ncclspy report: 2 traces, 1 communicator, 1 finding");
  free(rep);
  unlink(outf);
  result_free(&r);
  r = run((const char *[]){"analyze", "-o", "/nonexistent/dir/report.txt", c01, NULL});
  assert_int_equal(r.status, 2);
  result_free(&r);
}

/* A damaged file alone does not make exit 2: it is analysed up to the
 * damage and named, with the byte offset, under Notes. */
static void test_damaged_inputs(void **state) {
  (void)state;
  char dir[300];
  snprintf(dir, sizeof dir, "%s/cut", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
  int n = nsp_case_build("c05", g);
  assert_int_equal(n, 2);
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g[1], &data, &len), 0);
  char whole[400], fifo[500], fifo_trace[400];
  assert_int_equal(nsp_tracegen_write(g[0], dir, SIZE_MAX, whole, sizeof whole), 0);
  /* FIFOs named like a crash ring and like a trace: refused at once, not
   * waited on (opening a FIFO for reading blocks until a writer comes). */
  snprintf(fifo, sizeof fifo, "%s.ring", whole);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  snprintf(fifo_trace, sizeof fifo_trace, "%s/zz-fifo.ncclspy", dir);
  assert_int_equal(mkfifo(fifo_trace, 0600), 0);
  char cut[400];
  assert_int_equal(nsp_tracegen_write(g[1], dir, len - 3, cut, sizeof cut), 0); /* its only frame, cut */
  size_t nf;
  size_t at = nsp_tracegen_frame_offsets(g[1], &nf)[0]; /* where that frame starts (its index whole before it) */
  nsp_tracegen_destroy(g[0]);
  nsp_tracegen_destroy(g[1]);
  char junk[400];
  write_junk(dir, junk, sizeof junk);

  struct result r = run((const char *[]){"analyze", dir, NULL});
  /* rank 1's COMM and call were lost with its frame: its cut trace (and
   * the files that could not be read) may hold the communicator's rank 1,
   * so no env-missing-ranks but incomplete coverage (exit 3); the cut
   * trace and the junk file are notes */
  assert_int_equal(r.status, 3);
  assert_null(strstr(r.out, "env-missing-ranks"));
  assert_contains(r.out, "so it is not reported as missing");
  assert_contains(r.out, "coverage is incomplete: ");
  char want[600];
  snprintf(want, sizeof want, "rank 1's trace is cut at byte %zu, 2 trace files could not be read", at);
  assert_contains(r.out, want);
  assert_contains(r.out, "Notes (5)");
  snprintf(want, sizeof want, "%s: incomplete frame at byte %zu", cut, at);
  assert_contains(r.out, want);
  snprintf(want, sizeof want, "%s ignored: not a regular file", fifo);
  assert_contains(r.out, want);
  assert_contains(r.out, "zz-fifo.ncclspy: not read: not a regular file");
  snprintf(want, sizeof want, "damaged: incomplete frame at byte %zu", at);
  assert_contains(r.out, want);
  assert_contains(r.out, "zz-junk.ncclspy: not read: not an ncclspy trace (shorter than its header)");
  result_free(&r);

  /* dump: what was read, then the problem; exit 1. */
  r = run((const char *[]){"dump", cut, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "HEADER file=");
  snprintf(want, sizeof want, "PROBLEM \"incomplete frame at byte %zu", at);
  assert_contains(r.out, want);
  snprintf(want, sizeof want, "incomplete frame at byte %zu", at);
  assert_contains(r.err, want);
  result_free(&r);
  r = run((const char *[]){"dump", junk, NULL});
  assert_int_equal(r.status, 2);
  result_free(&r);
  /* Its crash ring is a FIFO, ignored: what the ring held is not shown,
   * so exit 1 as for a damaged file. */
  r = run((const char *[]){"dump", whole, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "HEADER file=");
  assert_contains(r.err, "crash ring: ");
  result_free(&r);
  r = run((const char *[]){"dump", fifo_trace, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "not a regular file");
  result_free(&r);
}

/* ---- gathering the traces ----------------------------------------------- */

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  assert_int_equal(fclose(out), 0);
}

/* The same trace named twice (a directory twice, spelled two ways, a file
 * twice, a copy of a file) is one process, not a duplicate rank. */
static void test_same_trace_twice(void **state) {
  (void)state;
  char c01[300], slash[310], f0[400];
  case_dir("c01", c01, sizeof c01);
  snprintf(slash, sizeof slash, "%s/./", c01);
  snprintf(f0, sizeof f0, "%s/node-a.1000.rank0.ncclspy", c01);
  const char *const *argvs[] = {
      (const char *[]){"analyze", c01, c01, NULL},
      (const char *[]){"analyze", c01, slash, NULL},
      (const char *[]){"analyze", c01, f0, f0, NULL},
  };
  for (size_t i = 0; i < sizeof argvs / sizeof *argvs; i++) {
    struct result r = run(argvs[i]);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "ncclspy report: 2 traces, 1 communicator, 1 finding");
    if (strstr(r.out, "env-duplicate-rank") || strstr(r.out, "env-world-size")) fail_msg("%s", r.out);
    assert_string_equal(r.err, "");
    result_free(&r);
  }
  /* A copy (another inode): read once, with a note. */
  char copies[300], copy[400];
  snprintf(copies, sizeof copies, "%s/copies", tmpdir);
  assert_int_equal(mkdir(copies, 0755), 0);
  snprintf(copy, sizeof copy, "%s/node-a.1000.rank0.ncclspy", copies);
  copy_file(f0, copy);
  struct result r = run((const char *[]){"analyze", c01, copies, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "ncclspy report: 2 traces, 1 communicator, 1 finding");
  char want[2000];
  snprintf(want, sizeof want, "%s: a copy of %s (the same host, pid and start time: one process); read once", copy,
           f0);
  assert_contains(r.out, want);
  if (strstr(r.out, "env-duplicate-rank")) fail_msg("%s", r.out);
  result_free(&r);
  nsp_case_rmdir(copies);
}

/* Copies of one trace that differ in length (a snapshot taken mid-run
 * under the name before the .rank<R> rename, beside the final file): the
 * longest is read, whichever name sorts first, and a shorter copy read
 * first (another argument) is said to miss records. */
static void test_shorter_copy(void **state) {
  (void)state;
  char dir[300], snap[300];
  snprintf(dir, sizeof dir, "%s/copies-cut", tmpdir);
  snprintf(snap, sizeof snap, "%s/snapshot", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(mkdir(snap, 0755), 0);
  struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
  int n = nsp_case_build("c10", g); /* a healthy job: no finding */
  assert_int_equal(n, 4);
  char full[400], cut[400], cut2[400];
  for (int i = 0; i < n; i++) assert_int_equal(nsp_tracegen_write(g[i], dir, SIZE_MAX, i ? NULL : full, i ? 0 : sizeof full), 0);
  size_t nframes;
  const size_t *frames = nsp_tracegen_frame_offsets(g[0], &nframes);
  assert_true(nframes > 4);
  size_t keep = frames[nframes / 2]; /* a whole number of frames: no cut to note */
  const uint8_t *data;
  size_t len;
  assert_int_equal(nsp_tracegen_bytes(g[0], &data, &len), 0);
  /* <host>.<pid>.ncclspy: the name before the rename, sorting first */
  const char *dot = strstr(full, ".rank0.ncclspy");
  assert_non_null(dot);
  snprintf(cut, sizeof cut, "%.*s.ncclspy", (int)(dot - full), full);
  snprintf(cut2, sizeof cut2, "%s/%s", snap, strrchr(cut, '/') + 1);
  for (int k = 0; k < 2; k++) {
    FILE *f = fopen(k ? cut2 : cut, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, keep, f), keep);
    assert_int_equal(fclose(f), 0);
  }
  for (int i = 0; i < n; i++) nsp_tracegen_destroy(g[i]);

  struct result r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "ncclspy report: 4 traces, 3 communicators, 0 findings");
  char want[2000];
  snprintf(want, sizeof want, "%s: a copy of %s (the same host, pid and start time: one process); read once", cut,
           full);
  assert_contains(r.out, want);
  result_free(&r);

  r = run((const char *[]){"analyze", snap, dir, NULL});
  snprintf(want, sizeof want, "%s: a copy of %s (the same host, pid and start time: one process), %zu bytes longer; "
           "the shorter was read, so this process's last records may be missing: name only the longer copy",
           full, cut2, len - keep);
  assert_contains(r.out, want);
  result_free(&r);
  nsp_case_rmdir(dir);
  nsp_case_rmdir(snap);
}

/* -o must not overwrite a trace; its errors say "ncclspy:". */
static void test_output_guard(void **state) {
  (void)state;
  char c01[300], f0[400], in_dir[400], ring[400];
  case_dir("c01", c01, sizeof c01);
  snprintf(f0, sizeof f0, "%s/node-a.1000.rank0.ncclspy", c01);
  snprintf(in_dir, sizeof in_dir, "%s/report.ncclspy", c01);
  snprintf(ring, sizeof ring, "%s/node-a.1000.rank0.ncclspy.ring", c01);
  struct stat before;
  assert_int_equal(stat(f0, &before), 0);
  const char *const *argvs[] = {
      (const char *[]){"analyze", "-o", f0, c01, NULL},
      (const char *[]){"analyze", "-o", f0, f0, NULL},
      (const char *[]){"analyze", "-o", in_dir, c01, NULL},
      (const char *[]){"analyze", "-o", ring, c01, NULL},
      (const char *[]){"analyze", "-o", ring, f0, NULL}, /* its .ring, not there yet */
      (const char *[]){"perf", "-o", f0, c01, NULL},
  };
  for (size_t i = 0; i < sizeof argvs / sizeof *argvs; i++) {
    struct result r = run(argvs[i]);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_true(!strncmp(r.err, "ncclspy: -o ", 12));
    assert_contains(r.err, "would overwrite the input trace");
    result_free(&r);
  }
  struct stat after, none;
  assert_int_equal(stat(f0, &after), 0);
  assert_int_equal(after.st_size, before.st_size);
  assert_int_equal(stat(in_dir, &none), -1);
  assert_int_equal(stat(ring, &none), -1);
  struct result r = run((const char *[]){"analyze", "-o", "/nonexistent/dir/report.txt", c01, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "ncclspy: cannot write /nonexistent/dir/report.txt: No such file or directory");
  result_free(&r);
}

/* Traces without records: exit 2 when none has one; a note on the
 * missing .ring otherwise. */
static void test_no_records(void **state) {
  (void)state;
  char dir[300];
  snprintf(dir, sizeof dir, "%s/norec", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
  assert_int_equal(nsp_case_build("c05", g), 2);
  char p0[400], p1[400];
  assert_int_equal(nsp_tracegen_write(g[0], dir, 128, p0, sizeof p0), 0); /* the header only */
  assert_int_equal(nsp_tracegen_write(g[1], dir, 128, p1, sizeof p1), 0);
  struct result r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 2);
  assert_string_equal(r.out, "");
  assert_contains(r.err, "ncclspy: none of the 2 traces has a readable record, so there is nothing to analyse");
  char want[2000];
  snprintf(want, sizeof want, "%s: no records in it (only the header); there is no %s.ring next to it: a process "
           "that crashed keeps its last records in <trace>.ring, which must be copied along with the traces", p0, p0);
  assert_contains(r.err, want);
  result_free(&r);
  /* One trace with records: analysed; the empty one has its note. */
  assert_int_equal(nsp_tracegen_write(g[0], dir, SIZE_MAX, p0, sizeof p0), 0);
  r = run((const char *[]){"analyze", dir, NULL});
  /* Rank 1's process left a trace, with nothing in it: not a rank without
   * a trace (env-missing-ranks), but incomplete coverage (exit 3). */
  assert_int_equal(r.status, 3);
  assert_contains(r.out, "coverage is incomplete: rank 1's trace has no records");
  snprintf(want, sizeof want, "%s: no records in it (only the header); there is no %s.ring next to it", p1, p1);
  assert_contains(r.out, want);
  result_free(&r);
  nsp_tracegen_destroy(g[0]);
  nsp_tracegen_destroy(g[1]);
  nsp_case_rmdir(dir);
}

/* A directory of run directories: says subdirectories are not searched.
 * A glob that names .ring files along with their traces: no warning. */
static void test_subdirs_and_rings(void **state) {
  (void)state;
  char top[300], sub[400];
  snprintf(top, sizeof top, "%s/top", tmpdir);
  assert_int_equal(mkdir(top, 0755), 0);
  snprintf(sub, sizeof sub, "%s/run1", top);
  assert_int_equal(mkdir(sub, 0755), 0);
  assert_true(nsp_case_write("c01", sub) > 0);
  struct result r = run((const char *[]){"analyze", top, NULL});
  assert_int_equal(r.status, 2);
  char want[2000];
  snprintf(want, sizeof want, "ncclspy: warning: %s: no *.ncclspy trace in it; subdirectories are not searched, "
           "and 1 of them hold traces (%s): name them instead", top, sub);
  assert_contains(r.err, want);
  result_free(&r);
  char f0[500], f1[500], ring[500];
  snprintf(f0, sizeof f0, "%s/node-a.1000.rank0.ncclspy", sub);
  snprintf(f1, sizeof f1, "%s/node-a.1001.rank1.ncclspy", sub);
  snprintf(ring, sizeof ring, "%s/node-a.1002.rank2.ncclspy.ring", sub); /* its trace is elsewhere */
  FILE *f = fopen(ring, "w");
  assert_non_null(f);
  fputs("a ring", f);
  fclose(f);
  /* A ring named beside other traces, without its own trace: said, not
   * silently dropped; with its trace named too, read with it, unsaid. */
  r = run((const char *[]){"analyze", f0, f1, ring, NULL});
  assert_int_equal(r.status, 1);
  snprintf(want, sizeof want, "ncclspy: warning: %s is a crash ring, read along with its trace: name the trace "
           "(%.*s) or its directory; not read\n", ring, (int)(strlen(ring) - 5), ring);
  assert_string_equal(r.err, want);
  assert_contains(r.out, "ncclspy report: 2 traces");
  result_free(&r);
  char f0ring[520];
  snprintf(f0ring, sizeof f0ring, "%s.ring", f0);
  f = fopen(f0ring, "w");
  assert_non_null(f);
  fputs("a ring", f);
  fclose(f);
  r = run((const char *[]){"analyze", f0, f0ring, f1, NULL});
  assert_string_equal(r.err, "");
  result_free(&r);
  /* Only rings named: what to name instead. */
  r = run((const char *[]){"analyze", ring, NULL});
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof want, "ncclspy: %s is a crash ring, read along with its trace: name the trace (%.*s) or its "
           "directory\n", ring, (int)(strlen(ring) - 5), ring);
  assert_string_equal(r.err, want);
  result_free(&r);
  char gone[600];
  snprintf(gone, sizeof gone, "%s/gone.ncclspy.ring", sub); /* no such file: said as such */
  r = run((const char *[]){"analyze", gone, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "gone.ncclspy.ring: No such file or directory");
  if (strstr(r.err, "crash ring")) fail_msg("%s", r.err);
  result_free(&r);
  r = run((const char *[]){"dump", gone, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "cannot open: No such file or directory");
  result_free(&r);
  r = run((const char *[]){"dump", ring, NULL});
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof want, "ncclspy: %s: a crash ring, read along with its trace: dump %.*s\n", ring,
           (int)(strlen(ring) - 5), ring);
  assert_string_equal(r.err, want);
  result_free(&r);
  nsp_case_rmdir(sub);
  assert_int_equal(rmdir(top), 0);
}

/* ---- dump --------------------------------------------------------------- */

static void test_dump_text(void **state) {
  (void)state;
  char dir[300];
  case_dir("c07", dir, sizeof dir);
  char f3[400];
  snprintf(f3, sizeof f3, "%s/node-b.1003.rank3.ncclspy", dir);
  struct result r = run((const char *[]){"dump", f3, NULL});
  assert_int_equal(r.status, 0);
  /* Header first, then one line per record, times relative to it. */
  assert_true(!strncmp(r.out, "HEADER file=\"", 13));
  assert_contains(r.out, "host=\"node-b\" pid=1003 nccl_version=2.28.9");
  assert_contains(r.out, "\nPROCESS pid=1003 ppid=1 nccl_version=2.28.9 realtime_ns=1700000000000000000 "
                         "monotonic_ns=+0.000000ms host=\"node-b\" shim_version=");
  assert_contains(r.out, "env={RANK=\"3\"}");
  assert_contains(r.out, "\nt=+0.001000ms COMM comm=1 comm_id=57a1d0c0ffee0001 api=CommInitRank rank=3 nranks=4 device=3");
  assert_contains(r.out, "\nt=+0.002000ms CALL api=all-reduce comm=1 t_exit=+0.100us seq=1 count=1024 dtype=float32 "
                         "redop=sum peer=-1 stream=0x7f0000001000 sendbuff=0x7f1000000000 recvbuff=0x7f2000000000 "
                         "group_id=0 group_depth=0 result=ncclSuccess flags=0x0 site=0");
  assert_contains(r.out, "seq=50 count=1024 dtype=float32 redop=sum");
  /* (fields a later format appends follow site) */
  assert_contains(r.out, "result=ncclSystemError last_error=\"connection reset by peer\" flags=0x0 site=0");
  /* 1 header + PROCESS + COMM + 50 calls + EXIT */
  size_t lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 54);
  assert_contains(r.out, "\nt=+0.051100ms EXIT inflight=0 status=0\n"); /* at its last call's return, a clean exit */
  result_free(&r);
}

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, key, &v)) fail_msg("no member \"%s\" in %s", key, json_object_to_json_string(o));
  return v;
}
static int64_t get_int(json_object *o, const char *key) { return json_object_get_int64(get(o, key)); }
static const char *get_str(json_object *o, const char *key) { return json_object_get_string(get(o, key)); }
static void assert_int_array(json_object *a, const int64_t *want, size_t n) {
  assert_true(json_object_is_type(a, json_type_array));
  assert_int_equal(json_object_array_length(a), n);
  for (size_t i = 0; i < n; i++) assert_int_equal(json_object_get_int64(json_object_array_get_idx(a, i)), want[i]);
}

static void test_dump_json(void **state) {
  (void)state;
  char dir[300];
  case_dir("c08", dir, sizeof dir);
  char f0[400];
  snprintf(f0, sizeof f0, "%s/node-a.1000.rank0.ncclspy", dir);
  struct result r = run((const char *[]){"dump", "--json", f0, NULL});
  assert_int_equal(r.status, 0);
  /* Every line one JSON object: header, process, comm, 3 sends, exit. */
  char *save = NULL;
  int n = 0;
  for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
    json_object *o = json_tokener_parse(line);
    assert_non_null(o);
    const char *rec = get_str(o, "record");
    if (n == 0) {
      assert_string_equal(rec, "header");
      assert_int_equal(get_int(o, "pid"), 1000);
      assert_int_equal(get_int(o, "major"), 1);
    }
    if (n == 2) {
      assert_string_equal(rec, "comm");
      assert_string_equal(get_str(o, "comm_id"), "57a1d0c0ffee0001");
      assert_int_equal(get_int(o, "nranks"), 2);
      assert_string_equal(get_str(o, "comm_name"), "default_pg:0");
    }
    if (n == 5) {
      assert_string_equal(rec, "call");
      assert_string_equal(get_str(o, "op"), "send");
      assert_int_equal(get_int(o, "seq"), 3);
      assert_int_equal(get_int(o, "count"), 1024);
      assert_string_equal(get_str(o, "dtype"), "float32");
      assert_int_equal(get_int(o, "peer"), 1);
      assert_int_equal(get_int(o, "t_rel_ns"), 4000);
      assert_string_equal(get_str(o, "result"), "ncclSuccess");
    }
    if (n == 6) {
      assert_string_equal(rec, "exit");
      assert_int_equal(get_int(o, "inflight"), 0);
    }
    json_object_put(o);
  }
  assert_int_equal(n, 7);
  result_free(&r);
}

/* The JSON report as an integration script reads it. */
static void test_json_report(void **state) {
  (void)state;
  char dir[300];
  case_dir("c09", dir, sizeof dir);
  struct result r = run((const char *[]){"analyze", "--json", dir, NULL});
  assert_int_equal(r.status, 1);
  json_object *root = json_tokener_parse(r.out);
  assert_non_null(root);
  assert_int_equal(get_int(root, "schema"), 1);
  assert_string_equal(get_str(root, "version"), NSP_VERSION);
  assert_contains(get_str(root, "summary"), "The first problem (dtype-mismatch) is on communicator 57a1d0c0ffee0a01");
  json_object *traces = get(root, "traces");
  assert_int_equal(json_object_array_length(traces), 4);
  json_object *t2 = json_object_array_get_idx(traces, 2);
  assert_string_equal(get_str(t2, "host"), "node-b");
  assert_int_equal(get_int(t2, "pid"), 1002);
  assert_int_equal(get_int(t2, "rank"), 2);
  assert_int_equal(json_object_array_length(get(t2, "problems")), 0);

  json_object *comms = get(root, "communicators");
  assert_int_equal(json_object_array_length(comms), 3);
  json_object *child = NULL;
  for (size_t i = 0; i < 3; i++) {
    json_object *c = json_object_array_get_idx(comms, i);
    if (!strcmp(get_str(c, "id"), "57a1d0c0ffee0a01")) child = c;
  }
  assert_non_null(child);
  assert_string_equal(get_str(child, "parent"), "57a1d0c0ffee0001");
  assert_int_equal(get_int(child, "color"), 1);
  assert_int_equal(get_int(child, "nranks"), 2);
  assert_string_equal(get_str(child, "comm_name"), "tp:2");
  static const int64_t r01[] = {0, 1};
  assert_int_array(get(child, "ranks_traced"), r01, 2);
  /* Its ranks 0-1 are job ranks 2-3, each with its own key. */
  static const int64_t r23[] = {2, 3};
  assert_int_array(get(child, "job_ranks_traced"), r23, 2);
  assert_true(json_object_get_boolean(get(child, "keys_differ")));

  json_object *finds = get(root, "findings");
  assert_int_equal(json_object_array_length(finds), 1);
  json_object *f = json_object_array_get_idx(finds, 0);
  assert_string_equal(get_str(f, "kind"), "dtype-mismatch");
  assert_string_equal(get_str(f, "comm"), "57a1d0c0ffee0a01");
  assert_int_equal(get_int(f, "seq"), 4);
  assert_string_equal(get_str(f, "op"), "all-reduce");
  json_object *sides = get(f, "sides");
  assert_int_equal(json_object_array_length(sides), 2);
  json_object *s0 = json_object_array_get_idx(sides, 0), *s1 = json_object_array_get_idx(sides, 1);
  static const int64_t r0[] = {0}, r1[] = {1};
  assert_int_array(get(s0, "ranks"), r0, 1);
  assert_int_array(get(s1, "ranks"), r1, 1);
  assert_string_equal(get_str(get(s0, "values"), "dtype"), "float32");
  assert_int_equal(get_int(get(s0, "values"), "bytes"), 8192);
  assert_string_equal(get_str(get(s1, "values"), "dtype"), "float16");
  assert_int_equal(get_int(get(s1, "values"), "count"), 2048);
  json_object *p = json_object_array_get_idx(get(s1, "procs"), 0);
  assert_int_equal(get_int(p, "rank"), 1);
  assert_string_equal(get_str(p, "host"), "node-b");
  assert_int_equal(get_int(p, "pid"), 1003);
  assert_int_equal(json_object_array_length(get(f, "odd_ranks")), 0);
  assert_contains(get_str(f, "hint"), "autocast");
  assert_contains(get_str(f, "message"), "ranks disagree on dtype at seq 4");
  assert_int_equal(json_object_array_length(get(root, "notes")), 0);
  json_object_put(root);
  result_free(&r);

  /* Errors: per-process error objects with NCCL's text. */
  char d7[300];
  snprintf(d7, sizeof d7, "%s/c07", tmpdir);
  r = run((const char *[]){"analyze", "--json", d7, NULL});
  assert_int_equal(r.status, 1);
  root = json_tokener_parse(r.out);
  assert_non_null(root);
  f = json_object_array_get_idx(get(root, "findings"), 0);
  assert_string_equal(get_str(f, "kind"), "error");
  static const int64_t r3[] = {3}, r02[] = {0, 1, 2};
  assert_int_array(get(f, "odd_ranks"), r3, 1);
  s0 = json_object_array_get_idx(get(f, "sides"), 0);
  assert_int_array(get(s0, "ranks"), r3, 1);
  assert_string_equal(get_str(get(s0, "values"), "result"), "ncclSystemError");
  json_object *e = get(json_object_array_get_idx(get(s0, "procs"), 0), "error");
  assert_string_equal(get_str(e, "last_error"), "connection reset by peer");
  assert_int_equal(get_int(e, "seq"), 50);
  assert_string_equal(get_str(e, "source"), "call");
  s1 = json_object_array_get_idx(get(f, "sides"), 1);
  assert_int_array(get(s1, "ranks"), r02, 3);
  assert_int_equal(get_int(get(s1, "values"), "result_code"), 6);
  json_object_put(root);
  result_free(&r);
}

/* Hangs in JSON: roles, waits, what the absent ranks are stuck in, the
 * "caused by" link, call sites. */
static void test_json_hangs(void **state) {
  (void)state;
  char dir[300];
  case_dir("c13", dir, sizeof dir);
  struct result r = run((const char *[]){"analyze", "--json", dir, NULL});
  assert_int_equal(r.status, 1);
  json_object *root = json_tokener_parse(r.out);
  assert_non_null(root);
  json_object *finds = get(root, "findings");
  assert_int_equal(json_object_array_length(finds), 3);
  json_object *f0 = json_object_array_get_idx(finds, 0), *f1 = json_object_array_get_idx(finds, 1);
  assert_string_equal(get_str(f0, "kind"), "hang");
  assert_string_equal(get_str(f0, "comm"), "57a1d0c0ffee0a00");
  assert_true(json_object_is_type(get(f0, "caused_by"), json_type_null));
  assert_string_equal(get_str(f1, "comm"), "57a1d0c0ffee0b01");
  assert_int_equal(get_int(f1, "caused_by"), 0);
  json_object *s0 = json_object_array_get_idx(get(f1, "sides"), 0), *s1 = json_object_array_get_idx(get(f1, "sides"), 1);
  assert_string_equal(get_str(s0, "role"), "not-arrived");
  assert_string_equal(get_str(s1, "role"), "waiting");
  json_object *p0 = json_object_array_get_idx(get(s0, "procs"), 0);
  json_object *stuck = get(p0, "stuck_in");
  assert_string_equal(get_str(stuck, "comm"), "57a1d0c0ffee0a00");
  assert_int_equal(get_int(stuck, "seq"), 3);
  assert_false(json_object_get_boolean(get(stuck, "completed")));
  json_object *p1 = json_object_array_get_idx(get(s1, "procs"), 0);
  assert_int_equal(get_int(get(p1, "call"), "seq"), 3);
  assert_true(get_int(p1, "wait_ns") >= 0);
  json_object *t0 = json_object_array_get_idx(get(root, "traces"), 0);
  assert_int_equal(get_int(t0, "driver_version"), 12040);
  assert_int_equal(json_object_array_length(get(t0, "tracking")), 2);
  json_object_put(root);
  result_free(&r);

  /* c14 (TP x DP): communicator ranks with their job ranks beside them;
   * the error finding's ranks are job ranks, each with its comm_rank */
  case_dir("c14", dir, sizeof dir);
  r = run((const char *[]){"analyze", "--json", dir, NULL});
  root = json_tokener_parse(r.out);
  assert_non_null(root);
  finds = get(root, "findings");
  assert_int_equal(json_object_array_length(finds), 4);
  json_object *mm = json_object_array_get_idx(finds, 0), *se = json_object_array_get_idx(finds, 2),
              *er = json_object_array_get_idx(finds, 3);
  assert_string_equal(get_str(mm, "kind"), "dtype-mismatch");
  json_object *odd = json_object_array_get_idx(get(json_object_array_get_idx(get(mm, "sides"), 1), "procs"), 0);
  assert_int_equal(get_int(odd, "rank"), 1);
  assert_int_equal(get_int(odd, "job_rank"), 3);
  assert_string_equal(get_str(se, "kind"), "stopped-early");
  assert_int_equal(get_int(se, "caused_by"), 0);
  assert_int_equal(json_object_get_int(json_object_array_get_idx(get(se, "odd_ranks"), 0)), 1);
  assert_int_equal(json_object_get_int(json_object_array_get_idx(get(se, "odd_job_ranks"), 0)), 3);
  assert_string_equal(get_str(er, "kind"), "error");
  assert_int_equal(get_int(er, "caused_by"), 0);
  json_object *origin = json_object_array_get_idx(get(json_object_array_get_idx(get(er, "sides"), 0), "procs"), 0);
  assert_int_equal(get_int(origin, "rank"), 3);
  assert_int_equal(get_int(origin, "job_rank"), 3);
  assert_int_equal(get_int(origin, "comm_rank"), 1);
  json_object_put(root);
  result_free(&r);

  /* c11: the sites of the waiting rank, NCCL/c10d frames left out */
  case_dir("c11", dir, sizeof dir);
  r = run((const char *[]){"analyze", "--json", dir, NULL});
  root = json_tokener_parse(r.out);
  assert_non_null(root);
  json_object *f = json_object_array_get_idx(get(root, "findings"), 0);
  json_object *w = json_object_array_get_idx(get(json_object_array_get_idx(get(f, "sides"), 1), "procs"), 0);
  assert_int_equal(get_int(w, "wait_ns"), 30000000100ll);
  json_object *site = get(w, "site");
  assert_int_equal(get_int(site, "skipped"), 5);
  json_object *fr0 = json_object_array_get_idx(get(site, "frames"), 0);
  assert_string_equal(get_str(fr0, "symbol"), "_PyEval_EvalFrameDefault");
  assert_int_equal(get_int(fr0, "offset"), 0x1f3e22);
  json_object_put(root);
  result_free(&r);
}

/* ---- what the traces could not see (format 1.5) ---------------------------- */

/* Two ranks on one communicator, five all-reduces each, into a fresh dir
 * <tmpdir>/<name>; how: 0 rank 1 killed (its ring's heartbeat stale), 1
 * rank 1 loaded a second libnccl, 2 both running (heartbeats at monotonic
 * 2.6e9 ns, wall clock 1.7e18 + 1.6e9), each in flight in seq 6 since
 * monotonic 1.499e9 (1.1 s before: long enough to be a hang once dead). */
static void ended_dir(const char *name, int how, char *dir, size_t len) {
  snprintf(dir, len, "%s/%s", tmpdir, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  for (int r = 0; r < 2; r++) {
    struct nsp_tracegen *g = nsp_tracegen_create("h", 100u + (uint32_t)r, r);
    uint32_t w = nsp_tracegen_comm(g, 0xaaaa, r, 2);
    for (int i = 0; i < 5; i++) nsp_tracegen_coll(g, NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1);
    if (how == 0 && r == 1) assert_int_equal(nsp_tracegen_ringstate(g, 0, 0, 0, 0, 0), 0);
    if (how == 1 && r == 1) assert_int_equal(nsp_tracegen_libnccl(g, "/opt/x/libnccl.so.2", 21903), 0);
    if (how == 2) {
      assert_int_equal(nsp_tracegen_ringstate(g, 2600000000ull, 0, 0, 1, 0), 0);
      assert_int_equal(nsp_tracegen_inflight_coll(g, NSP_API_AllReduce, w, 8, ncclFloat32, ncclSum, -1,
                                                  1499000000ull, NULL), 0);
    }
    assert_int_equal(nsp_tracegen_write(g, dir, SIZE_MAX, NULL, 0), 0);
    nsp_tracegen_destroy(g);
  }
}

/* No finding, but rank 1 was killed, or loaded a libnccl ncclspy does
 * not trace: exit status 3, and the summary says it.  A healthy job still
 * running: exit status 0 ("now" from NSP_ANALYZE_NOW_NS). */
static void test_unseen_status(void **state) {
  (void)state;
  char dir[300];
  ended_dir("killed", 0, dir, sizeof dir);
  struct result r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 3);
  assert_contains(r.out, "\n  No problem found in what the traces show (2 traces, 1 communicator, 10 collective calls, 0\n"
                         "  send/recv calls), but: rank 1 ended without a clean exit (a signal such as SIGKILL, SIGTERM or\n"
                         "  SIGINT, the OOM killer, or _exit).\n");
  assert_contains(r.out, "\n            ended without a clean exit (a signal such as SIGKILL, SIGTERM or SIGINT, the OOM killer, or _exit; last heard at "
                         "+0.000006 s)\n");
  result_free(&r);
  r = run((const char *[]){"analyze", "--json", dir, NULL});
  assert_int_equal(r.status, 3);
  json_object *root = json_tokener_parse(r.out);
  assert_non_null(root);
  json_object *e1 = get(json_object_array_get_idx(get(root, "traces"), 1), "end");
  assert_string_equal(get_str(e1, "state"), "killed");
  assert_string_equal(get_str(e1, "source"), "crash-ring");
  assert_int_equal(get_int(e1, "time_ns"), 1700000000000006100ll);
  json_object *e0 = get(json_object_array_get_idx(get(root, "traces"), 0), "end");
  assert_string_equal(get_str(e0, "state"), "exited");
  assert_string_equal(get_str(e0, "source"), "exit-record");
  assert_int_equal(get_int(get(root, "caveats"), "unclean"), 1);
  assert_int_equal(get_int(get(root, "caveats"), "running"), 0);
  json_object_put(root);
  result_free(&r);
  nsp_case_rmdir(dir);

  ended_dir("libnccl", 1, dir, sizeof dir);
  r = run((const char *[]){"analyze", "--json", dir, NULL});
  assert_int_equal(r.status, 3);
  root = json_tokener_parse(r.out);
  json_object *l = json_object_array_get_idx(get(json_object_array_get_idx(get(root, "traces"), 1), "untraced_libnccl"), 0);
  assert_string_equal(get_str(l, "path"), "/opt/x/libnccl.so.2");
  assert_string_equal(get_str(l, "nccl_version_str"), "2.19.3");
  assert_int_equal(get_int(get(root, "caveats"), "untraced_libnccl"), 1);
  assert_contains(get_str(root, "summary"), "rank 1 loaded /opt/x/libnccl.so.2 (NCCL 2.19.3), which ncclspy does "
                                            "not trace");
  json_object_put(root);
  result_free(&r);
  nsp_case_rmdir(dir);

  ended_dir("live", 2, dir, sizeof dir);
  assert_int_equal(setenv("NSP_ANALYZE_NOW_NS", "1700000003600000000", 1), 0);
  r = run((const char *[]){"analyze", "--json", dir, NULL});
  assert_int_equal(r.status, 0);
  root = json_tokener_parse(r.out);
  assert_int_equal(json_object_array_length(get(root, "findings")), 0);
  e0 = get(json_object_array_get_idx(get(root, "traces"), 0), "end");
  assert_string_equal(get_str(e0, "state"), "running");
  assert_int_equal(get_int(e0, "age_ns"), 2000000000);
  json_object *inf = json_object_array_get_idx(get(json_object_array_get_idx(get(root, "traces"), 0), "in_flight"), 0);
  assert_int_equal(get_int(inf, "seq"), 6);
  assert_true(json_object_get_boolean(get(inf, "in_flight")));
  assert_contains(get_str(root, "summary"), "but: ranks 0-1 are still running (last heard at most 2.0 s ago)");
  json_object_put(root);
  result_free(&r);
  assert_int_equal(setenv("NSP_ANALYZE_NOW_NS", "soon", 1), 0);
  r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "NSP_ANALYZE_NOW_NS is not a time in ns");
  result_free(&r);
  assert_int_equal(unsetenv("NSP_ANALYZE_NOW_NS"), 0);
  /* Without it, the same traces are long dead: killed. */
  r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "never-completed");
  result_free(&r);
  nsp_case_rmdir(dir);
}

/* `ncclspy perf`: text and JSON, with the notes of what was not read. */
static void test_perf(void **state) {
  (void)state;
  char dir[300];
  case_dir("c12", dir, sizeof dir);
  struct result r = run((const char *[]){"perf", dir, NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "ncclspy perf: 4 traces, 1 communicator\n");
  /* Exact sizes, as nccl-tests prints them, and what is per rank. */
  assert_contains(r.out, "size (B) and count (elements) are per rank and per call, as nccl-tests prints them; calls "
                         "and\ntimed are summed over the ranks");
  assert_contains(r.out, "  op                 size (B)        count      type      redop  root     calls     timed   "
                         "p50 (us)   p99 (us) algbw (GB/s) busbw (GB/s)\n"
                         "  all-reduce          2097152      1048576  bfloat16        sum    -1        14         8      "
                         "50.00      50.00        41.94        62.91\n");
  if (strstr(r.out, "MiB")) fail_msg("sizes rounded to units:\n%s", r.out);
  assert_contains(r.out, "arrival spread over 2 collectives");
  result_free(&r);
  r = run((const char *[]){"perf", "--json", dir, NULL});
  assert_int_equal(r.status, 0);
  json_object *root = json_tokener_parse(r.out);
  assert_non_null(root);
  json_object *c = json_object_array_get_idx(get(root, "communicators"), 0);
  assert_string_equal(get_str(c, "id"), "57a1d0c0ffee0001");
  json_object *op = json_object_array_get_idx(get(c, "ops"), 0);
  assert_string_equal(get_str(op, "op"), "all-reduce");
  assert_int_equal(get_int(op, "bytes"), 2097152);
  assert_int_equal(get_int(op, "bytes_min"), 2097152); /* schema 1 keeps its members */
  assert_int_equal(get_int(op, "bytes_max"), 2097152);
  assert_int_equal(get_int(op, "count"), 1048576);
  assert_string_equal(get_str(op, "dtype"), "bfloat16");
  assert_string_equal(get_str(op, "redop"), "sum");
  assert_int_equal(get_int(op, "root"), -1);
  assert_int_equal(get_int(op, "calls"), 14);
  json_object *units = get(root, "units");
  assert_string_equal(get_str(units, "bytes"), "per rank, per call");
  assert_string_equal(get_str(units, "calls"), "summed over the ranks");
  assert_int_equal(get_int(op, "timed"), 8);
  assert_int_equal(get_int(op, "p50_ns"), 50000);
  assert_true(json_object_get_double(get(op, "busbw_factor")) == 1.5);
  assert_int_equal(get_int(get(c, "arrival"), "collectives"), 2);
  json_object *notes = get(root, "notes");
  assert_int_equal(json_object_array_length(notes), 0);
  json_object_put(root);
  result_free(&r);
  /* A file that is no trace: the figures leave it out, and say so. */
  char junk[400];
  write_junk(dir, junk, sizeof junk);
  r = run((const char *[]){"perf", dir, NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "\nNotes (1)\n  - ");
  assert_contains(r.out, "zz-junk.ncclspy");
  result_free(&r);
  r = run((const char *[]){"perf", "--json", dir, NULL});
  root = json_tokener_parse(r.out);
  assert_non_null(root);
  notes = get(root, "notes");
  assert_int_equal(json_object_array_length(notes), 1);
  assert_non_null(strstr(json_object_get_string(json_object_array_get_idx(notes, 0)), "zz-junk.ncclspy"));
  json_object_put(root);
  result_free(&r);
  remove(junk);
  r = run((const char *[]){"perf", NULL});
  assert_int_equal(r.status, 2);
  result_free(&r);
  r = run((const char *[]){"help", "perf", NULL});
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "usage: ncclspy perf");
  result_free(&r);
}


/* ---- issue #13, item 10 ------------------------------------------------- */

/* The first n bytes of file from, written to to (n SIZE_MAX: all). */
static void copy_prefix(const char *from, const char *to, size_t n) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[4096];
  size_t got, done = 0;
  while (done < n && (got = fread(buf, 1, n - done < sizeof buf ? n - done : sizeof buf, in)) > 0) {
    assert_int_equal(fwrite(buf, 1, got, out), got);
    done += got;
  }
  fclose(in);
  assert_int_equal(fclose(out), 0);
}

/* A real trace of a rank killed by SIGSEGV (tests/data/gpu/rank_crash):
 * its file holds only the header, every record is in its crash ring. */
static void crash_trace(char *path, size_t len) {
  const char *gdir = getenv("NSP_GOLDEN_DIR");
  assert_non_null(gdir);
  snprintf(path, len, "%s/../../data/gpu/rank_crash/vm.826.rank1.ncclspy", gdir);
}

/* (a) A header cut short says so, with the sizes: not "bad header size",
 * not "not an ncclspy trace". */
static void test_truncated_header(void **state) {
  (void)state;
  char src[600], dir[300], cut[400], cut100[400], cut7[400];
  crash_trace(src, sizeof src);
  snprintf(dir, sizeof dir, "%s/trunc", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(cut, sizeof cut, "%s/cut127.ncclspy", dir);
  snprintf(cut100, sizeof cut100, "%s/cut100.ncclspy", dir);
  snprintf(cut7, sizeof cut7, "%s/cut7.ncclspy", dir);
  copy_prefix(src, cut, 127);
  copy_prefix(src, cut100, 100);
  copy_prefix(src, cut7, 7);
  struct result r = run((const char *[]){"dump", cut, NULL});
  assert_int_equal(r.status, 2);
  char want[1000];
  snprintf(want, sizeof want, "ncclspy: %s: truncated header: 127 of 128 bytes\n", cut);
  assert_string_equal(r.err, want);
  result_free(&r);
  r = run((const char *[]){"dump", cut100, NULL});
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof want, "ncclspy: %s: truncated header: 100 of at least 112 bytes\n", cut100);
  assert_string_equal(r.err, want);
  result_free(&r);
  r = run((const char *[]){"dump", cut7, NULL}); /* a prefix of the magic */
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof want, "ncclspy: %s: truncated header: 7 of at least 112 bytes\n", cut7);
  assert_string_equal(r.err, want);
  result_free(&r);
  r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 2);
  snprintf(want, sizeof want, "%s: not read: truncated header: 127 of 128 bytes", cut);
  assert_contains(r.err, want);
  result_free(&r);
  /* A crash ring cut inside its header, or inside its slots. */
  char trace[400], ring[420], srcring[620];
  snprintf(trace, sizeof trace, "%s/vm.826.rank1.ncclspy", dir);
  snprintf(ring, sizeof ring, "%s.ring", trace);
  snprintf(srcring, sizeof srcring, "%s.ring", src);
  copy_prefix(src, trace, SIZE_MAX);
  copy_prefix(srcring, ring, 3000);
  r = run((const char *[]){"dump", trace, NULL});
  snprintf(want, sizeof want, "%s ignored: truncated ring header: 3000 of 4096 bytes", ring);
  assert_contains(r.out, want);
  result_free(&r);
  copy_prefix(srcring, ring, 200000);
  r = run((const char *[]){"dump", trace, NULL});
  assert_contains(r.out, "ignored: truncated: ");
  assert_contains(r.out, "the file has 200000 bytes");
  result_free(&r);
  nsp_case_rmdir(dir);
}

/* (b) A bad command or option: the error and one line pointing to help,
 * never the whole usage. */
static void test_usage_errors(void **state) {
  (void)state;
  static const struct {
    const char *args[5];
    const char *err;
  } cases[] = {
      {{"help", "bogus", NULL}, "ncclspy: no such command: bogus\nTry 'ncclspy help'.\n"},
      {{"bogus", NULL}, "ncclspy: no such command: bogus\nTry 'ncclspy help'.\n"},
      {{NULL}, "ncclspy: no command given\nTry 'ncclspy help'.\n"},
      {{"--bogus", NULL}, "ncclspy: unknown option '--bogus'\nTry 'ncclspy help'.\n"},
      {{"analyze", "--bogus", "x", NULL}, "ncclspy analyze: unknown option '--bogus'\nTry 'ncclspy help analyze'.\n"},
      {{"perf", "-x", "x", NULL}, "ncclspy perf: unknown option '-x'\nTry 'ncclspy help perf'.\n"},
      {{"dump", "--bogus", "x", NULL}, "ncclspy dump: unknown option '--bogus'\nTry 'ncclspy help dump'.\n"},
      {{"analyze", "-o", NULL}, "ncclspy analyze: option '-o' needs a file name\nTry 'ncclspy help analyze'.\n"},
      {{"perf", "--output", NULL}, "ncclspy perf: option '--output' needs a file name\nTry 'ncclspy help perf'.\n"},
      {{"analyze", "x", "--run", NULL},
       "ncclspy analyze: option '--run' needs a run's identity, its number, or all\nTry 'ncclspy help analyze'.\n"},
      {{"perf", "--run=", "x", NULL},
       "ncclspy perf: option '--run' needs a run's identity, its number, or all\nTry 'ncclspy help perf'.\n"},
      {{"help", "analyze", "extra", NULL}, "ncclspy: help takes one command, not 'extra'\nTry 'ncclspy help'.\n"},
      {{"analyze", "--html", "--json", "x", NULL},
       "ncclspy: --json and --html are two formats: give one\nTry 'ncclspy help analyze'.\n"},
      {{"perf", "--html", "x", NULL}, "ncclspy perf: unknown option '--html'\nTry 'ncclspy help perf'.\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct result r = run(cases[i].args);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, cases[i].err);
    result_free(&r);
  }
}

/* (c) --json that cannot report still writes one JSON object, with the
 * exit status of the failure. */
static void test_json_errors(void **state) {
  (void)state;
  char empty[300];
  snprintf(empty, sizeof empty, "%s/json-empty", tmpdir);
  assert_int_equal(mkdir(empty, 0755), 0);
  static const char *const cmds[] = {"analyze", "perf"};
  for (size_t i = 0; i < 2; i++) {
    const char *const *argvs[] = {
        (const char *[]){cmds[i], "--json", empty, NULL},
        (const char *[]){cmds[i], "--json", "/nonexistent/traces", NULL},
    };
    for (size_t k = 0; k < 2; k++) {
      struct result r = run(argvs[k]);
      assert_int_equal(r.status, 2);
      json_object *o = json_tokener_parse(r.out);
      if (!o) fail_msg("%s --json wrote no JSON object: \"%s\"", cmds[i], r.out);
      assert_int_equal(get_int(o, "traces"), 0);
      assert_int_equal(get_int(o, "exit_status"), 2);
      assert_contains(get_str(o, "error"), "no readable trace");
      /* Why, in the object too, not only on standard error. */
      assert_contains(get_str(o, "error"), k ? "/nonexistent/traces" : "no *.ncclspy trace in it");
      json_object_put(o);
      result_free(&r);
    }
    /* A --run that names no run: the error object, not an empty output. */
    char c01[300];
    case_dir("c01", c01, sizeof c01);
    struct result r = run((const char *[]){cmds[i], "--json", "--run", "nosuch", c01, NULL});
    assert_int_equal(r.status, 2);
    json_object *o = json_tokener_parse(r.out);
    if (!o) fail_msg("%s --json --run nosuch wrote no JSON object: \"%s\"", cmds[i], r.out);
    assert_contains(get_str(o, "error"), "--run nosuch: no such run; the traces hold 1 (newest first): 1. ");
    assert_int_equal(get_int(o, "exit_status"), 2);
    json_object_put(o);
    result_free(&r);
  }
  /* dump --json: a line for a file it cannot read. */
  struct result r = run((const char *[]){"dump", "--json", "/nonexistent/x.ncclspy", NULL});
  assert_int_equal(r.status, 2);
  json_object *o = json_tokener_parse(r.out);
  if (!o) fail_msg("dump --json wrote no JSON object: \"%s\"", r.out);
  assert_string_equal(get_str(o, "record"), "error");
  assert_string_equal(get_str(o, "file"), "/nonexistent/x.ncclspy");
  assert_contains(get_str(o, "error"), "cannot open");
  json_object_put(o);
  result_free(&r);
  rmdir(empty);
}

/* (d) dump of a killed rank's trace says which records came from its
 * crash ring. */
static void test_dump_ring(void **state) {
  (void)state;
  char src[600];
  crash_trace(src, sizeof src);
  struct result r = run((const char *[]){"dump", src, NULL});
  assert_int_equal(r.status, 0);
  char want[1000];
  snprintf(want, sizeof want, "\nRING file=\"%s.ring\" records=8 recovered=7 lost=0 (the last 8 records above came from "
           "the crash ring: 7 the process committed but never wrote to the trace, then the ring's own state)\n", src);
  assert_contains(r.out, want);
  result_free(&r);
  r = run((const char *[]){"dump", "--json", src, NULL});
  assert_int_equal(r.status, 0);
  const char *last = r.out + strlen(r.out) - 1;
  while (last > r.out && last[-1] != '\n') last--;
  json_object *o = json_tokener_parse(last);
  assert_non_null(o);
  assert_string_equal(get_str(o, "record"), "ring");
  assert_int_equal(get_int(o, "records"), 8);
  assert_int_equal(get_int(o, "recovered"), 7);
  assert_int_equal(get_int(o, "lost"), 0);
  json_object_put(o);
  result_free(&r);
}

/* Incomplete coverage is no "exit 0": a damaged frame in a finding-free
 * job exits 3 (something the traces could not see) and says so in the
 * headline; dump of a trace whose crash ring was cut (ignored) exits 1
 * like a damaged file; a trace cut inside its first frame does not say
 * "the 0 readable records were analysed". */
static void test_incomplete_status(void **state) {
  (void)state;
  char dir[300];
  snprintf(dir, sizeof dir, "%s/incomplete", tmpdir);
  assert_int_equal(mkdir(dir, 0755), 0);
  struct nsp_tracegen *g[NSP_CASE_MAX_RANKS];
  int n = nsp_case_build("c10", g);
  assert_true(n >= 2);
  for (int r = 0; r < n; r++) {
    nsp_tracegen_set_frame_records(g[r], 4);
    assert_int_equal(nsp_tracegen_write(g[r], dir, SIZE_MAX, NULL, 0), 0);
  }
  size_t nf;
  const size_t *offs = nsp_tracegen_frame_offsets(g[1], &nf);
  assert_true(nf >= 3);
  size_t at = offs[1];
  char p1[400];
  assert_int_equal(nsp_tracegen_write(g[1], dir, SIZE_MAX, p1, sizeof p1), 0);
  for (int r = 0; r < n; r++) nsp_tracegen_destroy(g[r]);
  int fd = open(p1, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "\0\0\0\0", 4, (off_t)at), 4); /* frame 2's zstd magic */
  close(fd);
  struct result r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, 3);
  char want[200];
  snprintf(want, sizeof want, "rank 1's trace is damaged at byte %zu (", at);
  assert_contains(r.out, "No problems found in what was recorded in");
  assert_contains(r.out, "coverage is incomplete: job ");
  assert_contains(r.out, want);
  result_free(&r);
  r = run((const char *[]){"analyze", "--json", dir, NULL});
  assert_int_equal(r.status, 3);
  assert_contains(r.out, "\"incomplete\": 1");
  result_free(&r);

  char src[600], cut[400], ring_src[700], ring_cut[500];
  crash_trace(src, sizeof src);
  snprintf(cut, sizeof cut, "%s/ringcut.ncclspy", dir);
  snprintf(ring_src, sizeof ring_src, "%s.ring", src);
  snprintf(ring_cut, sizeof ring_cut, "%s.ring", cut);
  copy_prefix(src, cut, SIZE_MAX);
  copy_prefix(ring_src, ring_cut, 3000);
  r = run((const char *[]){"dump", cut, NULL});
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "ignored: truncated ring header: 3000 of");
  assert_contains(r.err, "crash ring: ");
  result_free(&r);
  unlink(ring_cut);
  unlink(cut);

  snprintf(cut, sizeof cut, "%s/cut129/", tmpdir);
  assert_int_equal(mkdir(cut, 0755), 0);
  strcat(cut, "x.rank0.ncclspy");
  char *r1 = strstr(src, "vm.826.rank1");
  assert_non_null(r1);
  memcpy(r1, "vm.825.rank0", 12); /* rank 0's trace has frames */
  copy_prefix(src, cut, 129);
  r = run((const char *[]){"analyze", cut, NULL});
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "nothing to analyse");
  assert_contains(r.err, "no record in it could be read");
  assert_null(strstr(r.err, "the 0 readable records"));
  result_free(&r);
}

/* ---- golden text reports ------------------------------------------------ */

/* Replaces every occurrence of `from` in s with `to` (new string). */
static char *replace_all(const char *s, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to), n = 0;
  for (const char *p = s; (p = strstr(p, from)); p += fl) n++;
  char *out = malloc(strlen(s) + n * tl + 1), *o = out;
  assert_non_null(out);
  for (const char *p = s;;) {
    const char *q = strstr(p, from);
    if (!q) {
      strcpy(o, p);
      break;
    }
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, to, tl);
    o += tl;
    p = q + fl;
  }
  return out;
}

static void check_golden(const char *name, const char *dir, int want_status) {
  struct result r = run((const char *[]){"analyze", dir, NULL});
  assert_int_equal(r.status, want_status);
  char *got = replace_all(r.out, dir, "$DIR");
  const char *gdir = getenv("NSP_GOLDEN_DIR");
  assert_non_null(gdir);
  char path[600];
  snprintf(path, sizeof path, "%s/%s.txt", gdir, name);
  const char *upd = getenv("NSP_UPDATE_GOLDEN");
  if (upd && !strcmp(upd, "1")) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(got, f);
    fclose(f);
    print_message("updated %.900s\n", path);
  } else {
    char *want = slurp(path);
    if (strcmp(got, want))
      fail_msg("report differs from %s (NSP_UPDATE_GOLDEN=1 rewrites it)\n--- got:\n%s", path, got);
    free(want);
  }
  free(got);
  result_free(&r);
}

static void test_golden(void **state) {
  (void)state;
  static const char *const names[] = {"c01", "c05", "c07", "c08", "c11", "c01-gpu", "c13", "c14"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char d[300];
    case_dir(names[i], d, sizeof d);
    check_golden(names[i], d, 1);
  }
}

int main(void) {
  ncclspy = getenv("NCCLSPY");
  if (!ncclspy) {
    fprintf(stderr, "test_an_cli: set NCCLSPY to the ncclspy binary\n");
    return 2;
  }
  if (nsp_case_mkdtemp(tmpdir, sizeof tmpdir) < 0) return 2;
  /* Order matters: later tests reuse the case directories made earlier. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help_version_usage),
      cmocka_unit_test(test_exit_codes),
      cmocka_unit_test(test_damaged_inputs),
      cmocka_unit_test(test_same_trace_twice),
      cmocka_unit_test(test_shorter_copy),
      cmocka_unit_test(test_output_guard),
      cmocka_unit_test(test_no_records),
      cmocka_unit_test(test_subdirs_and_rings),
      cmocka_unit_test(test_dump_text),
      cmocka_unit_test(test_dump_json),
      cmocka_unit_test(test_json_report),
      cmocka_unit_test(test_json_hangs),
      cmocka_unit_test(test_perf),
      cmocka_unit_test(test_unseen_status),
      cmocka_unit_test(test_golden),
      cmocka_unit_test(test_truncated_header),
      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_json_errors),
      cmocka_unit_test(test_dump_ring),
      cmocka_unit_test(test_incomplete_status),
  };
  int ret = cmocka_run_group_tests(tests, NULL, teardown_dirs);
  nsp_case_rmdir(tmpdir);
  return ret;
}
