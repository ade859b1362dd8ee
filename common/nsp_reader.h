/* nsp_reader.h - reads one ncclspy trace file, record by record.
 *
 * The reader never trusts the file.  A bad header refuses the file.  A
 * frame that does not decompress, or a malformed record, loses that frame
 * (from the bad record on): frames are self-contained, so reading goes on
 * at the next zstd frame, and the problem sentence names the byte offset
 * of the first damage and what was skipped.  A file cut inside its last
 * frame reads up to the last whole frame; that is reported as a cut
 * ("incomplete frame at byte N"), not as damage ("corrupt frame at byte
 * N", "malformed record at byte ...").  Memory and time are bounded
 * whatever lengths or counts the file claims (see nsp_reader.c). */
#ifndef NSP_READER_H
#define NSP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_io.h" /* nsp_map_regular, for the readers of trace directories */
#include "nsp_record.h"

struct nsp_reader;

/* Largest decompressed frame accepted, bytes (the shim writes frames of
 * about 1 MiB); a larger frame is treated as damage. */
#define NSP_MAX_FRAME (64u << 20)

/* Opens path.  Returns NULL when the file cannot be opened or its header
 * is not an ncclspy header of a format major version this reader knows;
 * then err (errlen bytes) says why. */
struct nsp_reader *nsp_reader_open(const char *path, char *err, size_t errlen);

/* Opens a trace held in memory (len bytes at data, not copied: it must
 * outlive the reader).  Same results as nsp_reader_open. */
struct nsp_reader *nsp_reader_open_mem(const uint8_t *data, size_t len, char *err, size_t errlen);

/* The header as read (integers in host order).  Valid for the reader's life. */
const struct nsp_file_header *nsp_reader_header(const struct nsp_reader *r);

/* Reads the next record into rec; its strings and ext stay valid until the
 * next call.  Returns 1 for a record; at the end, 0 when the file read
 * cleanly (or was only cut), -1 when damage was skipped on the way
 * (nsp_reader_problem says where).  The reader stays at its end afterwards. */
int nsp_reader_next(struct nsp_reader *r, struct nsp_rec *rec);

/* NULL when the whole file read cleanly; otherwise a sentence with the
 * byte offset of the first damage and what was skipped ("corrupt frame at
 * byte 4096: ...; skipped 812 bytes, read on from byte 4908").  A cut last
 * frame is reported here too ("incomplete frame at byte N: the file ends
 * ..."), with nsp_reader_next returning 0. */
const char *nsp_reader_problem(const struct nsp_reader *r);

/* Damaged regions of the file skipped so far (0: none; a cut last frame
 * is no damaged region), the byte offset of the first one and the bytes
 * skipped over them all (*first_at and *skipped: 0 when none). */
unsigned nsp_reader_damage(const struct nsp_reader *r, size_t *first_at, size_t *skipped);

/* Records recovered so far from the trace's crash ring, "<path>.ring"
 * (include/ncclspy/trace.h): those its process had committed but not yet
 * written when it died.  nsp_reader_next returns them after the last frame,
 * then one DROPPED record per reason for drops the frames did not report.
 * Traces opened with nsp_reader_open_mem have no ring. */
uint64_t nsp_reader_recovered(const struct nsp_reader *r);
/* Records found in the ring that could not be recovered (their strings were
 * lost: the ring's blob area was full). */
uint64_t nsp_reader_unrecovered(const struct nsp_reader *r);
/* Records nsp_reader_next has returned from the ring so far: the recovered
 * ones and the DROPPED, RINGSTATE and INFLIGHT records it rebuilds; all
 * come after every record of the trace's frames. */
uint64_t nsp_reader_from_ring(const struct nsp_reader *r);
/* NULL, or why a ring file next to the trace was not used. */
const char *nsp_reader_ring_note(const struct nsp_reader *r);

/* Frames read so far (those a filter stepped over too). */
uint64_t nsp_reader_frames(const struct nsp_reader *r);

/* The trace's length in bytes (the file's, or the buffer's). */
size_t nsp_reader_size(const struct nsp_reader *r);

/* Bytes of the trace read through so far: the offset of the next frame
 * (the file's length once its frames are read); for progress lines. */
size_t nsp_reader_offset(const struct nsp_reader *r);

/* The byte offset of the zstd frame the record nsp_reader_next last
 * returned came from; SIZE_MAX when it came from the crash ring (or none
 * was returned).  A place nsp_reader_seek_frame can start at. */
size_t nsp_reader_record_frame(const struct nsp_reader *r);

/* Before the first nsp_reader_next: start at the frame at byte off (a
 * value nsp_reader_record_frame gave for this file), skipping the frames
 * before it without decompressing them.  For finding records known to be
 * at or after it (pass 2): what the skipped frames would have said (their
 * records, the crash ring's bookkeeping) is not seen.  0, or -1 (off is
 * not past the header and inside the file, or reading has begun). */
int nsp_reader_seek_frame(struct nsp_reader *r, size_t off);

/* Before the first nsp_reader_next: a data frame at byte off is
 * decompressed only when want(ctx, off) returns nonzero; the others are
 * stepped over unread (the trace index's plan, analyzer/model/
 * nsp_an_index.c).  ctx must outlive the reading. */
void nsp_reader_set_filter(struct nsp_reader *r, int (*want)(void *ctx, size_t off), void *ctx);

/* Frees what reading records needs (the zstd context, the frame buffer,
 * the decoder's state) once nsp_reader_next has returned 0 or -1: the
 * accessors above still answer, and nsp_reader_next returns as it did
 * last.  For readers whose records were all taken on another thread;
 * r may be NULL. */
void nsp_reader_release(struct nsp_reader *r);

/* Frees everything; r may be NULL. */
void nsp_reader_destroy(struct nsp_reader *r);

#endif /* NSP_READER_H */
