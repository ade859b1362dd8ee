/* ncclspy_main.c - the `ncclspy` command: subcommands over the analyzer
 * library and its front ends.  Exit status: 0 clean, 1 findings (analyze)
 * or a damaged file (dump), 2 usage error, unreadable input, or a report
 * that could not be written, 3 no finding but a process that ended without
 * a clean exit or an untraced libnccl (analyze). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsp_analyze.h"
#include "nsp_config.h"
#include "nsp_escape.h"
#include "nsp_export.h"
#include "ncclspy/trace.h"
#include "nsp_report.h"
#include "nsp_progress.h"
#include "nsp_run.h"
#include "nsp_watch.h"

/* Exit statuses (docs/REPORT.md): UNSEEN, analyze with no finding whose
 * traces show a process that ended without a clean exit or loaded a
 * libnccl the shim does not interpose: what ncclspy could not see. */
enum { NSP_EXIT_CLEAN = 0, NSP_EXIT_FINDINGS = 1, NSP_EXIT_USAGE = 2, NSP_EXIT_UNSEEN = 3 };

static const char nsp_usage_main[] =
    "usage: ncclspy COMMAND [OPTIONS] ARGS...\n"
    "\n"
    "Reads the per-process traces that libncclspy.so wrote for a job and says\n"
    "which NCCL call went wrong first, on which ranks, and why.\n"
    "\n"
    "commands:\n"
    "  analyze [--json|--html] [-o FILE] [--run ID|all] DIR|FILE...  merge the traces, check them, report\n"
    "  perf [--json] [-o FILE] [--run ID|all] [--threads N] DIR|FILE...  GPU times, bandwidths, arrival spread,\n"
    "                                          stragglers\n"
    "  dump [--json] FILE...                   print every record of trace files\n"
    "  export --perfetto [-o FILE] [--from T] [--to T] [--comm ID,..] [--ranks R-R,..] DIR|FILE...\n"
    "                                          the calls as a timeline for ui.perfetto.dev\n"
    "  run [--no-analyze] [-d DIR] -- COMMAND...  run COMMAND under the shim, then analyze\n"
    "  shim-path                               print libncclspy.so's path (for LD_PRELOAD)\n"
    "  watch [--interval S] [--hang-after S] DIR  analyse a running job's traces as it runs\n"
    "  help [COMMAND]                          this text, or a command's\n"
    "\n"
    "options:\n"
    "  -h, --help       this text\n"
    "  -V, --version    print the version\n"
    "\n"
    "Run `ncclspy help analyze` for the checks and exit status.\n";

static const char nsp_usage_analyze[] =
    "usage: ncclspy analyze [--json|--html] [-o FILE] [--run ID|all] [--threads N] [--full-read] DIR|FILE...\n"
    "\n"
    "Loads every *.ncclspy file in each DIR (not recursive) and each FILE, each\n"
    "file once (a copy of a trace too); *.ncclspy.ring files are read by their trace.\n"
    "Unifies communicators across ranks, then runs these rules, in order:\n"
    "@RULES@"
    "Findings are listed likely cause first.  Damaged or cut files are read up to\n"
    "the damage and named under \"Notes\" with the byte offset.\n"
    "\n"
    "options:\n"
    "  --json           the report as one JSON object (schema: docs/REPORT.md)\n"
    "  --html           the report as one self-contained HTML page (no script, nothing\n"
    "                   fetched): summary, findings, a swimlane of the calls around\n"
    "                   the first finding, how each process ended, environment per rank\n"
    "  -o, --output FILE  write the report to FILE instead of standard output\n"
    "  --run ID|all     traces of several runs (a reused directory, restarts): the\n"
    "                   newest run is analysed unless ID names another (its\n"
    "                   identity, a unique prefix of it or of one of its '/' parts,\n"
    "                   or its number, 1 the newest, as the first note lists them);\n"
    "                   all: every trace as one job\n"
    "  --threads N      threads that decode traces, 1 to 64 (default: one less than\n"
    "                   the CPUs it may run on, at most 4; 1 on 2 CPUs); the report\n"
    "                   is the same for every N\n"
    "  --full-read      decode every record of every trace, not only the frames the\n"
    "                   traces' indexes show are needed; the report is the same\n"
    "  -h, --help       this text\n"
    "\n"
    "exit status: 0 no findings (processes still running included), 1 findings,\n"
    "2 usage error, no readable trace (or record), or -o naming an input trace,\n"
    "3 no findings, but a process ended without a clean exit (killed, crashed,\n"
    "_exit), loaded a libnccl that ncclspy does not trace, or lost records\n"
    "(dropped, a cut file): what the traces do not show.\n";

static const char nsp_usage_perf[] =
    "usage: ncclspy perf [--json] [-o FILE] [--run ID|all] [--threads N] [--full-read] DIR|FILE...\n"
    "\n"
    "Per communicator, one line per op, size, count, type, redop and root, as\n"
    "nccl-tests prints them (size in bytes and count in elements, per rank and\n"
    "per call): calls and timed calls (summed over the ranks), GPU duration\n"
    "p50/p99 from completion records with GPU timing, and algbw/busbw as\n"
    "nccl-tests computes them.  Per communicator: the spread of\n"
    "arrival times per collective (wall clock, aligned by each trace's clock\n"
    "pair) and the ranks that arrive last most often.  Notes at the end name\n"
    "what could not be read, which the figures leave out.\n"
    "\n"
    "options:\n"
    "  --json           one JSON object (schema: docs/REPORT.md)\n"
    "  -o, --output FILE  write to FILE instead of standard output\n"
    "  --run ID|all     which run of the traces (as for analyze; default the newest)\n"
    "  --threads N      threads, 1 to 64: the analysis's as for analyze; then N threads\n"
    "                   each read and fold whole traces for the figures (default: the\n"
    "                   CPUs, at most 4); the figures are the same for every N\n"
    "  --full-read      decode every record (as for analyze)\n"
    "  -h, --help       this text\n"
    "\n"
    "exit status: 0 figures written, 2 usage error or no readable trace.\n";

