/* The definition after next_a's (see next_a.c). */
int pump_probe_which(void) { return 'b'; }
