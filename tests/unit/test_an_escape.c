/* test_an_escape.c - strings from traces are untrusted bytes: the JSON
 * of `analyze`, `perf` and `dump` stays valid UTF-8 whatever they hold,
 * and the text reports escape their control characters instead of
 * passing terminal escapes or forged lines through (nsp_escape.h).
 *
 * The report writers are run in process (nsp_report_*, nsp_dump_file)
 * and, with NCCLSPY set (by meson), the command itself. */
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

#include "nsp_an_test.h"
#include "nsp_report.h"

#include "nsp_escape.h"

#include <json-c/json.h>

extern char **environ;

static char tmpdir[256];

/* ---- strings a trace can hold ------------------------------------------- */

/* Every kind of string a trace carries, for rank 0 of a two-rank job
 * (rank 1 is plain: host "peer", NCCL_SOCKET_IFNAME=eth0). */
struct strs {
  const char *host, *ifname, *setting, *comm_name, *last_error, *module, *symbol, *nccl_path, *launcher, *gpu_name;
};

/* Two ranks on one communicator: three all-reduces that rank 0 enters
 * 5 us after rank 1 (a straggler for perf), then a fourth that fails on
 * rank 0 with s->last_error; rank 0's calls have a call site.  Rank 0's
 * NCCL_PROTO (s->ifname: a setting that must match) makes an
 * env-nccl-setting finding, its NCCL_SOCKET_IFNAME (per host) and its
 * extra variable s->setting (a name ncclspy does not know) notes. */
static void build(struct nsp_tracegen **g, const struct strs *s) {
  for (int r = 0; r < 2; r++) {
    g[r] = nsp_tracegen_create(r ? "peer" : s->host, 1000u + (uint32_t)r, r);
    assert_non_null(g[r]);
    nsp_tracegen_set_clock(g[r], 1700000000000000000ull, 1000000000ull);
    nsp_tracegen_set_tracking(g[r], NSP_TRACK_CALLSITES);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_SOCKET_IFNAME", r ? "eth0" : s->ifname), 0);
    assert_int_equal(nsp_tracegen_env(g[r], "NCCL_PROTO", r ? "eth0" : s->ifname), 0);
    if (!r) {
      assert_int_equal(nsp_tracegen_env(g[r], s->setting, "1"), 0);
      assert_int_equal(nsp_tracegen_set_nccl_path(g[r], s->nccl_path), 0);
      assert_int_equal(nsp_tracegen_set_launcher(g[r], s->launcher), 0);
      assert_int_equal(nsp_tracegen_set_gpu(g[r], "GPU-0", "0000:01:00.0", s->gpu_name), 0);
    }
    nsp_tracegen_set_comm_name(g[r], s->comm_name);
    uint32_t w = nsp_tracegen_comm(g[r], 0x57a1d0c0ffee0001ull, r, 2);
    assert_true(w != 0);
    if (!r) {
      const char *mods[] = {s->module, "/usr/bin/python3"};
      const char *syms[] = {s->symbol, "main"};
      const uint64_t offs[] = {0x1234, 0x1140};
      uint32_t site = nsp_tracegen_callsite(g[r], 0, 2, mods, offs, syms);
      assert_true(site != 0);
      nsp_tracegen_set_site(g[r], site);
    }
    for (uint64_t seq = 1; seq <= 4; seq++) {
      nsp_tracegen_set_time(g[r], 1000000000ull + 1000000ull * seq + (r ? 0 : 5000));
      if (seq == 4 && !r) nsp_tracegen_fail_next(g[r], ncclSystemError, s->last_error);
      assert_true(nsp_tracegen_coll(g[r], NSP_API_AllReduce, w, 1024, ncclFloat32, ncclSum, -1) != 0);
    }
  }
}

/* The job of build(s), analysed, with its perf figures. */
static struct nsp_job *job_of(const struct strs *s) {
  struct nsp_tracegen *g[2];
  build(g, s);
  struct nsp_job *job = analyse_gens(g, 2);
  assert_int_equal(nsp_job_perf(job), 0);
  return job;
}

