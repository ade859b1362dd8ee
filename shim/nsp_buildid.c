/* nsp_buildid.c - a loaded module's GNU build-id (NT_GNU_BUILD_ID), read
 * from its PT_NOTE segments in memory, as dl_iterate_phdr describes the
 * module: no file is opened, so a call site never waits on a filesystem.
 * The analyzer compares it with the build-id of the file it finds at the
 * module's path (MODULE records, analyzer/model/nsp_an_symbolize.c). */
#include <elf.h>
#include <link.h>
#include <string.h>

#include "nsp_shim.h"

/* Note entries are padded to 4 bytes, or 8 in segments aligned to 8
 * (.note.gnu.property on 64-bit). */
static size_t pad(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

size_t nsp_buildid_of(const struct dl_phdr_info *info, char *hex, size_t cap) {
  static const char digits[] = "0123456789abcdef";
  if (cap) hex[0] = 0;
  for (int i = 0; info->dlpi_phdr && i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    size_t align = ph->p_align == 8 ? 8 : 4;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    size_t len = ph->p_memsz, at = 0;
    while (len - at >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) nh;
      memcpy(&nh, p + at, sizeof nh);
      at += sizeof nh;
      size_t name = pad(nh.n_namesz, align), desc = pad(nh.n_descsz, align);
      if (name < nh.n_namesz || desc < nh.n_descsz || name > len - at || desc > len - at - name) break; /* malformed */
      const unsigned char *d = p + at + name;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(p + at, "GNU", 4)) {
        if (!nh.n_descsz || 2 * (size_t)nh.n_descsz + 1 > cap) return 0;
        for (size_t k = 0; k < nh.n_descsz; k++) {
          hex[2 * k] = digits[d[k] >> 4];
          hex[2 * k + 1] = digits[d[k] & 15];
        }
        hex[2 * nh.n_descsz] = 0;
        return 2 * (size_t)nh.n_descsz;
      }
      at += name + desc;
    }
  }
  return 0;
}
