// fork() copies a process whose other threads may hold an engine's lock, mid-update: the
// child's copy of that lock would stay taken for good (its PUMP_STATS report, written at
// exit, takes every engine's lock: the child hung) over half-done state. The fork guard
// takes every engine's lock before fork() and gives them back on both sides
// (pthread_atfork), so a child starts with every engine whole and unlocked.
#pragma once

namespace pump::interpose {

// Registers the guard once per process; later calls do nothing.
void install_fork_guard();

}  // namespace pump::interpose
