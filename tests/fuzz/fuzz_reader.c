/* fuzz_reader.c - fuzz target: bytes as one trace file.
 *
 * Reads every record with the reader (nsp_reader_open_mem), touching every
 * string and array a record points to, then dumps the same bytes as a file
 * (`ncclspy dump`, text and JSON) to /dev/null.  Checks the reader's
 * promises: it stays at its end once there, and a -1 comes with a problem
 * sentence naming a byte offset. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nsp_fuzz.h"
#include "nsp_fuzz_touch.h"
#include "nsp_reader.h"
#include "nsp_report.h"

/* The dump reads a path: the bytes go to a memory file, named through /proc. */
static void dump(const uint8_t *data, size_t size, int opened, int damaged) {
  static FILE *devnull;
  if (!devnull && !(devnull = fopen("/dev/null", "w"))) return;
  int fd = memfd_create("nsp-fuzz", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  if (off == size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    /* JSON lines cost a json-c object per record: small inputs only,
     * which cover every record kind, keep the fuzzer fast. */
    for (int json = 0; json < (size <= 4096 ? 2 : 1); json++) {
      int ret = nsp_dump_file(path, json, devnull, devnull);
      NSP_FUZZ_CHECK(ret == (!opened ? 2 : damaged ? 1 : 0));
    }
  }
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256] = "";
  struct nsp_reader *r = nsp_reader_open_mem(data, size, err, sizeof err);
  if (!r) {
    NSP_FUZZ_CHECK(err[0] != 0);
    dump(data, size, 0, 0);
    return 0;
  }
  const struct nsp_file_header *h = nsp_reader_header(r);
  touch_str(h->host);
  struct nsp_rec rec;
  int ret;
  uint64_t frames = 0;
  while ((ret = nsp_reader_next(r, &rec)) == 1) {
    touch(&rec);
    NSP_FUZZ_CHECK(rec.kind != 0); /* unknown kinds are skipped, never returned */
    NSP_FUZZ_CHECK(nsp_reader_frames(r) >= frames && nsp_reader_frames(r) > 0);
    frames = nsp_reader_frames(r);
  }
  const char *problem = nsp_reader_problem(r);
  NSP_FUZZ_CHECK(ret == 0 || ret == -1);
  NSP_FUZZ_CHECK(ret == 0 || problem != NULL);
  NSP_FUZZ_CHECK(!problem || strstr(problem, "byte ") != NULL);
  /* At its end, the reader stays there. */
  NSP_FUZZ_CHECK(nsp_reader_next(r, &rec) == ret);
  int damaged = problem != NULL;
  nsp_reader_destroy(r);
  dump(data, size, 1, damaged);
  return 0;
}
