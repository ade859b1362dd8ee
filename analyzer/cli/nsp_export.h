/* nsp_export.h - `ncclspy export --perfetto`: an analysed job's calls as
 * a Chrome trace event format file (JSON object form) that
 * ui.perfetto.dev and chrome://tracing open (docs/REPORT.md, "The
 * Perfetto timeline"). */
#ifndef NSP_EXPORT_H
#define NSP_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "nsp_analyze.h"

/* Processes or estimated events above which an export without a choice of
 * window, communicators or ranks is cut to a window around the first
 * finding (nsp_export_default_window). */
#define NSP_EXPORT_MAX_RANKS 256
#define NSP_EXPORT_MAX_EVENTS 2000000ull
/* That window: this long before the first finding's time, and after. */
#define NSP_EXPORT_AROUND_NS 5000000000ll

/* What to export: nsp_calls_filter's choice (time window on the job
 * clock, wall-clock ns; communicator ids; job ranks); the arrays belong
 * to the caller. */
struct nsp_export_opts {
  struct nsp_calls_filter filter;
};

/* The events a whole export would hold, roughly (3 per collective or
 * send/recv: CPU and GPU slices and a flow), from the traces' counts. */
uint64_t nsp_export_estimate(const struct nsp_job *job);

/* The window used when a big job is exported without a choice, centred
 * on the first finding that has a time (without one: the last call any
 * process entered),
 * 2 x NSP_EXPORT_AROUND_NS long or shorter: as long as the job's mean
 * rate of events (estimate over the job's span) fills with about
 * max_events (NSP_EXPORT_MAX_EVENTS), 1 us at least; always inside the job.  *what (a
 * constant) says where, for the message. */
void nsp_export_default_window(const struct nsp_job *job, uint64_t estimate, uint64_t max_events, int64_t *from_ns,
                               int64_t *to_ns, const char **what);

/* Writes the trace of an analysed job to out, streamed (one event at a
 * time; memory: the iterator's, a word per collective in the window for
 * the flows, a track table per process).  *nevents and *nslices (may be
 * NULL) get the events and the slices (CPU and GPU) written.  Returns 0, -1 when writing failed, or a negative
 * NSP_AN_* error. */
int nsp_export_perfetto(const struct nsp_job *job, const struct nsp_export_opts *o, FILE *out, uint64_t *nevents,
                        uint64_t *nslices);

/* Parses a time as the options take it, relative to the job's start:
 * "12.5s", "300ms", "40us", "100ns", "1.5" (seconds), a leading '+'
 * allowed.  Returns 0 and *ns, or -1. */
int nsp_export_parse_time(const char *s, int64_t *ns);

#endif /* NSP_EXPORT_H */
