/* nsp_io.h - small file utilities of the shim and the readers.
 *
 * Nothing here allocates, logs or keeps state: each caller decides what a
 * failure means (the shim warns once, the readers say why in a sentence). */
#ifndef NSP_IO_H
#define NSP_IO_H

#include <stddef.h>
#include <sys/stat.h>

/* Writes the len bytes at buf to fd, going on after short writes and
 * EINTR.  Returns 0, or -1 with errno set (EIO when write wrote nothing). */
int nsp_write_all(int fd, const void *buf, size_t len);

/* Opens the regular file at path read-only, for readers that never trust
 * what a directory holds: the open is O_NONBLOCK, so a FIFO or device
 * named like the file is refused at once instead of waited on (and
 * O_CLOEXEC, O_NOCTTY).  oflags: extra open flags (such as O_NOFOLLOW).
 * Returns the descriptor with *st its fstat; -1 with errno set when the
 * file cannot be opened or stat'ed; -2 when it is not a regular file
 * (nothing is left open then). */
int nsp_open_regular(const char *path, int oflags, struct stat *st);

/* Maps the regular file at path read-only (a private mapping), for the
 * readers of traces and crash rings (opened as nsp_open_regular does).
 * On success returns 0 with *data, *len (bytes) set; an empty file gives
 * *data NULL and *len 0; unmap with munmap(*data, *len).  Returns -1 with
 * errno set when the file cannot be opened, stat'ed or mapped, and -2
 * when it is not a regular file. */
int nsp_map_regular(const char *path, int oflags, const void **data, size_t *len);

#endif /* NSP_IO_H */
