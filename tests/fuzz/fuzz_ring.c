/* fuzz_ring.c - fuzz target: bytes as a crash ring file, "<trace>.ring".
 *
 * The input is a ring file, or a trace file followed by its ring file (the
 * input starts with "NCCLSPY\0" and the ring with the first "NSPRING\0"
 * after it), as `nsp_fuzz_seeds --ring` writes the pair a killed process
 * left.  Without a trace, a bare trace header naming the ring's own
 * process (pid, realtime_ns) stands in, so that mutations get past the
 * ownership check.
 *
 * 1. In memory (nsp_ringread_open_mem): every record read and every
 *    string touched.  Checks the reader's promises: a ring it refuses has
 *    a note naming a byte offset; records are of kinds a ring holds, with
 *    communicator indices in range, at most one per slot plus one DROPPED
 *    per reason; damage found while reading is in the note with its byte
 *    offset; at its end, the reader stays there.
 * 2. As files in a private directory: the trace and its ring through the
 *    analyzer (nsp_job_add_path, nsp_job_analyze, the text report to
 *    /dev/null), which must name a ring it refused in a note, with the
 *    byte offset. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsp_fuzz.h"
#include "nsp_fuzz_touch.h"
#include "nsp_report.h"
#include "nsp_ringread.h"
#include "ncclspy/trace.h"

static uint64_t le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* The private directory of part 2, removed at exit. */
static char nsp_fuzz_dir[256], nsp_fuzz_trace[300], nsp_fuzz_ring[310];

static void remove_dir(void) {
  unlink(nsp_fuzz_ring);
  unlink(nsp_fuzz_trace);
  rmdir(nsp_fuzz_dir);
}

static int make_dir(void) {
  if (nsp_fuzz_dir[0]) return 0;
  const char *tmp = getenv("TMPDIR");
  snprintf(nsp_fuzz_dir, sizeof nsp_fuzz_dir, "%s/nsp-fuzz-ring-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(nsp_fuzz_dir)) {
    nsp_fuzz_dir[0] = 0;
    return -1;
  }
  snprintf(nsp_fuzz_trace, sizeof nsp_fuzz_trace, "%s/x.rank0.ncclspy", nsp_fuzz_dir);
  snprintf(nsp_fuzz_ring, sizeof nsp_fuzz_ring, "%s.ring", nsp_fuzz_trace);
  atexit(remove_dir);
  return 0;
}

static int put(const char *path, const uint8_t *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  return close(fd) == 0 && off == len ? 0 : -1;
}

/* Whether a note starts with the ring's name, whole or (when the whole
 * would not fit) its last component, then sep. */
static int names_ring(const char *note, const char *sep) {
  static const char name[] = "fuzz/x.ncclspy.ring";
  size_t n = strlen(sep);
  return (strncmp(note, name, sizeof name - 1) == 0 && strncmp(note + sizeof name - 1, sep, n) == 0) ||
         (strncmp(note, name + 5, sizeof name - 6) == 0 && strncmp(note + sizeof name - 6, sep, n) == 0);
}

/* Part 1.  Returns whether the ring was refused at open. */
static int read_mem(const uint8_t *ring, size_t len, const struct nsp_file_header *h) {
  char note[160];
  struct nsp_ringread *rr = nsp_ringread_open_mem(ring, len, "fuzz/x.ncclspy.ring", h, note, sizeof note);
  if (!rr) {
    NSP_FUZZ_CHECK(note[0] != 0);
    NSP_FUZZ_CHECK(names_ring(note, " "));
    NSP_FUZZ_CHECK(strstr(note, "byte ") || strstr(note, "out of memory"));
    return 1;
  }
  NSP_FUZZ_CHECK(note[0] == 0);
  uint64_t nslots = le(ring + 24, 8); /* checked by the open */
  static const uint64_t seen[4] = {0, 0, 0, 0};
  struct nsp_rec rec;
  uint64_t nrec = 0, ndropped = 0, nstate = 0, ninflight = 0, announced = 0;
  int ret, last_reason = 0;
  while ((ret = nsp_ringread_next(rr, 0, seen, &rec)) == 1) {
    touch(&rec);
    nrec++;
    NSP_FUZZ_CHECK(rec.kind >= NSP_REC_PROCESS && rec.kind != NSP_REC_RINGPOS); /* 0: unknown, never returned */
    NSP_FUZZ_CHECK(rec.comm < NSP_MAX_COMMS);
    if (rec.kind == NSP_REC_DROPPED) {
      /* After the slots' records, one per reason, in order, each with a count. */
      NSP_FUZZ_CHECK(rec.aux > (uint32_t)last_reason && rec.aux <= 3 && rec.count > 0 && !nstate);
      last_reason = (int)rec.aux;
      ndropped++;
    } else if (rec.kind == NSP_REC_RINGSTATE) {
      /* Then one RINGSTATE, announcing the INFLIGHT records that end it. */
      NSP_FUZZ_CHECK(nstate++ == 0);
      announced = nsp_rec_ringstate_inflight(&rec);
    } else if (rec.kind == NSP_REC_INFLIGHT) {
      NSP_FUZZ_CHECK(nstate == 1 && rec.ext != NULL && nsp_rec_inflight_t_enter(&rec) != 0);
      ninflight++;
    } else {
      NSP_FUZZ_CHECK(ndropped == 0 && nstate == 0);
    }
    NSP_FUZZ_CHECK(nrec <= nslots + 4 + 1024);
  }
  NSP_FUZZ_CHECK(nstate == 1 && ninflight == announced);
  NSP_FUZZ_CHECK(ret == 0);
  /* At its end, the reader stays there. */
  NSP_FUZZ_CHECK(nsp_ringread_next(rr, 0, seen, &rec) == 0);
  uint64_t recovered = nsp_ringread_recovered(rr), lost = nsp_ringread_lost(rr),
           damaged = nsp_ringread_damaged(rr);
  NSP_FUZZ_CHECK(recovered == nrec - ndropped - nstate - ninflight);
  NSP_FUZZ_CHECK(recovered + lost <= nslots && damaged <= nslots);
  /* Damage, and only damage, is noted, with the file and a byte offset. */
  NSP_FUZZ_CHECK((note[0] != 0) == (damaged != 0));
  if (damaged) NSP_FUZZ_CHECK(names_ring(note, ": ") && strstr(note, "byte "));
  nsp_ringread_close(rr);
  return 0;
}

