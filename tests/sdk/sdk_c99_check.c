/* Compiled with -std=c99 -pedantic -Werror: proves the SDK is plain C99. */
#include "pump/pump_sdk.h"

/* Referenced by sdk_abi_test so the object is linked, not just compiled. */
size_t pump_c99_sizeof_policy(void) { return sizeof(pump_policy_t); }
size_t pump_c99_sizeof_extractor(void) { return sizeof(pump_extractor_t); }
size_t pump_c99_sizeof_block(void) { return sizeof(pump_block_t); }