/* Writes build(s)'s traces into dir; the path of rank 0's into path0. */
static void write_traces(const struct strs *s, const char *dir, char *path0, size_t len) {
  struct nsp_tracegen *g[2];
  build(g, s);
  assert_int_equal(nsp_tracegen_write(g[0], dir, SIZE_MAX, path0, len), 0);
  assert_int_equal(nsp_tracegen_write(g[1], dir, SIZE_MAX, NULL, 0), 0);
  nsp_tracegen_destroy(g[0]);
  nsp_tracegen_destroy(g[1]);
}

/* What a writer puts on a FILE, as a string (caller frees). */
struct capture {
  FILE *f;
  char *buf;
  size_t len;
};
static void cap_open(struct capture *c) {
  c->buf = NULL;
  c->len = 0;
  c->f = open_memstream(&c->buf, &c->len);
  assert_non_null(c->f);
}
static char *cap_take(struct capture *c) {
  assert_int_equal(fclose(c->f), 0);
  return c->buf;
}

/* Runs ncclspy (NCCLSPY) with args; its stdout (caller frees), NULL when
 * NCCLSPY is not set.  *status: its exit status. */
static char *run_cli(const char *const *args, int *status) {
  const char *exe = getenv("NCCLSPY");
  if (!exe) return NULL;
  const char *argv[16];
  int n = 0;
  argv[n++] = exe;
  for (int i = 0; args[i]; i++) argv[n++] = args[i];
  argv[n] = NULL;
  char outp[300];
  snprintf(outp, sizeof outp, "%s/stdout", tmpdir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, exe, &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  FILE *f = fopen(outp, "rb");
  assert_non_null(f);
  struct capture c;
  cap_open(&c);
  char b[4096];
  size_t k;
  while ((k = fread(b, 1, sizeof b, f)) > 0) fwrite(b, 1, k, c.f);
  fclose(f);
  unlink(outp);
  return cap_take(&c);
}

/* ---- (a) JSON is valid UTF-8 ------------------------------------------- */

/* Strict UTF-8 (Unicode table 3-7), written independently of the code
 * under test: the offset of the first bad byte, or -1. */
static long utf8_bad_at(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  for (size_t i = 0; s[i];) {
    unsigned c = s[i], cp, n;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 2, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 3, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 4, cp = c & 0x07;
    } else {
      return (long)i;
    }
    for (unsigned k = 1; k < n; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return (long)i;
      cp = cp << 6 | (s[i + k] & 0x3f);
    }
    static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return (long)i;
    i += n;
  }
  return -1;
}

static void assert_utf8(const char *what, const char *s) {
  long at = utf8_bad_at(s);
  if (at >= 0) fail_msg("%s: not valid UTF-8 at byte %ld (0x%02x)", what, at, (unsigned char)s[at]);
}

/* Rank 0's strings with byte 0xe9 (Latin-1 e-acute) and, in the NCCL
 * path, a well-formed "é" that must come through unchanged. */
static const struct strs latin1 = {
    .host = "n\xe9ud-a",
    .ifname = "eth\xe9",
    .setting = "NCCL_\xe9T\xe9",
    .comm_name = "pg\xe9:0",
    .last_error = "connexion r\xe9initialis\xe9\x65",
    .module = "/opt/\xe9/libtrain.so",
    .symbol = "step_\xe9",
    .nccl_path = "/opt/caf\xc3\xa9/\xe9/libnccl.so.2",
    .launcher = "torchrun\xe9",
    .gpu_name = "H\xe9",
};
#define FFFD "\xef\xbf\xbd"

/* The traces of `latin1` in files, in a directory named with 0xe9 too
 * (made by the group setup): for the command and for dump. */
static char latin1_dir[300], latin1_path0[600];
/* The traces of `controls` (below), and a file that is no trace named
 * with an escape and a line break (a note). */
static char controls_dir[300], controls_path0[600];

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, key, &v)) fail_msg("no member \"%s\" in %s", key, json_object_to_json_string(o));
  return v;
}
static const char *get_str(json_object *o, const char *key) { return json_object_get_string(get(o, key)); }
static json_object *idx(json_object *a, size_t i) {
  assert_true(json_object_is_type(a, json_type_array));
  assert_true(i < json_object_array_length(a));
  return json_object_array_get_idx(a, i);
}

/* Valid UTF-8 and one JSON document. */
static json_object *parse_doc(const char *what, const char *s) {
  assert_utf8(what, s);
  json_object *o = json_tokener_parse(s);
  if (!o) fail_msg("%s: not JSON:\n%s", what, s);
  return o;
}