/* Part 2. */
static void analyze_files(const uint8_t *trace, size_t tlen, const uint8_t *ring, size_t rlen, int refused) {
  static FILE *devnull;
  if (!devnull && !(devnull = fopen("/dev/null", "w"))) return;
  if (make_dir() < 0 || put(nsp_fuzz_trace, trace, tlen) < 0 || put(nsp_fuzz_ring, ring, rlen) < 0) return;
  struct nsp_job *job = nsp_job_create();
  if (!job) return;
  int ret = nsp_job_add_path(job, nsp_fuzz_trace);
  NSP_FUZZ_CHECK(ret == 1 || ret == NSP_AN_EREAD || ret == NSP_AN_ENOMEM);
  if (ret == 1) {
    /* Every note about the ring, other than the counts of what it gave,
     * names the file and a byte offset. */
    int ring_notes = 0;
    for (size_t i = 0; i < nsp_job_nnotes(job); i++) {
      const char *n = nsp_job_note(job, i);
      if (strstr(n, "recovered from") || strstr(n, "could not be recovered")) continue;
      const char *r = strstr(n, "x.rank0.ncclspy.ring");
      if (!r) continue;
      ring_notes++;
      NSP_FUZZ_CHECK(strstr(r, "byte ") || strstr(r, "out of memory"));
    }
    if (refused) NSP_FUZZ_CHECK(ring_notes > 0);
    ret = nsp_job_analyze(job);
    NSP_FUZZ_CHECK(ret == 0 || ret == NSP_AN_ENOMEM);
    if (ret == 0) NSP_FUZZ_CHECK(nsp_report_text(job, devnull) == 0);
  }
  nsp_job_destroy(job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *trace = NULL, *ring = data;
  size_t tlen = 0, rlen = size;
  uint8_t bare[NSP_HEADER_SIZE];
  if (size >= 8 && memcmp(data, NSP_MAGIC, 8) == 0) {
    const uint8_t *m = memmem(data + 8, size - 8, NSP_RING_MAGIC, 8);
    trace = data;
    tlen = m ? (size_t)(m - data) : size;
    ring = data + tlen;
    rlen = size - tlen;
  } else {
    memset(bare, 0, sizeof bare);
    memcpy(bare, NSP_MAGIC, 8);
    bare[8] = NSP_FORMAT_MAJOR;
    bare[10] = NSP_FORMAT_MINOR;
    bare[12] = NSP_HEADER_SIZE;
    if (size >= 72) {
      memcpy(bare + 16, data + 64, 8); /* realtime_ns: the ring's trace_realtime_ns */
      memcpy(bare + 24, data + 64, 8); /* monotonic_ns */
      memcpy(bare + 32, data + 56, 4); /* pid */
    }
    memcpy(bare + 48, "fuzz", 4);
    trace = bare;
    tlen = sizeof bare;
  }
  /* The header as the reader takes it (common/nsp_reader.c). */
  struct nsp_file_header h;
  memset(&h, 0, sizeof h);
  if (tlen >= 40) {
    h.realtime_ns = le(trace + 16, 8);
    h.monotonic_ns = le(trace + 24, 8);
    h.pid = (uint32_t)le(trace + 32, 4);
  }
  int refused = read_mem(ring, rlen, &h);
  analyze_files(trace, tlen, ring, rlen, refused);
  return 0;
}
