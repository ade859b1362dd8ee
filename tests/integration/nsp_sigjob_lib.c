/* nsp_sigjob_lib.c - a module nsp_sigjob dlopens, then calls after
 * dlclose (mode dlclose): the call lands where the module was. */
void nsp_sigjob_lib_fn(void);
void nsp_sigjob_lib_fn(void) {
  __asm__ volatile("" ::: "memory");
}