static const char nsp_usage_dump[] =
    "usage: ncclspy dump [--json] FILE...\n"
    "\n"
    "Prints the header and every record of each trace file, one per line; times\n"
    "are relative to the header (t=+12.345678ms).  With --json, one JSON object\n"
    "per line with every field.\n"
    "\n"
    "exit status: 0 read cleanly, 1 a file was damaged or cut (records before the\n"
    "damage are printed), 2 usage error or a file that is not a trace.\n";

static const char nsp_usage_export[] =
    "usage: ncclspy export --perfetto [-o FILE] [--from T] [--to T] [--comm ID[,ID..]]\n"
    "                      [--ranks R[-R][,..]] [--run ID|all] [--threads N] DIR|FILE...\n"
    "\n"
    "Writes the job's collectives and send/recvs as a Chrome trace event file\n"
    "(JSON) that ui.perfetto.dev and chrome://tracing open: one process per rank,\n"
    "per communicator and stream a track of CPU slices (entry to return) and one\n"
    "of GPU slices (completion's GPU start to end), named as the report names the\n"
    "call (\"all-reduce seq 5\"); a call that never returned, or never completed,\n"
    "runs to the end of its trace; arrows join each collective's slices, from\n"
    "the rank that entered it first; an instant marks each finding on the ranks\n"
    "it names.  Times are from the job's start.\n"
    "\n"
    "options:\n"
    "  --perfetto       the format (the only one so far)\n"
    "  -o, --output FILE  write to FILE; without -o, or with -o -, standard output\n"
    "  --from T, --to T   only calls that overlap [T, T') after the job's start:\n"
    "                   12.5s, 300ms, 40us, 100ns, or seconds (1.5)\n"
    "  --comm ID,..     only these communicators: an id or a prefix of it as the\n"
    "                   report prints it (57a1d0c0), or a commName\n"
    "  --ranks R-R,..   only these job ranks (0-3,8)\n"
    "  --run ID|all     which run of the traces (as for analyze; default the newest)\n"
    "  --threads N      threads that read traces (as for analyze)\n"
    "  -h, --help       this text\n"
    "\n"
    "A job of more than 256 ranks or about 2 million events, exported with none\n"
    "of --from, --to, --comm, --ranks, is cut to a window around the first\n"
    "finding (the last call without one): 10 s, or shorter so that\n"
    "about 2 million events fit; standard error says which.\n"
    "\n"
    "exit status: 0 written, 2 usage error, no readable trace, a --comm or --ranks\n"
    "that names nothing, or the file could not be written.\n";

/* Writes words to out wrapped at 80 columns, lines after the first
 * indented by `indent` spaces. */
static void put_wrapped(FILE *out, const char *words, int col, int indent) {
  for (const char *p = words; *p;) {
    size_t n = strcspn(p, " ");
    if (col > indent && col + 1 + (int)n > 79) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      col++;
    }
    fprintf(out, "%.*s", (int)n, p);
    col += (int)n;
    p += n;
    while (*p == ' ') p++;
  }
  fputc('\n', out);
}

/* Writes a command's help; "@RULES@" stands for the analyzer's rules
 * (nsp_analyze_rule), one "  - name: what it checks" each. */
static void put_usage(FILE *out, const char *usage) {
  const char *at = strstr(usage, "@RULES@");
  if (!at) {
    fputs(usage, out);
    return;
  }
  fprintf(out, "%.*s", (int)(at - usage), usage);
  const char *name, *checks;
  for (size_t i = 0; (name = nsp_analyze_rule(i, &checks)) != NULL; i++) {
    fprintf(out, "  - %s:", name);
    put_wrapped(out, checks, 5 + (int)strlen(name), 4);
  }
  fputs(at + strlen("@RULES@"), out);
}

/* Prints "ncclspy: <what><arg>" and where to find help. */
static int usage_error(const char *cmd, const char *what, const char *arg) {
  fprintf(stderr, "ncclspy: %s%s", what, arg ? arg : "");
  fprintf(stderr, "\nTry 'ncclspy help%s%s'.\n", cmd ? " " : "", cmd ? cmd : "");
  return NSP_EXIT_USAGE;
}

/* What each option that takes an argument needs, in its missing-argument
 * message ("option '--run' needs a run's identity, ..."): one row per
 * such option of any command. */
static const struct {
  const char *name; /* its long name */
  int letter;       /* its short letter; 0 none */
  const char *needs;
} nsp_opt_args[] = {
    {"output", 'o', "a file name"},
    {"run", 0, "a run's identity, its number, or all"},
    {"from", 0, "a time after the job's start (12.5s, 300ms)"},
    {"to", 0, "a time after the job's start (12.5s, 300ms)"},
    {"comm", 0, "communicator ids, prefixes or names, separated by commas"},
    {"ranks", 0, "job ranks such as 0-3,8"},
    {"threads", 0, "a number of threads from 1 to 64"},
};

/* "ncclspy[ CMD]: option 'OPT' needs WHAT" (OPT: "--run" or "-o", as
 * given) and where to find help. */
