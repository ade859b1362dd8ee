/* nsp_report_capture.h - a report written into memory, for tests that
 * assert on its text: nsp_report_capture(nsp_report_text, job) or
 * nsp_report_capture(nsp_report_perf_text, job).  Include after cmocka.h
 * and nsp_report.h.  Returns the text (the caller frees it); fails the
 * test when the stream cannot be made or the writer fails.  With
 * NSP_VERBOSE set, the whole text also goes to stderr (failures cut long
 * messages short). */
#ifndef NSP_REPORT_CAPTURE_H
#define NSP_REPORT_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>

/* Not inlined: GCC then takes the stream's buffer for a local that
 * dangles (-Wdangling-pointer). */
__attribute__((noinline, unused)) static char *nsp_report_capture(int (*write)(const struct nsp_job *job, FILE *out),
                                                                  const struct nsp_job *job) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(write(job, f), 0);
  assert_int_equal(fclose(f), 0);
  if (getenv("NSP_VERBOSE")) fputs(buf, stderr);
  return buf;
}

#endif /* NSP_REPORT_CAPTURE_H */
