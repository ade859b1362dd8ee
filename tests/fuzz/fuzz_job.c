/* fuzz_job.c - fuzz target: bytes as the traces of one job.
 *
 * The input is cut into files before every "NCCLSPY\0" (a trace's magic),
 * so a seed is simply trace files concatenated; bytes before the first
 * magic make a file of their own.  At most NSP_FUZZ_FILES files (the last
 * one takes the rest).  Files are added from memory (nsp_job_add_mem),
 * alternately with and without ".rank<i>" in the name, then the job is
 * analysed and its performance figures computed (`ncclspy perf`), and the
 * text and JSON reports of both are written to /dev/null. */
#include <stdio.h>
#include <string.h>

#include "nsp_fuzz.h"
#include "nsp_report.h"
#include "ncclspy/trace.h"

#define NSP_FUZZ_FILES 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (!devnull && !(devnull = fopen("/dev/null", "w"))) return 0;
  struct nsp_job *job = nsp_job_create();
  if (!job) return 0;
  size_t start = 0;
  int nfiles = 0;
  while (start < size) {
    /* The next magic after this file's first byte ends the file. */
    size_t end = size;
    if (nfiles + 1 < NSP_FUZZ_FILES) {
      const uint8_t *m = size - start > 1 ? memmem(data + start + 1, size - start - 1, NSP_MAGIC, 8) : NULL;
      if (m) end = (size_t)(m - data);
    }
    char name[64];
    if (nfiles % 2) snprintf(name, sizeof name, "fuzz/f%d.ncclspy", nfiles);
    else snprintf(name, sizeof name, "fuzz/f%d.rank%d.ncclspy", nfiles, nfiles);
    int ret = nsp_job_add_mem(job, name, data + start, end - start);
    NSP_FUZZ_CHECK(ret == 1 || ret == NSP_AN_EREAD || ret == NSP_AN_ENOMEM);
    /* An unreadable file is named in a note. */
    if (ret == NSP_AN_EREAD) NSP_FUZZ_CHECK(nsp_job_nnotes(job) > 0 && strstr(nsp_job_error(job), name));
    nfiles++;
    start = end;
  }
  int ret = nsp_job_analyze(job);
  NSP_FUZZ_CHECK(ret == 0 || ret == NSP_AN_ENOMEM);
  if (ret == 0) {
    /* Damaged files are named, with their offset, in a note. */
    for (size_t i = 0; i < nsp_job_ntraces(job); i++) {
      const struct nsp_trace_info *t = nsp_job_trace(job, i);
      NSP_FUZZ_CHECK(!t->problem || strstr(t->problem, "byte "));
    }
    NSP_FUZZ_CHECK(nsp_report_text(job, devnull) == 0);
    int j = nsp_report_json(job, devnull);
    NSP_FUZZ_CHECK(j == 0);
    int p = nsp_job_perf(job);
    NSP_FUZZ_CHECK(p == 0 || p == NSP_AN_ENOMEM);
    if (p == 0) {
      NSP_FUZZ_CHECK(nsp_report_perf_text(job, devnull) == 0);
      j = nsp_report_perf_json(job, devnull);
      NSP_FUZZ_CHECK(j == 0);
    }
  }
  nsp_job_destroy(job);
  return 0;
}
