/* nsp_setting.h - every NCCLSPY_* setting, in one table.
 *
 * NSP_SETTINGS(X) expands X(id, ...) once per setting: the variable is
 * NCCLSPY_<id>, its id NSP_SET_<id>, and the rest of the row are
 * designated initializers of struct nsp_setting_def.  The shim reads a
 * setting only through nsp_setting(NSP_SET_<id>) or nsp_setting_str,
 * which apply its type, range and default.  README's settings table is
 * made from the same rows (tests/shim/test_settings_doc.sh renders them
 * and checks README against them), so a meaning is written here only.
 *
 * Adding a setting is one row here (its type, default, range, unit and
 * meaning, in the words README uses), its reader calling nsp_setting in
 * its module, and the rendered row in README (the test prints it).  Rows
 * are in README's order. */
#ifndef NSP_SETTING_H
#define NSP_SETTING_H

/* How a setting's value is read.  Every type: unset or empty gives the
 * default without a word; a value that cannot be used gives one warning
 * per setting ("ncclspy: NCCLSPY_<ID>=<value> is not <what>; using
 * <default>") and the default. */
enum nsp_setting_type {
  NSP_ST_SWITCH, /* 1/on/true/yes -> 1, 0/off/false/no -> 0, case ignored */
  NSP_ST_INT,    /* a decimal integer in [lo, hi] */
  NSP_ST_POW2,   /* NSP_ST_INT, then rounded up to a power of two */
  NSP_ST_MODE,   /* an octal file mode with every bit of lo, none outside hi */
  NSP_ST_WORD,   /* one of .text's words -> its index, case ignored */
  NSP_ST_PATH,   /* a file or directory path; .text is the default (NULL: none) */
  NSP_ST_NAME,   /* a library name or path; .text is the default */
  NSP_ST_FLAG,   /* set (to anything) or not; read by another part (.reader) */
};

/* Largest NCCLSPY_CALLSITE_DEPTH: nsp_site.c's stack buffers hold it. */
#define NSP_SITE_DEPTH_MAX 32

struct nsp_setting_def {
  const char *name;  /* "NCCLSPY_FLUSH_MS" */
  enum nsp_setting_type type;
  long def;          /* numeric types' default; NSP_ST_WORD: its word's index */
  long lo, hi;       /* NSP_ST_INT, _POW2: the range; NSP_ST_MODE: see above */
  /* NSP_ST_WORD: the words, "auto|on/1/true/yes|off/0/false/no": '|'
   * between values (index 0, 1, ...), '/' between a value's spellings, the
   * first one the name used in messages; NSP_ST_PATH, _NAME: the default */
  const char *text;
  const char *unit;  /* of a number: "ms", "us", "records", "MiB", "frames" (README's default column) */
  const char *zero;  /* what 0 means when it is not a quantity: "none" */
  const char *reader; /* NULL: the shim; else the part that reads it */
  /* README's words; in a ranged number's, "{range}" stands for "lo to hi" */
  const char *meaning;
};

/* Keep the meanings as README has them: text, not code.  Long ones are
 * split into adjacent string literals. */
