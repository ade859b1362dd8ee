/* nsp_fuzz_touch.h - reads every byte a decoded record points to, so that
 * a dangling or unterminated string in a record is caught by the sanitizer
 * in the target that decoded it (fuzz_reader.c, fuzz_ring.c).  Include once
 * per target. */
#ifndef NSP_FUZZ_TOUCH_H
#define NSP_FUZZ_TOUCH_H

#include <string.h>

#include "nsp_record.h"

static volatile size_t nsp_fuzz_sink; /* keeps the reads from being optimised out */

static void touch_str(const char *s) {
  if (s) nsp_fuzz_sink += strlen(s);
}

/* Every string of r and of its ext block, and every frame offset. */
static void touch(const struct nsp_rec *r) {
  touch_str(r->last_error);
  const struct nsp_rec_ext *x = r->ext;
  if (!x) return;
  touch_str(x->comm_name);
  touch_str(x->gpu_uuid);
  touch_str(x->gpu_pci_bus_id);
  touch_str(x->gpu_name);
  touch_str(x->host);
  touch_str(x->shim_version);
  touch_str(x->nccl_path);
  touch_str(x->launcher);
  for (uint32_t i = 0; x->env && i < 2 * x->nenv; i++) touch_str(x->env[i]);
  for (uint32_t i = 0; i < x->nframes; i++) {
    touch_str(x->frame_module[i]);
    touch_str(x->frame_symbol[i]);
    nsp_fuzz_sink += (size_t)x->frame_offset[i];
  }
}

#endif /* NSP_FUZZ_TOUCH_H */
