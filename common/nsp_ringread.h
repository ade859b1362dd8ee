/* nsp_ringread.h - records recovered from a trace's crash ring, "<trace>.ring"
 * (include/ncclspy/trace.h, "The crash ring").
 *
 * nsp_reader uses this to go on after the last frame of a trace whose
 * process died: every record the process committed to its ring but had not
 * yet written.  Like the reader, it never trusts the file: geometry is
 * checked against the file's size, every blob against its slots, and a
 * ring that names another process (pid, start time) is ignored. */
#ifndef NSP_RINGREAD_H
#define NSP_RINGREAD_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_record.h"

struct nsp_ringread;

/* Opens trace_path + ".ring" when it exists and belongs to the trace whose
 * header is h.  NULL when there is none (note is "") or when it cannot be
 * used (note says why, for a reader's problem text). */
struct nsp_ringread *nsp_ringread_open(const char *trace_path, const struct nsp_file_header *h,
                                       char *note, size_t notelen);

/* The next recovered record, after everything the trace's frames held:
 * frames_end is the largest RINGPOS end the frames had (0 none), and
 * dropped_seen[reason] the DROPPED counts they reported, so that recovery
 * neither repeats records nor drop counts.  These arguments are taken at
 * the first call.  Strings and ext stay valid until the next call.
 * Returns 1 for a record, 0 at the end.  Ends with one DROPPED record per
 * reason for drops the frames did not report. */
int nsp_ringread_next(struct nsp_ringread *rr, uint64_t frames_end, const uint64_t dropped_seen[4],
                      struct nsp_rec *rec);

/* Records recovered so far; records found in the ring that could not be
 * recovered (their strings or ext were lost). */
uint64_t nsp_ringread_recovered(const struct nsp_ringread *rr);
uint64_t nsp_ringread_lost(const struct nsp_ringread *rr);

void nsp_ringread_close(struct nsp_ringread *rr);

#endif /* NSP_RINGREAD_H */
