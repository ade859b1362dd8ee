/* test_sites.c - call sites: two functions that all-reduce get two sites
 * whose frames name them, each recorded once however often it is called,
 * and a failing call gets a full stack of its own.  Each module a site's
 * frames name has a MODULE record before that site, with its build-id; the
 * program's own frames name it by /proc/self/exe's target.
 * Run with LD_PRELOAD=libncclspy.so; built with -rdynamic so that dladdr
 * can name this program's functions. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsp_nccl.h"
#include "nsp_reader.h"

NSP_NCCL_DECLARE(nccl)

__attribute__((noinline, visibility("default"))) void nsp_test_site_forward(ncclComm_t comm);
__attribute__((noinline, visibility("default"))) void nsp_test_site_backward(ncclComm_t comm);

void nsp_test_site_forward(ncclComm_t comm) {
  float x = 1, y;
  ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, comm, NULL);
  __asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */
}

void nsp_test_site_backward(ncclComm_t comm) {
  float x = 1, y;
  ncclBroadcast(&x, &y, 1, ncclFloat32, 0, comm, NULL);
  __asm__ volatile("" ::: "memory");
}

static int checks, failures;
static void check(int ok, const char *what) {
  printf("%s %d - %s\n", ok ? "ok" : "not ok", ++checks, what);
  failures += !ok;
}

int main(void) {
  char dir[] = "/tmp/nsp-sites-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  setenv("NCCLSPY_DIR", dir, 1);
  pid_t pid = fork();
  if (pid == 0) {
    ncclUniqueId id;
    ncclComm_t comm;
    if (ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0)) _exit(3);
    for (int i = 0; i < 200; i++) {
      nsp_test_site_forward(comm);
      nsp_test_site_backward(comm);
    }
    float x = 1;
    ncclAllReduce(&x, &x, 1, (ncclDataType_t)99, ncclSum, comm, NULL); /* invalid dtype: fails */
    ncclCommDestroy(comm);
    exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  printf("1..8\n");
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ran");
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4200] = "";
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".ncclspy") && !strstr(e->d_name, ".ring")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  char err[256];
  struct nsp_reader *r = path[0] ? nsp_reader_open(path, err, sizeof err) : NULL;
  struct nsp_rec rec;
  int sites = 0, full = 0, fwd_site = 0, bwd_site = 0, calls_with_site = 0, calls = 0, tracked = 0;
  /* MODULE records seen so far (path, build-id), and frames naming a module
   * none had named before them. */
  char modules[64][2][512];
  int nmodules = 0, unnamed = 0, module_dups = 0, exe_frames = 0, exe_id_ok = 0;
  char exe[512] = "";
  ssize_t xl = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[xl > 0 ? xl : 0] = 0;
  uint32_t fwd_id = 0, bwd_id = 0;
  while (r && nsp_reader_next(r, &rec) == 1) {
    if (rec.kind == NSP_REC_PROCESS) tracked = (rec.ext->tracking & NSP_TRACK_CALLSITES) != 0;
    if (rec.kind == NSP_REC_MODULE && nmodules < 64) {
      for (int m = 0; m < nmodules; m++) module_dups += !strcmp(modules[m][0], rec.ext->module_path);
      snprintf(modules[nmodules][0], 512, "%s", rec.ext->module_path);
      snprintf(modules[nmodules][1], 512, "%s", rec.ext->build_id);
      if (!strcmp(rec.ext->module_path, exe)) exe_id_ok = !strcmp(rec.ext->build_id, "00112233445566778899aabbccddeeff01234567");
      nmodules++;
    }
    if (rec.kind == NSP_REC_CALLSITE) {
      for (uint32_t i = 0; i < rec.ext->nframes; i++) {
        int named = 0;
        for (int m = 0; m < nmodules; m++) named |= !strcmp(modules[m][0], rec.ext->frame_module[i]);
        unnamed += !named;
        exe_frames += !strcmp(rec.ext->frame_module[i], exe);
      }
      sites++;
      full += (rec.flags & NSP_SITE_FULL) != 0;
      for (uint32_t i = 0; i < rec.ext->nframes; i++) {
        if (strstr(rec.ext->frame_symbol[i], "nsp_test_site_forward")) fwd_site = 1, fwd_id = rec.site;
        if (strstr(rec.ext->frame_symbol[i], "nsp_test_site_backward")) bwd_site = 1, bwd_id = rec.site;
      }
    }
    if (rec.kind == NSP_REC_CALL && (rec.api == NSP_API_AllReduce || rec.api == NSP_API_Broadcast)) {
      calls++;
      calls_with_site += rec.site != 0 && (rec.site == fwd_id || rec.site == bwd_id || rec.result != 0);
    }
  }
  nsp_reader_destroy(r);
  check(tracked, "the PROCESS record says call sites are recorded");
  check(fwd_site && bwd_site && fwd_id != bwd_id, "each function has its own site, naming it");
  check(sites == 3 && full == 1, "three sites in all (two, and the failing call's full stack)");
  check(calls == 401 && calls_with_site == 401, "every call names its site");
  printf("# %d sites (%d full), %d of %d calls with a site\n", sites, full, calls_with_site, calls);
  check(nmodules > 1 && !unnamed && !module_dups, "every module a site names has one MODULE record before it");
  check(exe_frames > 0, "the program's own frames name it by /proc/self/exe's target");
  check(exe_id_ok, "the program's MODULE record has its build-id, as linked");
  printf("# %d modules, %d frames before their module, %d of the program\n", nmodules, unnamed, exe_frames);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return failures ? 1 : 0;
}
