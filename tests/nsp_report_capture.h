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

/* The text and JSON reports of job (analysed), and perf's JSON report
 * when perf is set (nsp_job_perf run), one after another in one string
 * (the caller frees it): what tests compare across ways of reading. */
__attribute__((noinline, unused)) static char *nsp_report_capture_all(const struct nsp_job *job, int perf) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_true(nsp_report_text(job, f) >= 0);
  assert_true(nsp_report_json(job, f) >= 0);
  if (perf) assert_true(nsp_report_perf_json(job, f) >= 0);
  assert_int_equal(fclose(f), 0);
  return buf;
}

/* Prints the line where reports a and b first differ (cmocka prints
 * only the start of two unequal strings). */
__attribute__((unused)) static void nsp_report_first_diff(const char *what, const char *a, const char *b) {
  const char *x = a, *y = b;
  while (*x && *x == *y) x++, y++;
  while (x > a && x[-1] != '\n') x--, y--;
  print_message("# %s differ at:\n#  %.300s\n#  %.300s\n", what, x, y);
}

#endif /* NSP_REPORT_CAPTURE_H */