static int missing_arg(const char *cmd, const char *opt) {
  const char *needs = "an argument";
  for (size_t i = 0; i < sizeof nsp_opt_args / sizeof *nsp_opt_args; i++)
    if (opt[0] == '-' && (opt[1] == '-' ? !strcmp(opt + 2, nsp_opt_args[i].name)
                                        : opt[1] && !opt[2] && opt[1] == nsp_opt_args[i].letter))
      needs = nsp_opt_args[i].needs;
  fprintf(stderr, "ncclspy%s%s: option '%s' needs %s", cmd ? " " : "", cmd ? cmd : "", opt, needs);
  fprintf(stderr, "\nTry 'ncclspy help%s%s'.\n", cmd ? " " : "", cmd ? cmd : "");
  return NSP_EXIT_USAGE;
}

/* After getopt_long (run with opterr 0 and ":" first in its optstring)
 * returned '?' or ':': "ncclspy[ CMD]: unknown option '--x'" or "...:
 * option '-o' needs a file name" (missing_arg), and where to find help.
 * One message, never getopt's own beside ours, nor the whole usage. */
static int option_error(const char *cmd, int c, char **argv) {
  char opt[64];
  const char *prev = optind > 0 ? argv[optind - 1] : "";
  if (!strncmp(prev, "--", 2)) snprintf(opt, sizeof opt, "%.*s", (int)strcspn(prev, "="), prev);
  else if (optopt) snprintf(opt, sizeof opt, "-%c", optopt);
  else snprintf(opt, sizeof opt, "%s", prev);
  if (c == ':') return missing_arg(cmd, opt);
  fprintf(stderr, "ncclspy%s%s: unknown option '%s'", cmd ? " " : "", cmd ? cmd : "", opt);
  fprintf(stderr, "\nTry 'ncclspy help%s%s'.\n", cmd ? " " : "", cmd ? cmd : "");
  return NSP_EXIT_USAGE;
}