#define NSP_SETTINGS(X)                                                                         \
  X(DIR, .type = NSP_ST_PATH, .text = "ncclspy-trace",                                          \
    .meaning = "where trace files go; created (mode 0700) if missing; a symlink on the way is "  \
               "followed only when root or you own it")                                         \
  X(FLUSH_MS, .type = NSP_ST_INT, .def = 1000, .lo = 1, .hi = 3600000, .unit = "ms",            \
    .meaning = "longest a record waits before it is written into the trace ({range})")          \
  /* At most 2^18 slots (32 MiB): the ring is made, and its file                              \
   * preallocated, inside the program's first NCCL call.  The default is 2                     \
   * MiB: the writer drains every 2 ms, and a killed process leaves its                        \
   * ring file behind. */                                                                       \
  X(RING, .type = NSP_ST_POW2, .def = 16384, .lo = 64, .hi = 1 << 18, .unit = "records",        \
    .meaning = "records buffered between the job and the writer thread (128 bytes each; "       \
               "{range}); when full, records are dropped and counted, never waited for")        \
  X(RING_FILE, .type = NSP_ST_WORD, .def = 0, .text = "auto|on/1/true/yes|off/0/false/no",      \
    .meaning = "keep that buffer in `<trace>.ring`, a shared mapping, so records survive a "     \
               "killed process (SIGKILL, abort, crash): `auto` on ext4, xfs and tmpfs, `on` "   \
               "everywhere, `off` never; removed on a clean exit")                              \
  X(MODE, .type = NSP_ST_MODE, .def = 0600, .lo = 0600, .hi = 0666,                             \
    .meaning = "mode of the files (octal, up to 0666, e.g. 0640 for a group); directories the " \
               "shim makes get the matching x bits")                                            \
  X(LEVEL, .type = NSP_ST_INT, .def = 3, .lo = 1, .hi = 19,                                     \
    .meaning = "zstd compression level ({range})")                                              \
  X(MAX_MB, .type = NSP_ST_INT, .def = 0, .lo = 0, .hi = 1 << 30, .unit = "MiB", .zero = "none", \
    .meaning = "stop writing a trace past this size ({range}); what is left out is counted")    \
  X(NCCL_LIBRARY, .type = NSP_ST_NAME, .text = "libnccl.so.2",                                  \
    .meaning = "the NCCL library to look for when it is not in the global scope: the name or "  \
               "path of a library the program has already loaded (the shim never loads one "    \
               "itself)")                                                                       \
  X(TIMING, .type = NSP_ST_SWITCH, .def = 1,                                                    \
    .meaning = "0: no GPU timing, completion only (one untimed CUDA event per call); read when " \
               "each communicator is made (calls inside a group get their events at "           \
               "`ncclGroupEnd`, where the process's setting decides)")                          \
  X(TIMING_GAP_US, .type = NSP_ST_INT, .def = 500, .lo = 0, .hi = 10000000, .unit = "us",       \
    .meaning = "time a call on the GPU only when this long has passed since the thread's last " \
               "timed call (a timed event costs ~2.8 us of host time on H200); 0 times every "  \
               "call ({range})")                                                                \
  X(TRACK, .type = NSP_ST_SWITCH, .def = 1,                                                     \
    .meaning = "0: no CUDA events at all for calls on communicators made while it is set "      \
               "(records only)")                                                                \
  X(POLL_MS, .type = NSP_ST_INT, .def = 2, .lo = 1, .hi = 1000, .unit = "ms",                   \
    .meaning = "how often the completion poller looks at pending CUDA events ({range}; "        \
               "completion times come from the events, not from when it looks)")                \
  X(CALLSITES, .type = NSP_ST_SWITCH, .def = 1,                                                 \
    .meaning = "0: do not record native call sites (libunwind builds only)")                    \
  X(CALLSITE_DEPTH, .type = NSP_ST_INT, .def = 6, .lo = 1, .hi = NSP_SITE_DEPTH_MAX,            \
    .unit = "frames",                                                                           \
    .meaning = "return addresses that key a call site, and the frames recorded for it "         \
               "({range}; a failed call's whole stack is taken)")                               \
  X(PYSITES, .type = NSP_ST_SWITCH, .def = 1,                                                   \
    .meaning = "0: do not record Python call sites (the file, line and function of the "       \
               "calling thread's Python frames; CPython 3.10 to 3.13, read without the GIL)")   \
  X(PYSITE_DEPTH, .type = NSP_ST_INT, .def = 8, .lo = 1, .hi = 64, .unit = "frames",            \
    .meaning = "innermost Python frames that key a Python call site and are recorded for it "   \
               "({range})")                                                                     \
  X(SIGNALS, .type = NSP_ST_SWITCH, .def = 1,                                                   \
    .meaning = "0: install no handler for fatal signals. Otherwise, from the first NCCL call, " \
               "a SIGSEGV, SIGBUS, SIGABRT, SIGILL or SIGFPE writes a SIGNAL record (the "      \
               "signal and the thread's stack) into the crash ring, then goes on to the "       \
               "program's own handler or default action: the process ends as it would have, " \
               "and `ncclspy analyze` names the rank that died and where")                      \
  X(BENCH_MODE_FILE, .type = NSP_ST_PATH, .text = NULL,                                         \
    .meaning = "benchmarks only: a file of at least one byte, mapped by the shim; for "         \
               "communicators made while it is set, its first byte chooses per call `0` pass "  \
               "through unrecorded, `1` records only, `2` timing off, `3` timing on, and, to "  \
               "take timing off apart, `4` the untimed event recorded and given back at once, " \
               "`5` only the stream's capture check; any other byte: as the other settings "    \
               "say (how `examples/torch/bench_timing.py` measures every mode on one "          \
               "communicator). A second byte `p` leaves Python call sites out of those calls "  \
               "(`bench/nsp_bench_py.c`). Calls in modes `1`, `4` and `5` are recorded as "    \
               "untracked. The mode applies to calls outside groups: a group's events go in at "               \
               "`ncclGroupEnd`, as the other settings say. A path that is not a regular file "  \
               "of at least one byte (missing, empty, a directory, a FIFO) gives one warning "  \
               "and is not used. Write it in place; do not truncate it")                        \
  /* Read by the analyzer's error forwarding (NSP_TRY in                                       \
   * analyzer/model/nsp_an_model.h), never by the shim. */                                      \
  X(DEBUG, .type = NSP_ST_FLAG, .reader = "analyzer",                                           \
    .meaning = "`ncclspy` only, for its developers: when set (to any value), an error the "    \
               "analyzer passes up (out of memory, say) also prints the source file and line "  \
               "it came from, on stderr (builds without `NDEBUG`, such as the default one)")

#define NSP_SETTING_ID_(id, ...) NSP_SET_##id,
enum nsp_setting_id { NSP_SETTINGS(NSP_SETTING_ID_) NSP_SET_COUNT };
#undef NSP_SETTING_ID_

/* The rows, by id (nsp_setting.c). */
extern const struct nsp_setting_def nsp_setting_defs[NSP_SET_COUNT];

/* The value of a numeric setting (NSP_ST_SWITCH, _INT, _POW2, _MODE,
 * _WORD; NSP_ST_FLAG: 1 when set), read from the environment now: a
 * setting read at each communicator's creation can differ between
 * communicators.  Never fails: a value it cannot use gives the default
 * (and one warning per setting).  errno is preserved.  0 for the other
 * types. */
long nsp_setting(enum nsp_setting_id id);

/* The value of an NSP_ST_PATH or _NAME setting, read now: the variable,
 * or .text (NULL: none) when it is unset or empty.  Not copied: valid
 * until the environment changes.  NULL for the other types. */
const char *nsp_setting_str(enum nsp_setting_id id);

#endif /* NSP_SETTING_H */
