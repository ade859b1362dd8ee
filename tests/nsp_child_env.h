/* nsp_child_env.h - the environment of a test's child process, built in
 * the parent before fork(), so that the child only execve()s it: setenv
 * between fork and exec allocates, which is not safe in a child of a
 * process with threads (and under ASan crashed inside its allocator).
 *
 *   struct nsp_child_env e;
 *   nsp_child_env_init(&e);                 // a copy of environ
 *   nsp_child_env_set(&e, "RANK", "0");     // replaces or adds NAME=value
 *   nsp_child_env_unset(&e, "LD_PRELOAD");
 *   pid = fork(); if (!pid) { execve(path, argv, e.v); _exit(127); }
 *   nsp_child_env_free(&e);
 *
 * Out of memory aborts the test (these are test programs). */
#ifndef NSP_CHILD_ENV_H
#define NSP_CHILD_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

struct nsp_child_env {
  char **v; /* NULL-terminated "NAME=value" strings, owned */
  size_t n, cap;
};

static inline void nsp_child_env_oom(void *p) {
  if (!p) {
    fprintf(stderr, "nsp_child_env: out of memory\n");
    abort();
  }
}

static inline void nsp_child_env_push(struct nsp_child_env *e, char *s) {
  if (e->n + 2 > e->cap) {
    e->cap = e->cap ? 2 * e->cap : 64;
    e->v = realloc(e->v, e->cap * sizeof *e->v);
    nsp_child_env_oom(e->v);
  }
  e->v[e->n++] = s;
  e->v[e->n] = NULL;
}

static inline void nsp_child_env_init(struct nsp_child_env *e) {
  memset(e, 0, sizeof *e);
  e->cap = 64;
  e->v = malloc(e->cap * sizeof *e->v);
  nsp_child_env_oom(e->v);
  e->v[0] = NULL;
  for (char **p = environ; p && *p; p++) {
    char *s = strdup(*p);
    nsp_child_env_oom(s);
    nsp_child_env_push(e, s);
  }
}

/* The value of name in e, or NULL. */
static inline const char *nsp_child_env_get(const struct nsp_child_env *e, const char *name) {
  size_t len = strlen(name);
  for (size_t i = 0; i < e->n; i++)
    if (!strncmp(e->v[i], name, len) && e->v[i][len] == '=') return e->v[i] + len + 1;
  return NULL;
}

static inline void nsp_child_env_unset(struct nsp_child_env *e, const char *name) {
  size_t len = strlen(name), k = 0;
  for (size_t i = 0; i < e->n; i++) {
    if (!strncmp(e->v[i], name, len) && e->v[i][len] == '=') free(e->v[i]);
    else e->v[k++] = e->v[i];
  }
  e->n = k;
  e->v[k] = NULL;
}

static inline void nsp_child_env_set(struct nsp_child_env *e, const char *name, const char *value) {
  nsp_child_env_unset(e, name);
  size_t len = strlen(name) + strlen(value) + 2;
  char *s = malloc(len);
  nsp_child_env_oom(s);
  snprintf(s, len, "%s=%s", name, value);
  nsp_child_env_push(e, s);
}

/* "NAME=value" (a copy is taken). */
static inline void nsp_child_env_put(struct nsp_child_env *e, const char *assignment) {
  const char *eq = strchr(assignment, '=');
  if (!eq) return;
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)(eq - assignment), assignment);
  nsp_child_env_set(e, name, eq + 1);
}

static inline void nsp_child_env_free(struct nsp_child_env *e) {
  for (size_t i = 0; i < e->n; i++) free(e->v[i]);
  free(e->v);
  memset(e, 0, sizeof *e);
}

#endif /* NSP_CHILD_ENV_H */
