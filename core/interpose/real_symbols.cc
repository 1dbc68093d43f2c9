#include "core/interpose/real_symbols.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "core/common/log.h"

namespace pump::interpose {

std::atomic<void*> g_real_symbols[kSymbolCount];

namespace {

std::atomic<bool> g_reported_missing[kSymbolCount];

bool same_object(const void* a, const void* b) {
  Dl_info ia{}, ib{};
  if (!dladdr(a, &ia) || !dladdr(b, &ib)) return false;
  return ia.dli_fbase == ib.dli_fbase;
}

void* lookup_in(void* handle, const char* name, const void* self) {
  void* p = dlsym(handle, name);
  if (p && self && same_object(p, self)) return nullptr;  // our own hook: keep looking
  return p;
}

}  // namespace

const void* self_address() { return reinterpret_cast<const void*>(&self_address); }

void* find_symbol(const char* name, const char* const* sonames, size_t count, const void* self) {
  if (void* p = lookup_in(RTLD_NEXT, name, self)) return p;
  for (size_t i = 0; i < count; ++i) {
    // NOLOAD: find the copy the application already loaded (RTLD_LOCAL included), never load one.
    void* handle = dlopen(sonames[i], RTLD_NOLOAD | RTLD_LAZY);
    if (!handle) continue;
    void* p = lookup_in(handle, name, self);
    dlclose(handle);  // drops only the reference NOLOAD added
    if (p) return p;
  }
  return nullptr;
}

namespace {

void* resolve(SymbolId id, bool report_missing) {
  if (id >= kSymbolCount) return nullptr;
  const SymbolInfo& info = kSymbols[id];
  size_t count = 0;
  const char* const* sonames = library_sonames(info.library, &count);
  void* p = find_symbol(info.name, sonames, count, self_address());
  if (!p) {
    if (report_missing && !g_reported_missing[id].exchange(true)) {
      log(LogLevel::kError,
          "real %s not found (library %s is not loaded, or does not define it): the call returns the library's "
          "not-initialized error",
          info.name, library_name(info.library));
    }
    return nullptr;
  }
  void* expected = nullptr;
  // Another thread (or cuGetProcAddress) may have won: keep the first value, they agree.
  if (!g_real_symbols[id].compare_exchange_strong(expected, p, std::memory_order_acq_rel)) return expected;
  return p;
}

}  // namespace

void* resolve_real(SymbolId id) { return resolve(id, true); }

void* resolve_real_if_loaded(SymbolId id) { return resolve(id, false); }

void set_real(SymbolId id, void* fn, bool replace) {
  if (id >= kSymbolCount || !fn || same_object(fn, self_address())) return;
  if (replace) {
    g_real_symbols[id].store(fn, std::memory_order_release);
    return;
  }
  void* expected = nullptr;
  g_real_symbols[id].compare_exchange_strong(expected, fn, std::memory_order_acq_rel);
}

bool adopt_real(SymbolId id, void* fn) {
  if (id >= kSymbolCount || !fn || same_object(fn, self_address())) return false;
  void* known = nullptr;
  if (g_real_symbols[id].compare_exchange_strong(known, fn, std::memory_order_acq_rel)) return true;
  return known == fn || same_object(known, fn);
}

void* real_symbol_by_name(const char* name) {
  if (!name) return nullptr;
  if (auto id = find_hook(name)) {
    void* p = g_real_symbols[*id].load(std::memory_order_acquire);
    return p ? p : resolve_real(*id);
  }
  static std::mutex mutex;
  static auto* cache = new std::unordered_map<std::string, void*>();
  std::lock_guard lock(mutex);
  if (auto it = cache->find(name); it != cache->end() && it->second) return it->second;
  void* found = nullptr;
  for (Library lib :
       {Library::kDriver, Library::kCudart, Library::kCudnn, Library::kCublas, Library::kCublasLt, Library::kNccl}) {
    size_t count = 0;
    const char* const* sonames = library_sonames(lib, &count);
    if ((found = find_symbol(name, sonames, count, self_address()))) break;
  }
  if (found) (*cache)[name] = found;  // a miss is retried: the library may load later
  return found;
}

}  // namespace pump::interpose
