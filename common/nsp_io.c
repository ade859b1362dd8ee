/* nsp_io.c - small file utilities (see nsp_io.h). */
#include "nsp_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int nsp_write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

int nsp_open_regular(const char *path, int oflags, struct stat *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | oflags);
  if (fd < 0) return -1;
  int ret = fd;
  if (fstat(fd, st) < 0) ret = -1;
  else if (!S_ISREG(st->st_mode)) ret = -2;
  if (ret < 0) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
  return ret;
}

int nsp_map_regular(const char *path, int oflags, const void **data, size_t *len) {
  *data = NULL;
  *len = 0;
  struct stat st;
  int fd = nsp_open_regular(path, oflags, &st);
  if (fd < 0) return fd;
  int ret = 0;
  if (st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) ret = -1;
    else {
      *data = m;
      *len = (size_t)st.st_size;
    }
  }
  int saved = errno;
  close(fd);
  errno = saved;
  return ret;
}
