// Where the exported CUSTOM hook running on this thread was called from (its return
// address), while it runs: allocation hooks ask which library wants the memory.
#pragma once

namespace pump::interpose {

inline thread_local const void* t_hook_caller = nullptr;

class HookCallerScope {
 public:
  explicit HookCallerScope(const void* caller) : previous_(t_hook_caller) { t_hook_caller = caller; }
  ~HookCallerScope() { t_hook_caller = previous_; }
  HookCallerScope(const HookCallerScope&) = delete;
  HookCallerScope& operator=(const HookCallerScope&) = delete;

 private:
  const void* previous_;
};

}  // namespace pump::interpose
