/* In the scope of scoped.c's library only (see there). */
int pump_probe_scoped_dep_only(void) { return 5; }