/* The analyze report: every string valid, 0xe9 as U+FFFD, "é" kept. */
static void check_report_json(json_object *root) {
  json_object *t0 = NULL;
  json_object *traces = get(root, "traces");
  for (size_t i = 0; i < json_object_array_length(traces); i++)
    if (json_object_get_int(get(idx(traces, i), "rank")) == 0) t0 = idx(traces, i);
  assert_non_null(t0);
  assert_string_equal(get_str(t0, "host"), "n" FFFD "ud-a");
  assert_string_equal(get_str(t0, "nccl_path"), "/opt/caf\xc3\xa9/" FFFD "/libnccl.so.2");
  assert_string_equal(get_str(t0, "launcher"), "torchrun" FFFD);
  assert_string_equal(get_str(idx(get(root, "communicators"), 0), "comm_name"), "pg" FFFD ":0");
  /* the env finding's value with 0xe9, the note on a setting named with it */
  int seen_setting = 0, seen_value = 0, seen_error = 0;
  json_object *notes = get(root, "notes");
  for (size_t i = 0; i < json_object_array_length(notes); i++)
    if (strstr(json_object_get_string(idx(notes, i)), "NCCL_" FFFD "T" FFFD " differs across ranks")) seen_setting = 1;
  json_object *finds = get(root, "findings");
  for (size_t i = 0; i < json_object_array_length(finds); i++) {
    json_object *f = idx(finds, i);
    const char *kind = get_str(f, "kind");
    if (!strcmp(kind, "env-nccl-setting")) {
      const char *set = get_str(f, "setting");
      if (!strcmp(set, "NCCL_PROTO")) {
        json_object *sides = get(f, "sides");
        for (size_t k = 0; k < json_object_array_length(sides); k++) {
          json_object *v = get(idx(sides, k), "value");
          if (v && !strcmp(json_object_get_string(v), "eth" FFFD)) seen_value = 1;
        }
        assert_non_null(strstr(get_str(f, "message"), "eth" FFFD));
      }
    }
    if (!strcmp(kind, "error")) {
      json_object *p = idx(get(idx(get(f, "sides"), 0), "procs"), 0);
      assert_string_equal(get_str(p, "host"), "n" FFFD "ud-a");
      assert_string_equal(get_str(get(p, "error"), "last_error"), "connexion r" FFFD "initialis" FFFD "e");
      json_object *fr = idx(get(get(p, "site"), "frames"), 0);
      assert_string_equal(get_str(fr, "module"), "/opt/" FFFD "/libtrain.so");
      assert_string_equal(get_str(fr, "symbol"), "step_" FFFD);
      seen_error = 1;
    }
  }
  assert_true(seen_setting && seen_value && seen_error);
}

static void check_perf_json(json_object *root) {
  json_object *c = idx(get(root, "communicators"), 0);
  assert_string_equal(get_str(c, "comm_name"), "pg" FFFD ":0");
  json_object *st = idx(get(c, "stragglers"), 0);
  assert_int_equal(json_object_get_int(get(st, "rank")), 0);
  assert_string_equal(get_str(st, "host"), "n" FFFD "ud-a");
}

/* Each line of a dump one valid JSON object; the PROCESS record's
 * strings (an env key among them) made valid. */
static void check_dump_json(const char *what, const char *out, const char *dir) {
  assert_utf8(what, out);
  char *copy = strdup(out), *save = NULL;
  assert_non_null(copy);
  int n = 0, process = 0;
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
    json_object *o = parse_doc(what, line);
    const char *rec = get_str(o, "record");
    if (!strcmp(rec, "header")) {
      assert_string_equal(get_str(o, "host"), "n" FFFD "ud-a");
      if (dir) assert_non_null(strstr(get_str(o, "file"), "/tr" FFFD "ces/n" FFFD "ud-a.1000.rank0.ncclspy"));
    } else if (!strcmp(rec, "process")) {
      json_object *env = get(o, "env");
      assert_string_equal(get_str(env, "NCCL_SOCKET_IFNAME"), "eth" FFFD);
      assert_string_equal(get_str(env, "NCCL_" FFFD "T" FFFD), "1");
      assert_string_equal(get_str(o, "nccl_path"), "/opt/caf\xc3\xa9/" FFFD "/libnccl.so.2");
      assert_string_equal(get_str(o, "launcher"), "torchrun" FFFD);
      process = 1;
    } else if (!strcmp(rec, "comm")) {
      assert_string_equal(get_str(o, "comm_name"), "pg" FFFD ":0");
      assert_string_equal(get_str(o, "gpu_name"), "H" FFFD);
    } else if (!strcmp(rec, "callsite")) {
      json_object *fr = idx(get(o, "frames"), 0);
      assert_string_equal(get_str(fr, "module"), "/opt/" FFFD "/libtrain.so");
      assert_string_equal(get_str(fr, "symbol"), "step_" FFFD);
    } else if (!strcmp(rec, "call") && get_str(o, "last_error")[0]) {
      assert_string_equal(get_str(o, "last_error"), "connexion r" FFFD "initialis" FFFD "e");
    }
    json_object_put(o);
  }
  assert_true(process);
  assert_true(n >= 8);
  free(copy);
}

