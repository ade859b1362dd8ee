/* nsp_reader.h - reads one ncclspy trace file, record by record.
 *
 * The reader never trusts the file: a bad header, a frame that does not
 * decompress, or a malformed record stops reading at that point with a
 * message naming the byte offset; everything before it stays usable.  A
 * file cut inside its last frame reads up to the last whole frame. */
#ifndef NSP_READER_H
#define NSP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "nsp_record.h"

struct nsp_reader;

/* Largest decompressed frame accepted, bytes (the shim writes frames of
 * at most 4 MiB); a larger claim is treated as damage. */
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
 * next call.  Returns 1 for a record, 0 at the end of what is readable,
 * -1 when reading stopped at damage (nsp_reader_problem says where; the
 * reader stays at its end afterwards). */
int nsp_reader_next(struct nsp_reader *r, struct nsp_rec *rec);

/* NULL when the whole file read cleanly; otherwise a sentence with the
 * byte offset where reading stopped ("truncated frame at byte 4096 ...").
 * A cut last frame is reported here too, with nsp_reader_next returning 0. */
const char *nsp_reader_problem(const struct nsp_reader *r);

/* Frames read so far. */
uint64_t nsp_reader_frames(const struct nsp_reader *r);

/* Frees everything; r may be NULL. */
void nsp_reader_destroy(struct nsp_reader *r);

#endif /* NSP_READER_H */
