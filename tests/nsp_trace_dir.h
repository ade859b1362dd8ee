/* nsp_trace_dir.h - the traces a test job left in a directory, for the
 * plain-C test programs that count what the shim wrote.
 *
 * nsp_trace_dir_each(dir, pid, fn, arg) opens each "*.ncclspy" file in dir
 * (not the ".ring" sidecars) and, when pid is 0 or the file's header names
 * that pid, calls fn(path, reader, arg) with it open.  A file that does
 * not open is passed with reader NULL when pid is 0 (its size may still
 * count), else skipped.  The reader is destroyed after fn returns.
 * Returns how many files fn was called for.  Include after "nsp_reader.h", once
 * per test program. */
#ifndef NSP_TRACE_DIR_H
#define NSP_TRACE_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

static int nsp_trace_dir_each(const char *dir, pid_t pid, void (*fn)(const char *path, struct nsp_reader *r, void *arg),
                              void *arg) {
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 8 || strcmp(e->d_name + len - 8, ".ncclspy")) continue;
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct nsp_reader *r = nsp_reader_open(path, err, sizeof err);
    if (!r && pid) continue;
    if (!pid || nsp_reader_header(r)->pid == (uint32_t)pid) {
      fn(path, r, arg);
      n++;
    }
    nsp_reader_destroy(r);
  }
  if (d) closedir(d);
  return n;
}

#endif /* NSP_TRACE_DIR_H */