static void test_analyze_json_utf8(void **state) {
  (void)state;
  struct nsp_job *job = job_of(&latin1);
  struct capture c;
  cap_open(&c);
  assert_int_equal(nsp_report_json(job, c.f), 0);
  nsp_job_destroy(job);
  char *s = cap_take(&c);
  json_object *root = parse_doc("analyze --json", s);
  check_report_json(root);
  json_object_put(root);
  free(s);

  int st;
  if (!(s = run_cli((const char *[]){"analyze", "--json", latin1_dir, NULL}, &st))) return; /* no NCCLSPY */
  assert_int_equal(st, 1);
  root = parse_doc("ncclspy analyze --json", s);
  check_report_json(root);
  assert_non_null(strstr(get_str(idx(get(root, "traces"), 0), "file"), "/tr" FFFD "ces/"));
  json_object_put(root);
  free(s);
}

static void test_perf_json_utf8(void **state) {
  (void)state;
  struct nsp_job *job = job_of(&latin1);
  struct capture c;
  cap_open(&c);
  assert_int_equal(nsp_report_perf_json(job, c.f), 0);
  nsp_job_destroy(job);
  char *s = cap_take(&c);
  json_object *root = parse_doc("perf --json", s);
  check_perf_json(root);
  json_object_put(root);
  free(s);

  int st;
  if (!(s = run_cli((const char *[]){"perf", "--json", latin1_dir, NULL}, &st))) return;
  assert_int_equal(st, 0);
  root = parse_doc("ncclspy perf --json", s);
  check_perf_json(root);
  json_object_put(root);
  free(s);
}

static void test_dump_json_utf8(void **state) {
  (void)state;
  struct capture c;
  cap_open(&c);
  FILE *err = fopen("/dev/null", "w");
  assert_non_null(err);
  assert_int_equal(nsp_dump_file(latin1_path0, 1, c.f, err), 0);
  fclose(err);
  char *s = cap_take(&c);
  check_dump_json("dump --json", s, latin1_dir);
  free(s);

  int st;
  if (!(s = run_cli((const char *[]){"dump", "--json", latin1_path0, NULL}, &st))) return;
  assert_int_equal(st, 0);
  check_dump_json("ncclspy dump --json", s, latin1_dir);
  free(s);
}

/* ---- (b) the text escapes control characters --------------------------- */

/* Rank 0's strings with terminal escapes, line breaks and other control
 * characters (a C1 CSI coded in UTF-8 among them). */
static const struct strs controls = {
    .host = "node\033[2J-a\r",
    .ifname = "eth0\033[31mRED\nFAKE LINE",
    .setting = "NCCL_X\033[0mY",
    .comm_name = "pg\x7f\x01:0",
    .last_error = "reset\n[2] forged finding\t\b",
    .module = "/opt/lib\033]0;title\a.so",
    .symbol = "step\xc2\x9b" "5m\x1b",
    .nccl_path = "/opt/\nnccl/libnccl.so.2",
    .launcher = "torchrun\n",
    .gpu_name = "H100\033[K",
};

/* s with each control byte (< 0x20, 0x7f) and each UTF-8-coded C1 control
 * byte pair replaced by "XXXX" per byte: the same strings without control
 * characters, as wide as their escaped forms. */