/* --threads N: 1..NSP_JOB_THREADS_MAX in decimal; -1 anything else. */
static int parse_threads(const char *arg) {
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  return *arg >= '0' && *arg <= '9' && !*end && !errno && v >= 1 && v <= NSP_JOB_THREADS_MAX ? (int)v : -1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether `output`, which does not exist, would be created as `path`
 * (the same directory, by identity, and the same file name). */
static int same_place_new(const char *output, const char *path) {
  char *a = strdup(output), *b = strdup(path);
  int same = 0;
  if (a && b) {
    char *abase = strdup(basename(a)), *bbase = strdup(basename(b));
    struct stat ad, bd;
    if (abase && bbase && !strcmp(abase, bbase) && stat(dirname(a), &ad) == 0 && stat(dirname(b), &bd) == 0)
      same = same_file(&ad, &bd);
    free(abase);
    free(bbase);
  }
  free(a);
  free(b);
  return same;
}

/* Whether writing the report to `output` would overwrite an input: a
 * file named on the command line (or its .ring), or a trace (or .ring)
 * inside a directory named there.  Prints why and returns 1. */
static int output_clobbers_input(const char *output, int argc, char **argv, int first) {
  struct stat os, ds;
  int exists = stat(output, &os) == 0;
  char *copy = strdup(output);
  if (!copy) return 0;
  int dir_ok = stat(dirname(copy), &ds) == 0;
  free(copy);
  int trace_name = ends_with(output, ".ncclspy") || ends_with(output, ".ncclspy.ring");
  for (int i = first; i < argc; i++) {
    struct stat is;
    if (stat(argv[i], &is) < 0) continue;
    int hit = exists && same_file(&os, &is);
    if (!hit && S_ISDIR(is.st_mode)) hit = dir_ok && trace_name && same_file(&ds, &is);
    if (!hit && S_ISREG(is.st_mode) && ends_with(output, ".ring")) {
      /* Its .ring, there already or not yet (a crash may make it later,
       * and the next analyze would read the report as the ring). */
      char ring[4200];
      struct stat rs;
      snprintf(ring, sizeof ring, "%s.ring", argv[i]);
      hit = exists ? stat(ring, &rs) == 0 && same_file(&os, &rs) : same_place_new(output, ring);
    }
    if (hit) {
      fprintf(stderr, "ncclspy: -o %s would overwrite the input trace %s%s; write the report elsewhere\n", output,
              argv[i], S_ISDIR(is.st_mode) ? " (a trace directory)" : "");
      return 1;
    }
  }
  return 0;
}

/* After loading: whether `output` is, through any link (symbolic or
 * hard), one of the trace files read or its .ring.  The name checks of
 * output_clobbers_input miss a link that names a trace under another
 * name; the files' identities (device, inode) do not.  Prints why and
 * returns 1. */
static int output_is_loaded_trace(const char *output, const struct nsp_job *job) {
  struct stat os;
  if (stat(output, &os) != 0) return 0; /* nothing there yet: nothing to overwrite */
  for (size_t i = 0; i < nsp_job_ntraces(job); i++) {
    const char *path = nsp_job_trace(job, i)->path;
    char ring[4200];
    struct stat ts;
    snprintf(ring, sizeof ring, "%s.ring", path);
    if ((stat(path, &ts) == 0 && same_file(&os, &ts)) || (stat(ring, &ts) == 0 && same_file(&os, &ts))) {
      fprintf(stderr, "ncclspy: -o %s would overwrite the input trace %s (the same file through a link); "
                      "write the report elsewhere\n", output, path);
      return 1;
    }
  }
  return 0;
}

static FILE *open_output(const char *output) {
  FILE *out = fopen(output, "w");
  if (!out) fprintf(stderr, "ncclspy: cannot write %s: %s\n", output, strerror(errno));
  return out;
}

/* Loads the paths of argv[optind..] into job: warnings for unreadable
 * ones.  Returns 0 when some trace was read, else an exit status, with
 * *why what failed, in a few words (for --json's error object). */
static int load_paths(struct nsp_job *job, int argc, char **argv, int first, const char **why, char *whybuf,
                      size_t whylen) {
  /* The warnings, for the error object too: "no readable trace: W; W". */
  size_t wl = (size_t)snprintf(whybuf, whylen, "no readable trace");
  const char *sep = ": ";
  /* A crash-ring sidecar is read with its trace; a shell glob names both. */
  int n = 0;
  const char **paths = calloc((size_t)(argc - first) + 1, sizeof *paths);
  int nonrings = 0;
  for (int i = first; i < argc; i++) nonrings += !ends_with(argv[i], ".ncclspy.ring");
  for (int i = first; paths && i < argc; i++) {
    if (!ends_with(argv[i], ".ncclspy.ring")) {
      paths[n++] = argv[i];
    } else if (access(argv[i], F_OK) != 0) {
      fprintf(stderr, "ncclspy: warning: %s: %s\n", argv[i], strerror(errno));
    } else if (nonrings) {
      /* Read with its trace: said when the trace is not named too. */
      size_t tl = strlen(argv[i]) - strlen(".ring");
      int named = 0;
      for (int j = first; j < argc && !named; j++) named = strlen(argv[j]) == tl && !strncmp(argv[j], argv[i], tl);
      if (!named)
        fprintf(stderr, "ncclspy: warning: %s is a crash ring, read along with its trace: name the trace (%.*s) "
                        "or its directory; not read\n", argv[i], (int)tl, argv[i]);
    }
  }
  int *results = calloc(n ? (size_t)n : 1, sizeof *results);
  char **errors = calloc(n ? (size_t)n : 1, sizeof *errors);
  /* Read together: the files on the job's threads (--threads). */
  int r = paths && results && errors ? nsp_job_add_paths(job, (size_t)n, paths, results, errors) : NSP_AN_ENOMEM;
  for (int k = 0; k < n && r == 0; k++) {
    char w[600] = "";
    if (results[k] == NSP_AN_EREAD || (results[k] == 0 && errors[k])) snprintf(w, sizeof w, "%s", errors[k] ? errors[k] : "");
    else if (results[k] == 0) snprintf(w, sizeof w, "%s: no *.ncclspy trace in it", paths[k]);
    if (*w) {
      fprintf(stderr, "ncclspy: warning: %s\n", w);
      if (wl < whylen) wl += (size_t)snprintf(whybuf + wl, whylen - wl, "%s%s", sep, w);
      sep = "; ";
    }
  }
  for (int k = 0; errors && k < n; k++) free(errors[k]);
  free(errors);
  free(results);
  free(paths);
  if (r == NSP_AN_ENOMEM) {
    fprintf(stderr, "ncclspy: out of memory\n");
    *why = "out of memory";
    return NSP_EXIT_USAGE;
  }
  if (!nsp_job_ntraces(job)) {
    int rings = 0, others = 0;
    for (int i = first; i < argc; i++) ends_with(argv[i], ".ncclspy.ring") ? rings++ : others++;
    if (rings && !others && access(argv[first], F_OK) == 0) {
      fprintf(stderr, "ncclspy: %s is a crash ring, read along with its trace: name the trace (%.*s) or its "
                      "directory\n", argv[first], (int)(strlen(argv[first]) - 5), argv[first]);
      *why = "no readable trace: a crash ring is read along with its trace; name the trace or its directory";
      return NSP_EXIT_USAGE;
    }
    *why = whybuf;
    fprintf(stderr, "ncclspy: no readable trace");
    for (size_t i = 0; i < nsp_job_nnotes(job); i++) fprintf(stderr, "%s %s", i ? ";" : ":", nsp_job_note(job, i));
    fprintf(stderr, "\n");
    return NSP_EXIT_USAGE;
  }
  uint64_t records = 0;
  for (size_t i = 0; i < nsp_job_ntraces(job); i++) records += nsp_job_trace(job, i)->records;
  if (!records) {
    *why = "no readable record in any trace, so there is nothing to analyse";
    fprintf(stderr, "ncclspy: none of the %zu traces has a readable record, so there is nothing to analyse",
            nsp_job_ntraces(job));
    for (size_t i = 0; i < nsp_job_nnotes(job); i++) fprintf(stderr, "\n  %s", nsp_job_note(job, i));
    fprintf(stderr, "\n");
    return NSP_EXIT_USAGE;
  }
  return 0;
}

/* What `analyze` and `perf` differ in; the rest of their run is one. */
struct report_cmd {
  const char *name;  /* "analyze" */
  const char *usage; /* its help text */
  const char *needs; /* the usage error when no path is given */
  int perf;          /* also compute the performance figures */
  int (*text)(const struct nsp_job *job, FILE *out);
  int (*json)(const struct nsp_job *job, FILE *out);
  int (*html)(const struct nsp_job *job, FILE *out); /* NULL: no --html */
  const char *what;  /* "the report": in "could not write the report to X" */
};

static const struct report_cmd nsp_cmd_analyze = {
    "analyze", nsp_usage_analyze, "analyze needs a directory or trace file", 0,
    nsp_report_text, nsp_report_json, nsp_report_html, " the report"};
static const struct report_cmd nsp_cmd_perf = {
    "perf", nsp_usage_perf, "perf needs a directory or trace file", 1,
    nsp_report_perf_text, nsp_report_perf_json, NULL, ""};

/* --json's answer when there is no report: {"error": why, "exit_status":
 * status, "traces": N, "notes": [...]} on standard output, so that a
 * script reading it gets JSON whatever happened (the message also went to
 * standard error).  job may be NULL. */
static void json_error(const char *why, int status, const struct nsp_job *job) {
  json_object *o = json_object_new_object();
  if (!o) return;
  json_object_object_add(o, "error", nsp_json_string(why));
  json_object_object_add(o, "exit_status", json_object_new_int(status));
  json_object_object_add(o, "traces", json_object_new_int64(job ? (int64_t)nsp_job_ntraces(job) : 0));
  json_object *notes = json_object_new_array();
  for (size_t i = 0; notes && job && i < nsp_job_nnotes(job); i++)
    json_object_array_add(notes, nsp_json_string(nsp_job_note(job, i)));
  json_object_object_add(o, "notes", notes);
  nsp_report_json_emit(o, stdout);
}

/* analyze's exit status for an analysed job whose report was written:
 * findings, else what the traces could not see, else clean. */
static int analyze_status(const struct nsp_job *job) {
  const struct nsp_job_caveats *cv = nsp_job_caveats(job);
  return nsp_job_nfindings(job)                          ? NSP_EXIT_FINDINGS
         : cv->unclean || cv->libnccl || cv->incomplete ? NSP_EXIT_UNSEEN
                                                        : NSP_EXIT_CLEAN;
}

/* Ends the progress line (cleared) and detaches it from job, whose later
 * readings (the HTML swimlane, export) must not call into it; *p NULL. */
static void progress_stop(struct nsp_job *job, struct nsp_progress **p) {
  nsp_job_set_progress(job, NULL, NULL);
  nsp_progress_end(*p);
  *p = NULL;
}

/* What analyze, perf and export share before their analysis: a new job
 * (*jobp), the -o guard, the tests' fixed "now", the progress line on a
 * terminal (*progress, for the caller to end), the paths of
 * argv[first..] read and the run chosen.  Returns 0, or an exit status
 * with *why (for --json's error object) saying what failed. */
/* --full-read of analyze and perf. */
static int full_read_opt;

static int open_job(const char *cmd, const char *output, const char *run, int threads, int argc, char **argv,
                    int first,
                    struct nsp_job **jobp, struct nsp_progress **progress, const char **why, char *whybuf,
                    size_t whylen) {
  struct nsp_job *job = *jobp = nsp_job_create();
  if (!job) {
    fprintf(stderr, "ncclspy: out of memory\n");
    *why = "out of memory";
    return NSP_EXIT_USAGE;
  }
  if (output && output_clobbers_input(output, argc, argv, first)) {
    *why = "-o would overwrite an input trace";
    return NSP_EXIT_USAGE;
  }
  /* Tests fix the analysis's "now" (a live process is one heard from
   * lately); not a user setting. */
  const char *now = getenv("NSP_ANALYZE_NOW_NS");
  if (now && *now) {
    char *end;
    long long v = strtoll(now, &end, 10);
    if (*end || v <= 0 || nsp_job_set_now(job, v) < 0) {
      *why = "NSP_ANALYZE_NOW_NS is not a time in ns";
      return usage_error(cmd, *why, NULL);
    }
  }
  if (threads) nsp_job_set_threads(job, threads); /* checked by parse_threads */
  if (full_read_opt) nsp_job_set_full_read(job, 1);
  /* On a terminal, after a second: files read, records per second; the
   * line is cleared before anything else is said. */
  *progress = nsp_progress_start(cmd);
  nsp_job_set_progress(job, nsp_progress_update, *progress);
  int status = load_paths(job, argc, argv, first, why, whybuf, whylen);
  if (status) return status;
  if (run && nsp_job_select_run(job, run) < 0) {
    fprintf(stderr, "ncclspy: out of memory\n");
    *why = "out of memory";
    return NSP_EXIT_USAGE;
  }
  return 0;
}

/* `analyze` and `perf`: options, loading, analysis, the report.  Exit
 * status: perf NSP_EXIT_CLEAN, analyze NSP_EXIT_FINDINGS when it found
 * something; NSP_EXIT_USAGE on any failure. */
static int cmd_report(const struct report_cmd *k, int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"html", no_argument, NULL, 'H'},
      {"output", required_argument, NULL, 'o'},
      {"run", required_argument, NULL, 'r'},
      {"threads", required_argument, NULL, 'T'},
      {"full-read", no_argument, NULL, 'F'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int json = 0, html = 0, threads = 0, c;
  const char *output = NULL, *run = NULL;
  optind = 0; /* glibc: re-initialise for the subcommand's argv */
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'j': json = 1; break;
      case 'H':
        if (!k->html) return option_error(k->name, '?', argv); /* perf: no HTML page */
        html = 1;
        break;
      case 'o': output = optarg; break;
      case 'r':
        if (!*optarg) return missing_arg(k->name, "--run");
        run = optarg;
        break;
      case 'T':
        if ((threads = parse_threads(optarg)) < 0) return usage_error(k->name, "--threads takes a number from 1 to 64, not ", optarg);
        break;
      case 'F': full_read_opt = 1; break;
      case 'h': put_usage(stdout, k->usage); return NSP_EXIT_CLEAN;
      default: return option_error(k->name, c, argv);
    }
  }
  if (json && html) return usage_error(k->name, "--json and --html are two formats: give one", NULL);
  if (optind >= argc) return usage_error(k->name, k->needs, NULL);

  const char *why = NULL; /* what failed, when the report was not written */
  char whybuf[1024];
  struct nsp_progress *progress = NULL;
  struct nsp_job *job = NULL;
  int status = open_job(k->name, output, run, threads, argc, argv, optind, &job, &progress, &why, whybuf, sizeof whybuf);
  if (status) goto out;
  status = NSP_EXIT_USAGE;
  int r = nsp_job_analyze(job);
  if (r == NSP_AN_EINVAL) {
    fprintf(stderr, "ncclspy: %s\n", nsp_job_error(job));
    why = nsp_job_error(job); /* a --run that names no run, or several */
    goto out;
  }
  if (r == 0 && k->perf) r = nsp_job_perf(job);
  if (r < 0) {
    fprintf(stderr, "ncclspy: analysis failed: %s\n", nsp_an_strerror(r));
    snprintf(whybuf, sizeof whybuf, "analysis failed: %s", nsp_an_strerror(r));
    why = whybuf;
    goto out;
  }
  progress_stop(job, &progress); /* cleared before the report */
  FILE *out = stdout;
  if (output && output_is_loaded_trace(output, job)) {
    why = "-o would overwrite an input trace";
    goto out;
  }
  if (output && !(out = open_output(output))) {
    snprintf(whybuf, sizeof whybuf, "cannot write %s", output);
    why = whybuf;
    goto out;
  }
  r = json ? k->json(job, out) : html ? k->html(job, out) : k->text(job, out);
  if (out != stdout && fclose(out) != 0) r = -1;
  if (r < 0) {
    fprintf(stderr, "ncclspy: could not write%s to %s\n", k->what, output ? output : "standard output");
    /* Part of it may be out already: no second document after it. */
    why = NULL;
    goto out;
  }
  status = k->perf ? NSP_EXIT_CLEAN : analyze_status(job);
