/* test_buildid.c - the shim's build-id reader (shim/nsp_buildid.c, compiled
 * in): the build-id of this program as linked (--build-id=0x...), read
 * from memory; none for a module linked without one; and notes laid out
 * by hand: other notes before it, 8-byte padding, and malformed sizes. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "nsp_shim.h"

static int checks, failures;
static void check(int ok, const char *what) {
  printf("%s %d - %s\n", ok ? "ok" : "not ok", ++checks, what);
  failures += !ok;
}

struct find {
  const char *name; /* NULL: the main program (the first object) */
  char hex[128];
  size_t n;
  int found;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct find *f = arg;
  if (f->name ? !info->dlpi_name || !strstr(info->dlpi_name, f->name) : 0) return 0;
  f->n = nsp_buildid_of(info, f->hex, sizeof f->hex);
  f->found = 1;
  return 1;
}

/* One note: header, name padded, desc padded, at buf + *at. */
static void put_note(unsigned char *buf, size_t *at, size_t align, uint32_t type, const char *name, size_t namesz,
                     const void *desc, size_t descsz) {
  ElfW(Nhdr) nh = {(uint32_t)namesz, (uint32_t)descsz, type};
  memcpy(buf + *at, &nh, sizeof nh);
  *at += sizeof nh;
  memcpy(buf + *at, name, namesz);
  *at += (namesz + align - 1) & ~(align - 1);
  memcpy(buf + *at, desc, descsz);
  *at += (descsz + align - 1) & ~(align - 1);
}

/* nsp_buildid_of over one PT_NOTE segment of len bytes at buf. */
static size_t of_notes(const unsigned char *buf, size_t len, size_t align, char *hex, size_t cap) {
  ElfW(Phdr) ph;
  memset(&ph, 0, sizeof ph);
  ph.p_type = PT_NOTE;
  ph.p_vaddr = (uintptr_t)buf;
  ph.p_memsz = ph.p_filesz = len;
  ph.p_align = align;
  struct dl_phdr_info info;
  memset(&info, 0, sizeof info);
  info.dlpi_phdr = &ph;
  info.dlpi_phnum = 1;
  return nsp_buildid_of(&info, hex, cap);
}

int main(int argc, char **argv) {
  printf("1..8\n");
  struct find f = {0};
  dl_iterate_phdr(find_cb, &f);
  check(f.found && f.n == 20 && !strcmp(f.hex, "0123456789abcdef0011"), "this program's build-id, as linked");
  printf("# read %s\n", f.hex);

  struct find g = {.name = "nsp_nobuildid"};
  void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
  if (h) dl_iterate_phdr(find_cb, &g);
  check(h && g.found && g.n == 0 && !g.hex[0], "a module linked with --build-id=none has none");

  _Alignas(8) unsigned char buf[256];
  char hex[64];
  size_t at = 0;
  const unsigned char id[4] = {0xde, 0xad, 0xbe, 0xef}, prop[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  put_note(buf, &at, 4, NT_GNU_PROPERTY_TYPE_0, "GNU", 4, prop, 8);
  put_note(buf, &at, 4, NT_GNU_BUILD_ID, "XYZ", 4, prop, 3); /* not GNU's */
  put_note(buf, &at, 4, NT_GNU_BUILD_ID, "GNU", 4, id, 4);
  check(of_notes(buf, at, 4, hex, sizeof hex) == 8 && !strcmp(hex, "deadbeef"), "found after other notes");

  size_t at8 = 0;
  put_note(buf, &at8, 8, NT_GNU_BUILD_ID, "GNUX", 5, prop, 1); /* padded to 8 */
  put_note(buf, &at8, 8, NT_GNU_BUILD_ID, "GNU", 4, id, 4);
  check(of_notes(buf, at8, 8, hex, sizeof hex) == 8 && !strcmp(hex, "deadbeef"), "8-byte padded notes");

  check(of_notes(buf, at, 4, hex, 8) == 0 && !hex[0], "no room for the digits and NUL: none");
  check(of_notes(buf, at - 1, 4, hex, sizeof hex) == 0, "a note cut short: none");

  size_t bad = 0;
  put_note(buf, &bad, 4, NT_GNU_BUILD_ID, "GNU", 4, id, 4);
  ElfW(Nhdr) nh;
  memcpy(&nh, buf, sizeof nh);
  nh.n_descsz = 0xfffffffeu; /* wraps when padded on 32-bit sizes */
  memcpy(buf, &nh, sizeof nh);
  check(of_notes(buf, bad, 4, hex, sizeof hex) == 0, "a huge descsz: none, no read past the segment");
  check(of_notes(buf, 0, 4, hex, sizeof hex) == 0 && !hex[0], "an empty segment: none");
  return failures ? 1 : 0;
}