static char *plain(const char *s) {
  char *o = malloc(4 * strlen(s) + 1), *w = o;
  assert_non_null(o);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
    if (*p < 0x20 || *p == 0x7f || c1) {
      for (int k = 0; k < (c1 ? 2 : 1); k++, w += 4) memcpy(w, "XXXX", 4);
      p += c1;
    } else {
      *w++ = (char)*p;
    }
  }
  *w = 0;
  return o;
}

struct plain_strs {
  struct strs s;
  char *m[10];
};
static void plain_strs(struct plain_strs *ps, const struct strs *s) {
  const char *const *in = &s->host;
  const char **out = &ps->s.host;
  for (int i = 0; i < 10; i++) out[i] = ps->m[i] = plain(in[i]);
}
static void plain_free(struct plain_strs *ps) {
  for (int i = 0; i < 10; i++) free(ps->m[i]);
}

/* No byte a terminal acts on but the newline. */
static void assert_no_controls(const char *what, const char *out) {
  for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
    int c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
    if ((*p < 0x20 && *p != '\n') || *p == 0x7f || c1)
      fail_msg("%s: raw control byte 0x%02x at %ld:\n%s", what, *p, (long)(p - (const unsigned char *)out), out);
  }
}

/* out with every "\xNN" escape replaced by "XXXX". */
static char *unescape_x(const char *out) {
  char *o = strdup(out), *w = o;
  assert_non_null(o);
  for (const char *p = out; *p;) {
    if (p[0] == '\\' && p[1] == 'x' && p[2] && p[3] && strchr("0123456789abcdef", p[2]) &&
        strchr("0123456789abcdef", p[3])) {
      memcpy(w, "XXXX", 4);
      w += 4;
      p += 4;
    } else {
      *w++ = *p++;
    }
  }
  *w = 0;
  return o;
}

/* The writer's output for the traces with control characters is the
 * output for the same traces without them, each control byte as \xNN:
 * same lines, same wrapping, nothing else changed. */
static void assert_escaped_like(const char *what, const char *got, const char *want_plain) {
  assert_no_controls(what, got);
  char *u = unescape_x(got);
  if (strcmp(u, want_plain))
    fail_msg("%s: the report's lines changed\n--- with control characters:\n%s\n--- without:\n%s", what, got,
             want_plain);
  free(u);
}

enum { W_REPORT, W_PERF };
static char *text_of(const struct strs *s, int which) {
  struct nsp_job *job = job_of(s);
  struct capture c;
  cap_open(&c);
  assert_int_equal(which == W_REPORT ? nsp_report_text(job, c.f) : nsp_report_perf_text(job, c.f), 0);
  nsp_job_destroy(job);
  return cap_take(&c);
}

static void assert_no_forged_line(const char *what, const char *out) {
  if (strstr(out, "\nFAKE") || strstr(out, "\n[2] forged")) fail_msg("%s: a forged line:\n%s", what, out);
}

static void test_report_text_escapes(void **state) {
  (void)state;
  struct plain_strs ps;
  plain_strs(&ps, &controls);
  char *got = text_of(&controls, W_REPORT), *want = text_of(&ps.s, W_REPORT);
  plain_free(&ps);
  assert_escaped_like("analyze", got, want);
  assert_no_forged_line("analyze", got);
  /* the tester's case: the env value's escape and line break, escaped
   * in the message, the side and the summary's hint */
  assert_contains(got, "eth0\\x1b[31mRED\\x0aFAKE LINE");
  assert_contains(got, "side 1: rank 0: NCCL_PROTO=eth0\\x1b[31mRED\\x0aFAKE LINE\n");
  assert_contains(got, "] env-nccl-setting NCCL_PROTO\n");
  assert_contains(got, "NCCL_X\\x1b[0mY differs across ranks (a setting ncclspy does not know");
  assert_contains(got, "(\"reset\\x0a[2] forged finding\\x09\\x08\")");
  assert_contains(got, "name \"pg\\x7f\\x01:0\"");
  assert_contains(got, "at step\\xc2\\x9b5m\\x1b (lib\\x1b]0;title\\x07.so+0x1234)\n");
  assert_contains(got, "rank 0 on node\\x1b[2J-a\\x0d pid 1000");
  free(got);
  free(want);

  int st;
  char *s = run_cli((const char *[]){"analyze", controls_dir, NULL}, &st);
  if (!s) return;
  assert_int_equal(st, 1);
  assert_no_controls("ncclspy analyze", s);
  assert_no_forged_line("ncclspy analyze", s);
  assert_contains(s, "eth0\\x1b[31mRED\\x0aFAKE LINE");
  assert_contains(s, "junk\\x1b[31m\\x0aFAKE LINE.ncclspy: not read"); /* a note */
  assert_contains(s, "node\\x1b[2J-a\\x0d.1000.rank0.ncclspy\n");    /* a path */
  free(s);
}

