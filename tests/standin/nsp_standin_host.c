/* nsp_standin_host.c - a host name per process, so that the ranks of a job
 * on one machine look like ranks on several nodes: preloaded (after
 * libncclspy.so) into the ranks of a test job, it answers gethostname()
 * with NSP_STANDIN_HOST.  The shim takes the host of its trace from
 * gethostname() and the CUDA stand-in hashes it into its default GPU
 * UUIDs, so a rank given another host name has other GPUs, as on another
 * node.  Only gethostname() is faked (not uname()).
 *
 * Environment
 * -----------
 * NSP_STANDIN_HOST  the host name gethostname() reports; unset or empty:
 *                   the real one */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((visibility("default"))) int gethostname(char *name, size_t len)
{
  const char *fake = getenv("NSP_STANDIN_HOST");
  size_t n;
  if (!fake || !*fake) {
    int (*real)(char *, size_t);
    void *f = dlsym(RTLD_NEXT, "gethostname");
    if (!f) {
      errno = ENOSYS;
      return -1;
    }
    memcpy(&real, &f, sizeof real);
    return real(name, len);
  }
  n = strlen(fake);
  if (n + 1 > len) {
    /* As glibc: truncated, and ENAMETOOLONG. */
    if (len) {
      memcpy(name, fake, len - 1);
      name[len - 1] = 0;
    }
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(name, fake, n + 1);
  return 0;
}
