/* nsp_progress.h - one line of progress on a terminal, for the commands
 * that read many traces (analyze, perf, export), and the in-place status
 * line of `ncclspy watch`.  Nothing is ever drawn on a stream that is not
 * a terminal (isatty): output sent to a file or a pipe has no progress
 * bytes and no "\r". */
#ifndef NSP_PROGRESS_H
#define NSP_PROGRESS_H

#include <stdio.h>

#include "nsp_analyze.h"

struct nsp_progress;

/* Starts the progress of command `what` ("analyze"), drawn on standard
 * error when it is a terminal.  NULL when out of memory (then
 * nsp_progress_update and nsp_progress_end do nothing with it). */
struct nsp_progress *nsp_progress_start(const char *what);

/* The job's progress callback (nsp_job_set_progress(job,
 * nsp_progress_update, progress)): draws "ncclspy analyze: reading traces:
 * 3 of 8 files, 1.2M records, 450k records/s" in place, only once the
 * command has run for more than 1 s and at most 10 times a second.  Test
 * hook: the environment variable NSP_TEST_PROGRESS_DELAY_MS makes it wait
 * that long after each file (a run made to last), terminal or not. */
void nsp_progress_update(void *progress, const struct nsp_job_progress *p);

/* Clears the line if one was drawn (before the report is written) and
 * frees p; p may be NULL. */
void nsp_progress_end(struct nsp_progress *p);

/* A status line kept in place on terminal `tty`: "\r", text cut to the
 * terminal's width (80 when unknown), clear to the end of the line; no
 * newline.  nsp_status_clear empties it (before other output). */
void nsp_status_put(FILE *tty, const char *text);
void nsp_status_clear(FILE *tty);

/* CLOCK_MONOTONIC, ns. */
long long nsp_progress_clock_ns(void);

#endif /* NSP_PROGRESS_H */
