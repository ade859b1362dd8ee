/* symlib_cxx.c - a shared library without debug information whose one
 * function has a C++ symbol name, as libtorch's functions do:
 * test_an_symbolize.c checks the analyzer names it demangled. */
int nsp_symlib_cxx(int x) __asm__("_ZN4c10d16ProcessGroupNCCL10collectiveIiEEiPi");

__attribute__((noinline, visibility("default"))) int nsp_symlib_cxx(int x) { return x + 1; }
