/* symlib.c - a shared library with debug information whose code position
 * test_an_symbolize.c looks up: the return address of a call made on a
 * known line. */
void *nsp_symlib_caller(int *line);

static __attribute__((noinline)) void *return_address(void) {
  void *ra = __builtin_return_address(0);
  __asm__ volatile("" : "+r"(ra));
  return ra;
}

__attribute__((noinline, visibility("default"))) void *nsp_symlib_caller(int *line) {
  void *ra = return_address(); *line = __LINE__; /* the call and its line: one line */
  __asm__ volatile("" ::: "memory"); /* no tail call */
  return ra;
}
