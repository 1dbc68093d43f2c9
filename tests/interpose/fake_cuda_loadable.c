/* Loaded by the test with dlopen(RTLD_LOCAL), the way PyTorch loads cuDNN: invisible
 * to RTLD_NEXT, reachable only through its soname. */
__attribute__((visibility("default"))) int pump_fake_local_symbol(void) { return 9; }
