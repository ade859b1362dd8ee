/* fuzz_replay.c - runs a fuzz target over saved inputs, without libFuzzer
 * (like zstd's regression_driver.c): `meson test --suite fuzz-replay`
 * feeds it tests/fuzz/corpus/<target>/, so every input that once found a
 * bug, or new coverage, is tried again by every build, sanitizers and
 * valgrind included.
 *
 * usage: fuzz_replay_<target> FILE|DIR...   (directories: their files,
 * not recursive, in name order).  Exits 0 when every input ran. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nsp_fuzz.h"

/* Runs one file: its exact bytes in a buffer of their size, so that a
 * read past the end is a memory error the sanitizers and valgrind see. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) < 0 || st.st_size < 0) {
    fclose(f);
    return -1;
  }
  size_t size = (size_t)st.st_size;
  uint8_t *buf = malloc(size ? size : 1);
  if (!buf || fread(buf, 1, size, f) != size) {
    fprintf(stderr, "fuzz_replay: %s: cannot read\n", path);
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, size);
  free(buf);
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir, size_t *n) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t cnt = 0, cap = 0;
  struct dirent *e;
  int ret = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (cnt == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) {
        ret = -1;
        break;
      }
      names = nn;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(names[cnt] = malloc(len))) {
      ret = -1;
      break;
    }
    snprintf(names[cnt++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (cnt) qsort(names, cnt, sizeof *names, cmp_str);
  for (size_t i = 0; i < cnt; i++) {
    if (!ret) {
      if (getenv("NSP_FUZZ_VERBOSE")) fprintf(stderr, "%s\n", names[i]);
      ret = run_file(names[i]);
      if (!ret) (*n)++;
    }
    free(names[i]);
  }
  free(names);
  return ret;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  size_t n = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) < 0) {
      fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    int ret = S_ISDIR(st.st_mode) ? run_dir(argv[i], &n) : run_file(argv[i]);
    if (ret < 0) return 1;
    if (!S_ISDIR(st.st_mode)) n++;
  }
  printf("%zu inputs replayed\n", n);
  /* An empty corpus would make this test pass while testing nothing. */
  return n ? 0 : 1;
}
