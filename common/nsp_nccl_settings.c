/* nsp_nccl_settings.c - lookups in the table of NCCL's environment
 * variables (nsp_nccl_settings.h). */
#include "nsp_nccl_settings.h"

#include <stdlib.h>
#include <string.h>

struct row {
  const char *name;
  enum nsp_setting_class cls;
  const char *meaning;
};

#define NSP_SETTING_ROW(name, cls, meaning) {name, cls, meaning},
static const struct row rows[] = {NSP_NCCL_SETTINGS(NSP_SETTING_ROW)};
#undef NSP_SETTING_ROW

static int cmp_row(const void *key, const void *elem) { return strcmp(key, ((const struct row *)elem)->name); }

enum nsp_setting_class nsp_nccl_setting_class(const char *name, const char **meaning) {
  /* The rows are sorted by name (tests/unit/test_nccl_settings.c). */
  const struct row *r = bsearch(name, rows, sizeof rows / sizeof *rows, sizeof *rows, cmp_row);
  if (meaning) *meaning = r ? r->meaning : "";
  if (r) return r->cls;
  return strstr(name, "RANK") ? NSP_SETTING_RANK : NSP_SETTING_UNKNOWN;
}

const char *nsp_setting_class_name(enum nsp_setting_class c) {
  switch (c) {
    case NSP_SETTING_MATCH: return "must match";
    case NSP_SETTING_HOST: return "per host";
    case NSP_SETTING_RANK: return "rank-specific";
    case NSP_SETTING_DIAG: return "diagnostics";
    default: return "unknown";
  }
}
