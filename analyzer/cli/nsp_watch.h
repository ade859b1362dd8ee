/* nsp_watch.h - `ncclspy watch` (nsp_watch.c): a job's traces analysed
 * again every few seconds while it runs. */
#ifndef NSP_WATCH_H
#define NSP_WATCH_H

#include "nsp_analyze.h"

/* `ncclspy watch [--interval S] [--hang-after S] DIR` (argv[0] "watch"):
 * reads DIR every interval, keeps a status line, prints the text report
 * when the first finding appears or changes, and ends when every process
 * has ended (or at SIGINT/SIGTERM) with the final report.  status(job)
 * gives the exit status of an analysed job as `analyze` gives it.
 * Returns it; 2 on a usage error or when DIR never held a trace. */
int nsp_cmd_watch(int argc, char **argv, int (*status)(const struct nsp_job *job));

/* Its help text. */
extern const char nsp_usage_watch[];

#endif /* NSP_WATCH_H */
