/* nsp_pythread.c - a native thread that calls NCCL while the Python
 * thread that asked for it waits (as PyTorch's autograd threads run DDP's
 * gradient all-reduce during backward()).  tests/cases/nsp_pynccl.py
 * loads it with ctypes (NSP_PYNCCL_THREAD) and passes the ncclAllReduce
 * it found; the call's result comes back. */
#include <pthread.h>
#include <stddef.h>

typedef int (*all_reduce_fn)(const void *, void *, size_t, int, int, void *, void *);

struct job {
  all_reduce_fn fn;
  const void *send;
  void *recv;
  size_t count;
  int dtype, op;
  void *comm, *stream;
  int result;
};

static void *run(void *p) {
  struct job *j = p;
  j->result = j->fn(j->send, j->recv, j->count, j->dtype, j->op, j->comm, j->stream);
  return NULL;
}

int nsp_pythread_all_reduce(all_reduce_fn fn, const void *send, void *recv, size_t count, int dtype,
                            int op, void *comm, void *stream);
int nsp_pythread_all_reduce(all_reduce_fn fn, const void *send, void *recv, size_t count, int dtype,
                            int op, void *comm, void *stream) {
  struct job j = {fn, send, recv, count, dtype, op, comm, stream, -1};
  pthread_t t;
  if (pthread_create(&t, NULL, run, &j)) return -1;
  pthread_join(t, NULL);
  return j.result;
}

/* A native thread that makes `calls` all-reduces one after another while
 * the Python thread that started it runs on (an XLA executor beside the
 * main thread): nsp_pythread_start, then nsp_pythread_join for the number
 * of calls that succeeded. */
struct loop {
  struct job j;
  int calls, ok;
  pthread_t t;
};

static void *run_loop(void *p) {
  struct loop *l = p;
  for (int i = 0; i < l->calls; i++) {
    run(&l->j);
    if (l->j.result == 0) l->ok++;
  }
  return NULL;
}

static struct loop nsp_loop;

int nsp_pythread_start(all_reduce_fn fn, const void *send, void *recv, size_t count, int dtype, int op, void *comm,
                       void *stream, int calls);
int nsp_pythread_start(all_reduce_fn fn, const void *send, void *recv, size_t count, int dtype, int op, void *comm,
                       void *stream, int calls) {
  nsp_loop = (struct loop){{fn, send, recv, count, dtype, op, comm, stream, -1}, calls, 0, 0};
  return pthread_create(&nsp_loop.t, NULL, run_loop, &nsp_loop) ? -1 : 0;
}

int nsp_pythread_join(void);
int nsp_pythread_join(void) {
  pthread_join(nsp_loop.t, NULL);
  return nsp_loop.ok;
}