out:
  progress_stop(job, &progress);
  if (json && why) json_error(why, status, job);
  nsp_job_destroy(job);
  return status;
}

static int cmd_dump(int argc, char **argv) {
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int json = 0, c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
      case 'j': json = 1; break;
      case 'h': fputs(nsp_usage_dump, stdout); return NSP_EXIT_CLEAN;
      default: return option_error("dump", c, argv);
    }
  }
  if (optind >= argc) return usage_error("dump", "dump needs a trace file", NULL);
  int status = NSP_EXIT_CLEAN;
  for (int i = optind; i < argc; i++) {
    int r = nsp_dump_file(argv[i], json, stdout, stderr);
    if (r < 0) {
      fprintf(stderr, "ncclspy: could not write to standard output\n");
      return NSP_EXIT_USAGE;
    }
    if (r > status) status = r;
  }
  return status;
}

/* --ranks "0-3,8": the job ranks into *out (malloc'd), *n of them; -1
 * when the list does not parse or is too long. */
static int parse_ranks(const char *s, int **out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  const char *p = s;
  while (*p) {
    char *end;
    long lo = strtol(p, &end, 10), hi = lo;
    if (end == p || lo < 0 || lo > 1000000) return -1;
    p = end;
    if (*p == '-') {
      hi = strtol(p + 1, &end, 10);
      if (end == p + 1 || hi < lo || hi > 1000000) return -1;
      p = end;
    }
    if (*p && *p++ != ',') return -1;
    for (long r = lo; r <= hi; r++) {
      if (*n == cap) {
        int *v = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof *v);
        if (!v) return -1;
        *out = v;
      }
      (*out)[(*n)++] = (int)r;
    }
  }
  return *n ? 0 : -1;
}

