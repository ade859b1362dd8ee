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
 * header is h (same pid and realtime_ns).  Returns NULL when there is none
 * (note is "") or when it cannot be used: then note (notelen bytes, at
 * least 1) says why, starting with the ring file's name (its last
 * component when the whole path would not fit) and naming the byte offset
 * of the header field at fault, e.g. "x.ring ignored: bad ring geometry:
 * 3 slots at byte 24".  Otherwise note stays "" for now and must stay
 * valid until nsp_ringread_close: damage found while reading (a blob or
 * slot that cannot be read) is written there, with its byte offset in the
 * file, and reading goes on with the rest (nsp_ringread_next).  Errors:
 * NULL with a note for an unreadable file (errno text), a file of another
 * process, a file under 4096 bytes or with a bad header; NULL without a
 * note when the path is too long. */
struct nsp_ringread *nsp_ringread_open(const char *trace_path, const struct nsp_file_header *h,
                                       char *note, size_t notelen);

/* As nsp_ringread_open, on the len bytes at data instead of a file (the
 * fuzz target, tests): data must stay valid and unchanged until
 * nsp_ringread_close; name is the file name that notes give. */
struct nsp_ringread *nsp_ringread_open_mem(const void *data, size_t len, const char *name,
                                           const struct nsp_file_header *h, char *note, size_t notelen);

/* The next recovered record, after everything the trace's frames held:
 * frames_end is the largest RINGPOS end the frames had (0 none), and
 * dropped_seen[reason] the DROPPED counts they reported, so that recovery
 * neither repeats records nor drop counts.  These arguments are taken at
 * the first call.  Strings and ext stay valid until the next call.
 * Returns 1 for a record, 0 at the end (and at every later call).  Ends
 * with one DROPPED record per reason for drops the frames did not report,
 * then (format 1.5) one RINGSTATE record (the writer's heartbeat, the exit
 * handlers' time, the calls in flight that follow) and one INFLIGHT record
 * per call in flight in the ring's in-flight table, copied when RINGSTATE
 * is made (zero of them for an older ring).
 * Work is O(nslots) slot reads plus, at the first record that needs a
 * blob, one pass over the blob area and a sort of its blob headers (done
 * again, at most 8 times in all, when a blob is not found: the ring of a
 * live process changes while it is read). */
int nsp_ringread_next(struct nsp_ringread *rr, uint64_t frames_end, const uint64_t dropped_seen[NSP_DROP_SLOTS],
                      struct nsp_rec *rec);

/* Records recovered so far; records found in the ring that could not be
 * recovered because their blob was never stored (the blob area was full:
 * their strings or ext were lost).  Both 0 when rr is NULL. */
uint64_t nsp_ringread_recovered(const struct nsp_ringread *rr);
uint64_t nsp_ringread_lost(const struct nsp_ringread *rr);
/* Damaged places skipped so far (hostile or corrupt input, never in a file
 * the shim wrote): committed slots naming an impossible communicator,
 * blobs that are cut or claim more than the blob area, record blobs that
 * do not decode.  The first is described in the note, with the count at the
 * end of reading.  0 when rr is NULL. */
uint64_t nsp_ringread_damaged(const struct nsp_ringread *rr);

/* Unmaps and frees everything; rr may be NULL. */
void nsp_ringread_close(struct nsp_ringread *rr);

#endif /* NSP_RINGREAD_H */
