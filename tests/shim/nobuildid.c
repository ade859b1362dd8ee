/* nobuildid.c - a module linked with --build-id=none (test_buildid.c). */
__attribute__((visibility("default"))) int nsp_nobuildid_value(void);
__attribute__((visibility("default"))) int nsp_nobuildid_value(void) { return 14; }
