#include "core/interpose/dl_lookup_redirect.h"

#include <string_view>

#include "core/common/log.h"
#include "core/interpose/cuda_library_files.h"
#include "core/interpose/proc_address.h"
#include "core/interpose/real_symbols.h"

namespace pump::interpose {
namespace {

// Every hooked name starts with "cu" (cuda*, cudnn*, cublas*, cu[A-Z]*) or "__cuda":
// the many other lookups a process makes (Python extensions, plugins) stop here.
bool may_be_hooked(const char* name) {
  return (name[0] == 'c' && name[1] == 'u') || std::string_view(name).starts_with("__cuda");
}

}  // namespace

void* redirect_dl_lookup(const char* name, void* found) {
  if (found == nullptr || name == nullptr || !may_be_hooked(name)) return found;
  const std::optional<SymbolId> id = find_hook(name);
  if (!id || redirection_disabled()) return found;
  const char* file = file_of_address(found);
  if (hooked_library_of_file(file) != kSymbols[*id].library) return found;  // not that library's (or already ours)
  if (!adopt_real(*id, found)) {
    const char* adopted = file_of_address(g_real_symbols[*id].load(std::memory_order_acquire));
    // A library split over files (the cuDNN shim forwarding to its parts) is one copy: a
    // call into the other file is forwarded to, or came from, the one the hook calls.
    if (same_library_copy(file, adopted)) return found;
    PUMP_LOG_ONCE(LogLevel::kWarn,
                  "%s of %s is not intercepted: pump's hooks already call another copy of %s (%s); calls into "
                  "this copy pass by unseen (PUMP_LOG_LEVEL=debug names each)",
                  name, file, library_name(kSymbols[*id].library), adopted);
    if (log_level() >= LogLevel::kDebug)
      log(LogLevel::kDebug, "dlsym %s in %s: another copy, not intercepted", name, file);
    return found;
  }
  if (log_level() >= LogLevel::kDebug) log(LogLevel::kDebug, "dlsym %s in %s -> hook", name, file);
  return hook_address(*id);
}

}  // namespace pump::interpose