/* --comm "57a1,default_pg:0": each item an id's hex prefix or a commName
 * naming exactly one communicator of the job (a name may name several:
 * all of them).  Returns 0, or prints why and returns -1. */
static int parse_comms(const struct nsp_job *job, const char *s, uint64_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t ncomms = nsp_job_ncomms(job);
  char *copy = strdup(s), *save = NULL;
  if (!copy || !(*out = malloc((ncomms ? ncomms : 1) * sizeof **out))) {
    free(copy);
    return -1;
  }
  int ret = 0;
  for (char *item = strtok_r(copy, ",", &save); item && !ret; item = strtok_r(NULL, ",", &save)) {
    size_t hits = 0;
    uint64_t hit = 0;
    for (size_t i = 0; i < ncomms; i++) {
      const struct nsp_comm_info *c = nsp_job_comm(job, i);
      char id[20];
      snprintf(id, sizeof id, "%016llx", (unsigned long long)c->id);
      int by_name = c->name[0] && !strcmp(c->name, item);
      if (!by_name && strncasecmp(id, item, strlen(item))) continue;
      if (by_name) {
        size_t k = 0;
        while (k < *n && (*out)[k] != c->id) k++;
        if (k == *n) (*out)[(*n)++] = c->id;
        hits = SIZE_MAX;
        continue;
      }
      if (hits != SIZE_MAX) {
        hits++;
        hit = c->id;
      }
    }
    if (hits == 1) {
      size_t k = 0;
      while (k < *n && (*out)[k] != hit) k++;
      if (k == *n) (*out)[(*n)++] = hit;
    } else if (hits != SIZE_MAX) {
      fprintf(stderr, "ncclspy export: --comm %s names %s communicator of the job (ncclspy analyze lists them)\n",
              item, hits ? "more than one" : "no");
      ret = -1;
    }
  }
  free(copy);
  if (!ret && !*n) {
    fprintf(stderr, "ncclspy export: --comm needs communicator ids or names (ncclspy analyze lists them)\n");
    ret = -1;
  }
  return ret;
}