/* The HTML page (analyze --html): the same strings as text, control
 * bytes escaped as in the text report, and no byte of them markup. */
static void test_report_html_escapes(void **state) {
  (void)state;
  struct nsp_job *job = job_of(&controls);
  struct capture c;
  cap_open(&c);
  assert_int_equal(nsp_report_html(job, c.f), 0);
  nsp_job_destroy(job);
  char *got = cap_take(&c);
  assert_no_controls("analyze --html", got);
  assert_contains(got, "eth0\\x1b[31mRED\\x0aFAKE LINE");
  assert_contains(got, "(&quot;reset\\x0a[2] forged finding\\x09\\x08&quot;)");
  assert_contains(got, "rank 0 on node\\x1b[2J-a\\x0d pid 1000");
  free(got);
}

static char *html_of(const char *s, size_t n) {
  struct capture c;
  cap_open(&c);
  assert_int_equal(nsp_put_html(c.f, s, n), 0);
  return cap_take(&c);
}

static void test_put_html(void **state) {
  (void)state;
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"caf\xc3\xa9 & <script>alert('x')</script> \"q\"",
       "caf\xc3\xa9 &amp; &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &quot;q&quot;"},
      {"a\nb\033[0m\x7f csi\xc2\x9b", "a\\x0ab\\x1b[0m\\x7f csi\\xc2\\x9b"},
      {"bad \xff<\xc2", "bad \xef\xbf\xbd&lt;\xef\xbf\xbd"}, /* invalid UTF-8: U+FFFD, as in JSON */
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *o = html_of(cases[i].in, SIZE_MAX);
    assert_string_equal(o, cases[i].want);
    free(o);
  }
  char *o = html_of("<b>x", 2); /* n bytes only */
  assert_string_equal(o, "&lt;b");
  free(o);
  o = html_of(NULL, SIZE_MAX);
  assert_string_equal(o, "");
  free(o);
}

static void test_perf_text_escapes(void **state) {
  (void)state;
  struct plain_strs ps;
  plain_strs(&ps, &controls);
  char *got = text_of(&controls, W_PERF), *want = text_of(&ps.s, W_PERF);
  plain_free(&ps);
  assert_escaped_like("perf", got, want);
  assert_contains(got, "name \"pg\\x7f\\x01:0\")\n");
  assert_contains(got, "rank 0 (node\\x1b[2J-a\\x0d pid 1000)");
  free(got);
  free(want);

  int st;
  char *s = run_cli((const char *[]){"perf", controls_dir, NULL}, &st);
  if (!s) return;
  assert_int_equal(st, 0);
  assert_no_controls("ncclspy perf", s);
  assert_contains(s, "rank 0 (node\\x1b[2J-a\\x0d pid 1000)");
  free(s);
}

/* dump's text: every string quoted and escaped, environment names too. */
static void test_dump_text_escapes(void **state) {
  (void)state;
  struct plain_strs ps;
  plain_strs(&ps, &controls);
  char dir[300], path0[600];
  snprintf(dir, sizeof dir, "%s/d", tmpdir);
  char *out[2];
  for (int k = 0; k < 2; k++) { /* the same path both times */
    assert_int_equal(mkdir(dir, 0755), 0);
    write_traces(k ? &ps.s : &controls, dir, path0, sizeof path0);
    struct capture c;
    cap_open(&c);
    FILE *err = fopen("/dev/null", "w");
    assert_non_null(err);
    assert_int_equal(nsp_dump_file(path0, 0, c.f, err), 0);
    fclose(err);
    out[k] = cap_take(&c);
    nsp_case_rmdir(dir);
  }
  plain_free(&ps);
  assert_escaped_like("dump", out[0], out[1]);
  assert_contains(out[0], " NCCL_X\\x1b[0mY=\"1\"");
  free(out[0]);
  free(out[1]);

  int st;
  char *s = run_cli((const char *[]){"dump", controls_path0, NULL}, &st);
  if (!s) return;
  assert_int_equal(st, 0);
  assert_no_controls("ncclspy dump", s);
  assert_contains(s, " NCCL_X\\x1b[0mY=\"1\"");
  free(s);
}

