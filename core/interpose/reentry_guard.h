// Calls made while a hook is already running on this thread (by libpump itself, or by
// a library inside a hooked call: cuDNN allocating, cuBLAS inside cuDNN) go straight
// to the real function: they are neither managed twice nor counted twice.
#pragma once

namespace pump::interpose {

inline thread_local int t_hook_depth = 0;

inline bool inside_hook() { return t_hook_depth != 0; }

class ReentryGuard {
 public:
  ReentryGuard() { ++t_hook_depth; }
  ~ReentryGuard() { --t_hook_depth; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
};

}  // namespace pump::interpose
