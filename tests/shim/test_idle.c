/* test_idle.c - a process that loads the shim but never calls NCCL
 * starts no thread and writes no file, during its life or at exit.
 * Run with LD_PRELOAD=libncclspy.so; argv[1] is a program that calls no
 * NCCL, run the same way to see its exit. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int threads(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const char *preload = getenv("LD_PRELOAD");
  int failed = 0;
  char dir[] = "/tmp/nsp-idle-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char trace[64];
  snprintf(trace, sizeof trace, "%s/trace", dir);
  setenv("NCCLSPY_DIR", trace, 1);
  printf("1..3\n");
  int ok = preload && strstr(preload, "ncclspy") != NULL;
  printf("%s 1 - the shim is preloaded (LD_PRELOAD=%s)\n", ok ? "ok" : "not ok", preload ? preload : "");
  failed += !ok;
  int n = threads();
  printf("%s 2 - one thread while no NCCL call was made (%d)\n", n == 1 ? "ok" : "not ok", n);
  failed += n != 1;
  pid_t pid = fork();
  if (pid == 0) {
    execl(argv[1], argv[1], (char *)NULL);
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  struct stat st;
  int exists = stat(trace, &st) == 0;
  printf("%s 3 - a child that never called NCCL exited %d and left no trace directory\n",
         !exists && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "not ok",
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  failed += exists || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return failed ? 1 : 0;
}