/* `export --perfetto`: options, loading, analysis, the file. */
static int cmd_export(int argc, char **argv) {
  static const struct option opts[] = {
      {"perfetto", no_argument, NULL, 'p'},
      {"output", required_argument, NULL, 'o'},
      {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 't'},
      {"comm", required_argument, NULL, 'c'},
      {"ranks", required_argument, NULL, 'R'},
      {"run", required_argument, NULL, 'r'},
      {"threads", required_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int perfetto = 0, threads = 0, c;
  const char *output = NULL, *run = NULL, *from = NULL, *to = NULL, *comms = NULL, *ranks = NULL;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
      case 'p': perfetto = 1; break;
      case 'o': output = optarg; break;
      case 'f': from = optarg; break;
      case 't': to = optarg; break;
      case 'c': comms = optarg; break;
      case 'R': ranks = optarg; break;
      case 'r':
        if (!*optarg) return missing_arg("export", "--run");
        run = optarg;
        break;
      case 'T':
        if ((threads = parse_threads(optarg)) < 0) return usage_error("export", "--threads takes a number from 1 to 64, not ", optarg);
        break;
      case 'h': fputs(nsp_usage_export, stdout); return NSP_EXIT_CLEAN;
      default: return option_error("export", c, argv);
    }
  }
  if (!perfetto) return usage_error("export", "export needs a format: --perfetto", NULL);
  if (optind >= argc) return usage_error("export", "export needs a directory or trace file", NULL);
  if (output && !strcmp(output, "-")) output = NULL;
  int64_t from_rel = 0, to_rel = 0;
  if (from && nsp_export_parse_time(from, &from_rel) < 0)
    return usage_error("export", "--from takes a time such as 12.5s, 300ms or 1.5 (seconds), not ", from);
  if (to && nsp_export_parse_time(to, &to_rel) < 0)
    return usage_error("export", "--to takes a time such as 12.5s, 300ms or 1.5 (seconds), not ", to);
  if (from && to && to_rel <= from_rel) return usage_error("export", "--to must come after --from", NULL);
  struct nsp_export_opts eo;
  memset(&eo, 0, sizeof eo);
  int *rank_list = NULL;
  uint64_t *comm_list = NULL;
  if (ranks && parse_ranks(ranks, &rank_list, &eo.filter.nranks) < 0) {
    free(rank_list);
    return usage_error("export", "--ranks takes job ranks such as 0-3,8, not ", ranks);
  }
  eo.filter.ranks = rank_list;

  int status = NSP_EXIT_USAGE;
  const char *why = NULL;
  char whybuf[1024];
  struct nsp_progress *progress = NULL;
  struct nsp_job *job = NULL;
  if (open_job("export", output, run, threads, argc, argv, optind, &job, &progress, &why, whybuf, sizeof whybuf)) goto out;
  int r = nsp_job_analyze(job);
  if (r < 0) {
    fprintf(stderr, "ncclspy: %s\n", r == NSP_AN_EINVAL ? nsp_job_error(job) : nsp_an_strerror(r));
    goto out;
  }
  if (comms && parse_comms(job, comms, &comm_list, &eo.filter.ncomms) < 0) goto out;
  eo.filter.comms = comm_list;
  int64_t start = nsp_job_start_ns(job);
  if (from) eo.filter.from_ns = start + from_rel;
  if (to) eo.filter.to_ns = start + to_rel;
  if (ranks) {
    size_t seen = 0;
    for (size_t i = 0; i < nsp_job_ntraces(job); i++)
      for (size_t k = 0; k < eo.filter.nranks; k++) seen += nsp_job_trace(job, i)->rank == rank_list[k];
    if (!seen) {
      fprintf(stderr, "ncclspy export: --ranks %s names no rank of the traces\n", ranks);
      goto out;
    }
  }
  uint64_t estimate = nsp_export_estimate(job);
  progress_stop(job, &progress); /* the window's message, if any, on a clean line */
  progress = nsp_progress_start("export");
  nsp_job_set_progress(job, nsp_progress_update, progress);
  /* Tests lower the limits (not user settings). */
  const char *max_env = getenv("NSP_EXPORT_MAX_RANKS");
  size_t max_ranks = max_env && *max_env ? (size_t)strtoul(max_env, NULL, 10) : NSP_EXPORT_MAX_RANKS;
  const char *maxev_env = getenv("NSP_EXPORT_MAX_EVENTS");
  uint64_t max_events = maxev_env && *maxev_env ? strtoull(maxev_env, NULL, 10) : NSP_EXPORT_MAX_EVENTS;
  if (!from && !to && !comms && !ranks &&
      (nsp_job_ntraces(job) > max_ranks || estimate > max_events)) {
    const char *what;
    nsp_export_default_window(job, estimate, max_events, &eo.filter.from_ns, &eo.filter.to_ns, &what);
    fprintf(stderr, "ncclspy export: %zu ranks, up to %.1f million events: writing only +%.3f s to +%.3f s, %s; "
                    "choose with --from, --to, --comm, --ranks\n",
            nsp_job_ntraces(job), (double)estimate / 1e6, (double)(eo.filter.from_ns - start) / 1e9,
            (double)(eo.filter.to_ns - start) / 1e9, what);
  }
  FILE *out = stdout;
  if (output && output_is_loaded_trace(output, job)) goto out;
  if (output && !(out = open_output(output))) goto out;
  uint64_t nev = 0, nslices = 0;
  r = nsp_export_perfetto(job, &eo, out, &nev, &nslices);
  progress_stop(job, &progress);
  if (out != stdout && fclose(out) != 0 && r == 0) r = -1;
  if (r < 0) {
    fprintf(stderr, "ncclspy: could not write the timeline to %s%s%s\n", output ? output : "standard output",
            r == -1 ? "" : ": ", r == -1 ? "" : nsp_an_strerror(r));
    goto out;
  }
  if (!nslices)
    fprintf(stderr, "ncclspy export: no call in what was chosen (window, communicators, ranks): the file holds "
                    "the processes only\n");
  if (nev > max_events)
    fprintf(stderr, "ncclspy export: %llu events written: a browser may not open a file this big; choose with "
                    "--from, --to, --comm, --ranks\n", (unsigned long long)nev);
  /* What was not read, or read in part, is not in the file either. */
  for (size_t i = 0; i < nsp_job_nnotes(job); i++) {
    fputs(i ? "  - "
            : "ncclspy export: notes (files they name as not read, or read in part, are not in the timeline):\n  - ",
          stderr);
    nsp_put_esc(stderr, nsp_job_note(job, i));
    fputc('\n', stderr);
  }
  status = NSP_EXIT_CLEAN;
out:
  progress_stop(job, &progress);
  free(rank_list);
  free(comm_list);
  nsp_job_destroy(job);
  return status;
}

