/* nsp_run.h - `ncclspy run` and `ncclspy shim-path` (nsp_run.c). */
#ifndef NSP_RUN_H
#define NSP_RUN_H

#include <stddef.h>

/* The shim's absolute path, found next to this command (installed:
 * BINDIR/../LIBDIR/libncclspy.so; build tree: ../shim/libncclspy.so;
 * beside it) into out (cap bytes).  0, or -1 when it is not there. */
int nsp_shim_path(char *out, size_t cap);

/* `ncclspy run [--no-analyze] [-d DIR] -- COMMAND...` (argv[0] "run"):
 * runs COMMAND under the shim, then analyze(DIR) unless told not to, or
 * on a launcher's rank other than 0.  Returns COMMAND's exit status (or
 * ends by the signal that ended it), 2 on a usage error, 126/127 when
 * COMMAND could not be run. */
int nsp_cmd_run(int argc, char **argv, int (*analyze)(const char *dir));

/* Its help text. */
extern const char *const nsp_usage_run;

#endif /* NSP_RUN_H */