/* Printable strings come out as they are (the golden reports check whole
 * reports): UTF-8 text, quotes and backslashes outside quotes; inside
 * quotes (communicator names, NCCL's error text) quotes and backslashes
 * are escaped, as dump does. */
static void test_plain_text(void **state) {
  (void)state;
  static const struct strs normal = {
      .host = "n\xc5\x93ud-\xc3\xa9t\xc3\xa9",
      .ifname = "eth0,ib\\0",
      .setting = "NCCL_ALGO",
      .comm_name = "pg \"main\"",
      .last_error = "it said \"no\" \\ twice",
      .module = "/opt/lib.so",
      .symbol = "f",
      .nccl_path = "/usr/lib/libnccl.so.2",
      .launcher = "",
      .gpu_name = "H100",
  };
  char *got = text_of(&normal, W_REPORT);
  assert_contains(got, "n\xc5\x93ud-\xc3\xa9t\xc3\xa9 pid 1000");
  assert_contains(got, "eth0,ib\\0");
  /* in quotes, quotes and backslashes are escaped as dump does */
  assert_contains(got, "name \"pg \\\"main\\\"\"");
  assert_contains(got, "(\"it said \\\"no\\\" \\\\ twice\")");
  free(got);
}

/* ---- the shared helpers -------------------------------------------------- */

static char *escaped(const char *s, size_t n, int flags) {
  struct capture c;
  cap_open(&c);
  nsp_put_escaped(c.f, s, n, flags);
  char *o = cap_take(&c);
  assert_int_equal(strlen(o), nsp_escaped_len(s, n, flags));
  return o;
}

static void test_put_escaped(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int flags;
    const char *want;
  } cases[] = {
      {"plain text, caf\xc3\xa9", 0, "plain text, caf\xc3\xa9"},
      {"a\nb\tc\rd\033[0m\x7f", 0, "a\\x0ab\\x09c\\x0dd\\x1b[0m\\x7f"},
      {"csi\xc2\x9b" "1m nel\xc2\x85 nbsp\xc2\xa0", 0, "csi\\xc2\\x9b1m nel\\xc2\\x85 nbsp\xc2\xa0"},
      {"lone \xc2 and \x9b", 0, "lone \xc2 and \x9b"}, /* not C1 controls: as they are */
      {"q\"b\\", 0, "q\"b\\"},
      {"q\"b\\\n", NSP_ESC_QUOTED, "q\\\"b\\\\\\x0a"},
      {"", 0, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *o = escaped(cases[i].in, SIZE_MAX, cases[i].flags);
    assert_string_equal(o, cases[i].want);
    free(o);
  }
  /* n bytes only, and a C1 pair cut by n is not read past it */
  char *o = escaped("ab\ncd", 3, 0);
  assert_string_equal(o, "ab\\x0a");
  free(o);
  o = escaped("x\xc2\x9b", 2, 0);
  assert_string_equal(o, "x\xc2");
  free(o);
  o = escaped(NULL, SIZE_MAX, 0);
  assert_string_equal(o, "");
  free(o);
}

static void test_utf8_valid(void **state) {
  (void)state;
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"ascii", "ascii"},
      {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xed\x9f\xbf", /* é € 😀 U+10FFFF U+D7FF */
       "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xed\x9f\xbf"},
      {"caf\xe9", "caf" FFFD},
      {"\xc0\xaf", FFFD FFFD},                       /* overlong '/' */
      {"\xe0\x80\xaf", FFFD FFFD FFFD},              /* overlong, 3 bytes */
      {"\xed\xa0\x80", FFFD FFFD FFFD},              /* a surrogate */
      {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},     /* above U+10FFFF */
      {"\xf5\xff\xfe", FFFD FFFD FFFD},              /* never in UTF-8 */
      {"\x80x\xbf", FFFD "x" FFFD},                  /* lone continuation bytes */
      {"ab\xe2\x82", "ab" FFFD FFFD},                /* cut at the end */
      {"\xe2\x82x\xc3", FFFD FFFD "x" FFFD},         /* cut in the middle, then at the end */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *tmp = (char *)1;
    const char *v = nsp_utf8_valid(cases[i].in, &tmp);
    assert_non_null(v);
    assert_string_equal(v, cases[i].want);
    assert_utf8("nsp_utf8_valid", v);
    if (!strcmp(cases[i].in, cases[i].want)) {
      assert_ptr_equal(v, cases[i].in); /* valid: no copy */
      assert_null(tmp);
    } else {
      assert_ptr_equal(v, tmp);
    }
    free(tmp);
  }
  char *tmp;
  assert_string_equal(nsp_utf8_valid(NULL, &tmp), "");
  assert_null(tmp);
  json_object *o = json_object_new_object();
  assert_int_equal(nsp_json_add(o, "k\xe9y", nsp_json_string("v\xe9")), 0);
  assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"k" FFFD "y\":\"v" FFFD "\"}");
  json_object_put(o);
}