/* The commands (systemd's verbs[] habit): name, what runs it, its help. */
struct nsp_verb {
  const char *name;
  int (*run)(const struct nsp_verb *v, int argc, char **argv);
  const char *usage;
  const struct report_cmd *report; /* analyze and perf */
};

static int run_report(const struct nsp_verb *v, int argc, char **argv) { return cmd_report(v->report, argc, argv); }
static int run_dump(const struct nsp_verb *v, int argc, char **argv) {
  (void)v;
  return cmd_dump(argc, argv);
}
static int run_help(const struct nsp_verb *v, int argc, char **argv);
static int run_export(const struct nsp_verb *v, int argc, char **argv) {
  (void)v;
  return cmd_export(argc, argv);
}

/* `run`'s analysis afterwards: the text report of dir, on stderr (the
 * command's own output keeps stdout). */
static int analyze_dir(const char *dir) {
  struct nsp_job *job = nsp_job_create();
  if (!job) return NSP_EXIT_USAGE;
  int status = NSP_EXIT_USAGE;
  if (nsp_job_add_path(job, dir) <= 0) {
    fprintf(stderr, "ncclspy run: no trace in %s: did the command call NCCL?\n", dir);
  } else if (nsp_job_analyze(job) == 0 && nsp_report_text(job, stderr) == 0) {
    status = NSP_EXIT_CLEAN;
  }
  nsp_job_destroy(job);
  return status;
}
static int run_run(const struct nsp_verb *v, int argc, char **argv) {
  (void)v;
  return nsp_cmd_run(argc, argv, analyze_dir);
}
static int run_shim_path(const struct nsp_verb *v, int argc, char **argv) {
  (void)v;
  (void)argv;
  if (argc > 1) return usage_error("shim-path", "takes no arguments", NULL);
  char path[4096];
  if (nsp_shim_path(path, sizeof path) < 0) {
    fprintf(stderr, "ncclspy shim-path: libncclspy.so is not next to this command\n");
    return NSP_EXIT_USAGE;
  }
  puts(path);
  return NSP_EXIT_CLEAN;
}
static const char nsp_usage_shim_path[] =
    "usage: ncclspy shim-path\n"
    "\n"
    "Prints the absolute path of libncclspy.so, found next to this command,\n"
    "for LD_PRELOAD=$(ncclspy shim-path).  Exit status: 0, or 2 when it is not\n"
    "there.\n";

static int run_watch(const struct nsp_verb *v, int argc, char **argv) {
  (void)v;
  return nsp_cmd_watch(argc, argv, analyze_status);
}

static const struct nsp_verb nsp_verbs[] = {
    {"analyze", run_report, nsp_usage_analyze, &nsp_cmd_analyze},
    {"perf", run_report, nsp_usage_perf, &nsp_cmd_perf},
    {"dump", run_dump, nsp_usage_dump, NULL},
    {"run", run_run, NULL, NULL},
    {"shim-path", run_shim_path, nsp_usage_shim_path, NULL},
    {"help", run_help, nsp_usage_main, NULL},
    {"watch", run_watch, nsp_usage_watch, NULL},
    {"export", run_export, nsp_usage_export, NULL},
};

static const struct nsp_verb *verb_of(const char *name) {
  for (size_t i = 0; i < sizeof nsp_verbs / sizeof *nsp_verbs; i++)
    if (!strcmp(nsp_verbs[i].name, name)) return &nsp_verbs[i];
  return NULL;
}

static int run_help(const struct nsp_verb *v, int argc, char **argv) {
  (void)v;
  if (argc > 2) {
    char extra[300];
    snprintf(extra, sizeof extra, "'%s'", argv[2]);
    return usage_error(NULL, "help takes one command, not ", extra);
  }
  const struct nsp_verb *about = argc < 2 ? verb_of("help") : verb_of(argv[1]);
  if (!about) return usage_error(NULL, "no such command: ", argv[1]);
  put_usage(stdout, about->usage ? about->usage : nsp_usage_run);
  return NSP_EXIT_CLEAN;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  int c;
  /* "+": stop at the command name; its options are its own. */
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
    switch (c) {
      case 'h': fputs(nsp_usage_main, stdout); return NSP_EXIT_CLEAN;
      case 'V': printf("ncclspy %s (trace format %d.%d)\n", NSP_VERSION, NSP_FORMAT_MAJOR, NSP_FORMAT_MINOR); return NSP_EXIT_CLEAN;
      default: return option_error(NULL, c, argv);
    }
  }
  if (optind >= argc) return usage_error(NULL, "no command given", NULL);
  const struct nsp_verb *v = verb_of(argv[optind]);
  if (!v) return usage_error(NULL, "no such command: ", argv[optind]);
  return v->run(v, argc - optind, argv + optind);
}
