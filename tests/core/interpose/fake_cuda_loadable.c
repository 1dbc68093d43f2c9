/* Loaded by the test with dlopen(RTLD_LOCAL), the way PyTorch loads cuDNN: invisible
 * to RTLD_NEXT, reachable only through its soname. */
__attribute__((visibility("default"))) int pump_fake_local_symbol(void) { return 9; }

/* A program's own function that happens to carry a CUDA runtime name: lookups of it
 * through this library's handle must stay this library's. */
__attribute__((visibility("default"))) int cudaMalloc(void** p, unsigned long n) {
  (void)p;
  (void)n;
  return 42;
}
