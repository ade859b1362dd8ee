/* nsp_bench_py.c - CPU cost of Python call sites per collective.
 *
 * Embeds the interpreter (python3-embed), runs Python functions nested
 * `depth` deep (default 8; argument 3) whose innermost calls a C function
 * that releases the GIL, as PyTorch does around NCCL, and loops 4-byte
 * all-reduces through the shim on the CPU stand-in for NCCL (1 rank,
 * records only).  Python sites on and off are measured on one
 * communicator in one process, in interleaved rounds: the shim reads a
 * bench-mode file per call (NCCLSPY_BENCH_MODE_FILE), whose second byte
 * 'p' leaves Python sites out.  Medians of the rounds; the difference is
 * what Python sites add per call.
 *
 *   build/bench/nsp_bench_py build/shim/libncclspy.so [rounds [depth]] */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nsp_bench_stats.h"
#include "nsp_nccl.h"

NSP_NCCL_DECLARE(nccl)

#define CALLS 5000

static int rounds = 21;
static volatile char *mode; /* the bench-mode file, mapped */
static ncclComm_t comm;

/* One round of CALLS all-reduces: ns per call. */
static double round_ns(void) {
  static float x = 1, y;
  uint64_t t0 = nsp_bench_now_ns();
  for (int i = 0; i < CALLS; i++) ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, comm, NULL);
  return (double)(nsp_bench_now_ns() - t0) / CALLS;
}

static PyObject *loop(PyObject *self, PyObject *args) {
  (void)self;
  (void)args;
  double on[128], off[128];
  Py_BEGIN_ALLOW_THREADS;
  mode[1] = 0;
  round_ns(); /* warm: the site is made */
  for (int r = 0; r < rounds; r++) {
    mode[1] = 0;
    on[r] = round_ns();
    mode[1] = 'p';
    off[r] = round_ns();
  }
  Py_END_ALLOW_THREADS;
  double a = nsp_bench_median(on, rounds), b = nsp_bench_median(off, rounds);
  return Py_BuildValue("(dd)", a, b);
}

static PyMethodDef methods[] = {{"loop", loop, METH_NOARGS, "the interleaved rounds"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nspbench", NULL, -1, methods, NULL, NULL, NULL, NULL};
static PyObject *init_module(void) { return PyModule_Create(&module); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBNCCLSPY [rounds [depth]]\n", argv[0]);
    return 2;
  }
  if (!getenv("NSP_BENCH_PY_CHILD")) { /* again, with the shim preloaded */
    setenv("LD_PRELOAD", argv[1], 1);
    setenv("NSP_BENCH_PY_CHILD", "1", 1);
    execv("/proc/self/exe", argv);
    perror("execv");
    return 1;
  }
  if (argc > 2) rounds = atoi(argv[2]);
  if (rounds < 1 || rounds > 128) rounds = 21;
  int depth = argc > 3 ? atoi(argv[3]) : 8;
  if (depth < 1 || depth > 64) depth = 8;
  char dir[] = "/tmp/nsp-bench-py-XXXXXX", file[64];
  if (!mkdtemp(dir)) return 1;
  snprintf(file, sizeof file, "%s/mode", dir);
  int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, "1\0\0\0", 4) != 4) return 1;
  mode = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mode == MAP_FAILED) return 1;
  setenv("NCCLSPY_BENCH_MODE_FILE", file, 1);
  setenv("NCCLSPY_DIR", dir, 1);
  setenv("NCCLSPY_CALLSITES", "0", 1); /* native sites apart */
  setenv("NCCLSPY_RING", "262144", 1); /* the writer keeps up: no drops */

  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 1;

  PyImport_AppendInittab("nspbench", init_module);
  Py_Initialize();
  /* f1 calls f2 ... f<depth> calls nspbench.loop(). */
  char src[8192];
  size_t n = 0;
  n += (size_t)snprintf(src + n, sizeof src - n, "import nspbench\n");
  for (int i = 1; i <= depth; i++)
    n += (size_t)snprintf(src + n, sizeof src - n, "def f%d():\n    return %s\n", i,
                          i == depth ? "nspbench.loop()" : "");
  for (int i = 1; i < depth; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%d()", i + 1);
    /* "return " above gets the next call appended */
    char *at = strstr(src, "return \n");
    if (!at) break;
    memmove(at + 7 + strlen(name), at + 7, strlen(at + 7) + 1);
    memcpy(at + 7, name, strlen(name));
  }
  snprintf(src + strlen(src), sizeof src - strlen(src), "on, off = f1()\n");
  PyObject *globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject *res = PyRun_String(src, Py_file_input, globals, globals);
  if (!res) {
    PyErr_Print();
    return 1;
  }
  double on = PyFloat_AsDouble(PyDict_GetItemString(globals, "on"));
  double off = PyFloat_AsDouble(PyDict_GetItemString(globals, "off"));
  printf("CPU cost per 4-byte all-reduce through the shim (records only), Python %s, a Python stack %d deep,\n"
         "median of %d interleaved rounds of %d calls: Python sites on %.1f ns/call, off %.1f ns/call, added %.1f ns/call\n",
         Py_GetVersion(), depth, rounds, CALLS, on, off, on - off);
  Py_DECREF(res);
  Py_DECREF(globals);
  ncclCommDestroy(comm);
  Py_Finalize();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) ? 1 : 0;
}
