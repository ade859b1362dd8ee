/* nsp_report.h - the `ncclspy` command's front ends: the text and JSON
 * reports of an analysed job, and the record dump of a trace file.
 * docs/REPORT.md describes both report formats and the JSON schema. */
#ifndef NSP_REPORT_H
#define NSP_REPORT_H

#include <stdio.h>

#include <json-c/json.h>

#include "nsp_analyze.h"

/* Version of the JSON report's schema ("schema" member); bumped when a
 * member changes meaning or disappears, not when one is added. */
#define NSP_REPORT_SCHEMA 1

/* Writes the text report of an analysed job to out: a title line, the
 * summary paragraph, the findings (likely cause first), then the traces,
 * communicators and notes.  Returns 0, or -1 when writing failed
 * (ferror(out)). */
int nsp_report_text(const struct nsp_job *job, FILE *out);

/* Writes the JSON report (one object, pretty-printed, newline-terminated).
 * Returns 0, or -1 when writing failed or memory ran out. */
int nsp_report_json(const struct nsp_job *job, FILE *out);

/* The JSON report as a json-c object (the caller owns it: json_object_put).
 * NULL when out of memory. */
struct json_object *nsp_report_json_object(const struct nsp_job *job);

/* `ncclspy perf`: the figures of nsp_job_perf (call it first) as text,
 * per communicator: a table of (op, size bucket) with calls, timed calls,
 * GPU duration p50/p99, algbw and busbw; the arrival spread and the ranks
 * that arrive last.  Returns 0 or -1 when writing failed. */
int nsp_report_perf_text(const struct nsp_job *job, FILE *out);
/* The same as one JSON object (schema in docs/REPORT.md).  Returns 0 or
 * -1. */
int nsp_report_perf_json(const struct nsp_job *job, FILE *out);
struct json_object *nsp_report_perf_json_object(const struct nsp_job *job);

/* Writes one line per record of the trace at path to out, header first:
 * text ("t=+12.345678ms CALL all-reduce comm=1 seq=2 ...", times relative
 * to the header's monotonic time) or, with json != 0, one JSON object per
 * line with every field.  Problems go to out as a final "problem" line and
 * to err as a sentence.
 * Returns 0 when the file read cleanly, 1 when reading stopped at damage
 * or a cut frame (what came before was written), 2 when the file could not
 * be read as a trace at all, -1 when writing failed. */
int nsp_dump_file(const char *path, int json, FILE *out, FILE *err);

/* "communicator 0123456789abcdef (4 ranks, split from ... color 1, name
 * "x")", the name escaped; "no communicator" for id 0; the parenthesis
 * only when c (the communicator with that id) is known.  Shared by the
 * text and perf reports. */
void nsp_report_put_comm(FILE *out, const struct nsp_comm_info *c, uint64_t id);
/* The job's notes, "\nNotes (N)" then one "  - note" line each (escaped);
 * nothing when there are none.  The text and perf reports end with them. */
void nsp_report_put_notes(FILE *out, const struct nsp_job *job);

/* "2.28.9" for an ncclGetVersion() code (22809; codes below 10000 are the
 * pre-2.9 form, 2708 -> "2.7.8"); "unknown" for 0. */
const char *nsp_nccl_version_str(int code, char *buf, size_t buflen);

/* Writes a JSON document (pretty, one trailing newline) and frees it;
 * root may be NULL (out of memory: nothing written).  Returns 0, or -1 on
 * a write error or NULL root.  Shared by the report and perf writers. */
int nsp_report_json_emit(struct json_object *root, FILE *out);

/* Python call sites in the text report (nsp_report_py.c).  One line, no
 * newline: the first frame of the program's own, "FILE:LINE in FUNCTION"
 * (" (the main thread's Python stack)" when borrowed); returns 0 and
 * writes nothing when ps is NULL or empty. */
int nsp_report_put_pyline(FILE *out, const struct nsp_pysite *ps);
/* The headline's line of a side (docs/REPORT.md, "The headline"): as
 * nsp_report_put_pyline, "last call from " first when last (the site is
 * the process's last call, not the call the finding names); and where
 * another side's site (others[0..nothers), NULL entries skipped) shows
 * the same frame (file, line, function) but its stack differs, the frame
 * where ps departs from it, going outward from the shown frame, then
 * " (via SHOWN)" (SHOWN with its file's base name; a stack cut short
 * differs only where it has frames); when only the library
 * frames called from the shown one differ, SHOWN then " (calling FRAME)". */
int nsp_report_put_pyline_among(FILE *out, const struct nsp_pysite *ps, const struct nsp_pysite *const *others,
                                size_t nothers, int last);
/* A site's lines: at indent "Python call site of RANKS:" (ranks NULL:
 * "Python call site:"; a borrowed stack says whose it is), the first
 * frame of the program's own, the library frames called from it folded
 * into one line, then the outer frames (library runs folded), at
 * indent + 4. */
void nsp_report_put_pysite(FILE *out, const struct nsp_pysite *ps, int indent, const char *ranks);
/* As nsp_report_put_pysite; last: the site is the last call's of the
 * process ("Python call site of its last call:", "Python call site of the
 * last call of RANKS:"). */
void nsp_report_put_pysite_of(FILE *out, const struct nsp_pysite *ps, int indent, const char *ranks, int last);
/* The Python site every process of side s shares (by content), or NULL. */
const struct nsp_pysite *nsp_report_side_pysite(const struct nsp_side *s);
/* Side s's distinct Python sites (up to max), each once with the ranks
 * that share it. */
void nsp_report_put_side_pysites(FILE *out, const struct nsp_job *job, const struct nsp_finding *f,
                                 const struct nsp_side *s, int indent, size_t max);

/* Parts of the text report, for the HTML report (nsp_report_html.c) to
 * word things as the text report does; each writes text escaped for a
 * terminal (nsp_escape.h), without a final newline unless said.
 * The lines under the headline: where each side of the first finding
 * made its call, one line each, newline-terminated; nothing without a
 * finding. */
void nsp_report_put_headline_sites(FILE *out, const struct nsp_job *job);
/* A finding's first line: "[1] dtype-mismatch on communicator C (4
 * ranks), seq 2 (all-reduce), at +T s, caused by [N]". */
void nsp_report_put_finding_title(FILE *out, const struct nsp_job *job, size_t i);
/* Side si of f: "    side 1: RANKS: TEXT", its processes (how each
 * ended), its call sites, Python and native; newline-terminated lines. */
void nsp_report_put_side(FILE *out, const struct nsp_job *job, const struct nsp_finding *f, size_t si);
/* The first finding before finding i with the same hint (the text report
 * says "hint: the same as [j]'s"), or SIZE_MAX. */
size_t nsp_report_same_hint(const struct nsp_job *job, size_t i);
/* Call i of t's calls in flight: "in flight: all-reduce ... seq 3 on
 * communicator C since +T s (never returned; W s to its last sign of
 * life)". */
void nsp_report_put_inflight(FILE *out, const struct nsp_job *job, const struct nsp_trace_info *t, size_t i);

/* `ncclspy analyze --html`: the report as one self-contained HTML page
 * (no script, no external resource: inline CSS and SVG): the headline,
 * summary, findings and notes as the text report words them, how each
 * process ended, the environment per rank, and a swimlane of the first
 * finding's communicator around its seq (docs/REPORT.md, "The HTML
 * report").  Every string from the traces is HTML-escaped
 * (nsp_put_html).  Returns 0, or -1 when writing failed or memory ran
 * out. */
int nsp_report_html(const struct nsp_job *job, FILE *out);

#endif /* NSP_REPORT_H */