static int setup_dirs(void **state) {
  (void)state;
  snprintf(latin1_dir, sizeof latin1_dir, "%s/tr\xe9" "ces", tmpdir);
  if (mkdir(latin1_dir, 0755) < 0) return -1;
  write_traces(&latin1, latin1_dir, latin1_path0, sizeof latin1_path0);
  snprintf(controls_dir, sizeof controls_dir, "%s/t", tmpdir);
  if (mkdir(controls_dir, 0755) < 0) return -1;
  write_traces(&controls, controls_dir, controls_path0, sizeof controls_path0);
  char junk[600];
  snprintf(junk, sizeof junk, "%s/junk\033[31m\nFAKE LINE.ncclspy", controls_dir);
  FILE *f = fopen(junk, "w");
  if (!f) return -1;
  fputs("not a trace", f);
  return fclose(f);
}

static int teardown_dirs(void **state) {
  (void)state;
  nsp_case_rmdir(latin1_dir);
  nsp_case_rmdir(controls_dir);
  return 0;
}

/* C++ names as the text report shows them: what a person needs (the
 * qualified function), not libtorch's 1,000-character template soup. */
static void test_short_function(void **state) {
  (void)state;
  char b[160];
  struct {
    const char *in, *want;
  } cases[] = {
      {"c10d::ProcessGroupNCCL::collective<c10d::ProcessGroupNCCL::allreduce_impl(at::Tensor&, char const*, "
       "c10d::AllreduceOptions const&)::{lambda(at::Tensor&, at::Tensor&, ncclComm*, c10::cuda::CUDAStream&)#1}>"
       "(at::Tensor&, at::Tensor&) [clone .constprop.0]",
       "c10d::ProcessGroupNCCL::collective"},
      {"c10d::ops::(anonymous namespace)::allreduce_CUDA(c10::ArrayRef<at::Tensor>, long)",
       "c10d::ops::(anonymous namespace)::allreduce_CUDA"},
      {"std::function<void ()>::operator()() const", "std::function::operator() const"},
      {"bool operator< <int>(int const&, int const&)", "bool operator<"},
      {"std::vector<int>::operator[](unsigned long)", "std::vector::operator[]"},
      {"nsp_cases_allreduce", "nsp_cases_allreduce"},
      {"main", "main"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *got = nsp_short_function(cases[i].in, b, sizeof b);
    print_message("# %s -> %s\n", cases[i].in, got);
    assert_string_equal(got, cases[i].want);
  }
  /* Cut at cap - 1 bytes. */
  char small[8];
  assert_string_equal(nsp_short_function("abcdefghijkl", small, sizeof small), "abcdefg");
}

int main(void) {
  if (nsp_case_mkdtemp(tmpdir, sizeof tmpdir) < 0) return 2;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_analyze_json_utf8),
      cmocka_unit_test(test_perf_json_utf8),
      cmocka_unit_test(test_dump_json_utf8),
      cmocka_unit_test(test_report_text_escapes),
      cmocka_unit_test(test_report_html_escapes),
      cmocka_unit_test(test_put_html),
      cmocka_unit_test(test_perf_text_escapes),
      cmocka_unit_test(test_dump_text_escapes),
      cmocka_unit_test(test_plain_text),
      cmocka_unit_test(test_put_escaped),
      cmocka_unit_test(test_utf8_valid),
      cmocka_unit_test(test_short_function),
  };
  int ret = cmocka_run_group_tests(tests, setup_dirs, teardown_dirs);
  nsp_case_rmdir(tmpdir);
  return ret;
}
