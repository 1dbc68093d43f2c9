#include "core/interpose/glibc_dl_functions.h"

#include <elf.h>
#include <link.h>

#include <cstdint>

// Everything here runs before sanitizer runtimes are ready (their start-up resolves its
// interceptors through our dlsym).
namespace pump::interpose {
namespace {

PUMP_BEFORE_SANITIZERS bool same_string(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

PUMP_BEFORE_SANITIZERS bool starts_with(const char* s, const char* prefix) {
  while (*prefix != '\0' && *s == *prefix) ++s, ++prefix;
  return *prefix == '\0';
}

PUMP_BEFORE_SANITIZERS uint32_t gnu_hash(const char* name) {
  uint32_t h = 5381;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != '\0'; ++c) h = h * 33 + *c;
  return h;
}

PUMP_BEFORE_SANITIZERS uint32_t sysv_hash(const char* name) {
  uint32_t h = 0;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c != '\0'; ++c) {
    h = (h << 4) + *c;
    const uint32_t high = h & 0xf0000000u;
    if (high != 0) h ^= high >> 24;
    h &= ~high;
  }
  return h;
}

// One loaded object's dynamic symbol table, as its PT_DYNAMIC describes it.
struct DynamicSymbols {
  ElfW(Addr) base = 0;
  const ElfW(Sym) * symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const ElfW(Word) * sysv_hash = nullptr;
  const ElfW(Half) * versions = nullptr;  // DT_VERSYM: one entry per symbol
  const ElfW(Verdef) * definitions = nullptr;
};

// ld.so rewrites most of a loaded object's dynamic entries into addresses, but not all
// of them (DT_VERDEF), and none on targets whose dynamic section is read-only or in the
// vDSO: an entry below the load address is still an offset.
PUMP_BEFORE_SANITIZERS ElfW(Addr) address_of(ElfW(Addr) entry, ElfW(Addr) base) {
  return entry < base ? entry + base : entry;
}

PUMP_BEFORE_SANITIZERS bool read_dynamic(const link_map* object, DynamicSymbols* out) {
  if (object->l_ld == nullptr) return false;
  out->base = object->l_addr;
  for (const ElfW(Dyn)* d = object->l_ld; d->d_tag != DT_NULL; ++d) {
    const ElfW(Addr) at = address_of(d->d_un.d_ptr, out->base);
    switch (d->d_tag) {
      case DT_SYMTAB: out->symbols = reinterpret_cast<const ElfW(Sym)*>(at); break;
      case DT_STRTAB: out->strings = reinterpret_cast<const char*>(at); break;
      case DT_GNU_HASH: out->gnu_hash = reinterpret_cast<const uint32_t*>(at); break;
      case DT_HASH: out->sysv_hash = reinterpret_cast<const ElfW(Word)*>(at); break;
      case DT_VERSYM: out->versions = reinterpret_cast<const ElfW(Half)*>(at); break;
      case DT_VERDEF: out->definitions = reinterpret_cast<const ElfW(Verdef)*>(at); break;
      default: break;
    }
  }
  return out->symbols != nullptr && out->strings != nullptr && (out->gnu_hash != nullptr || out->sysv_hash != nullptr);
}

PUMP_BEFORE_SANITIZERS const char* version_name(const DynamicSymbols& table, ElfW(Half) index) {
  for (const ElfW(Verdef)* d = table.definitions; d != nullptr;) {
    if (d->vd_ndx == index) {
      const auto* aux = reinterpret_cast<const ElfW(Verdaux)*>(reinterpret_cast<const char*>(d) + d->vd_aux);
      return table.strings + aux->vda_name;
    }
    if (d->vd_next == 0) break;
    d = reinterpret_cast<const ElfW(Verdef)*>(reinterpret_cast<const char*>(d) + d->vd_next);
  }
  return nullptr;
}

// Keeps the best definition of one name seen so far: default version over hidden.
struct Candidate {
  void* address = nullptr;
  bool hidden = true;
};

PUMP_BEFORE_SANITIZERS void consider(const DynamicSymbols& table, uint32_t index, const char* name,
                                     const char* version_prefix, Candidate* best) {
  const ElfW(Sym)& s = table.symbols[index];
  // (ELF32_ST_TYPE is the same macro)
  if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC) return;
  if (!same_string(table.strings + s.st_name, name) || table.versions == nullptr) return;
  const ElfW(Half) version = table.versions[index];
  const ElfW(Half) version_index = version & 0x7fff;
  if (version_index < 2) return;  // 0: local, 1: unversioned global
  const char* version_text = version_name(table, version_index);
  if (version_text == nullptr || !starts_with(version_text, version_prefix)) return;
  const bool hidden = (version & 0x8000) != 0;
  if (best->address != nullptr && (hidden || !best->hidden)) return;
  best->address = reinterpret_cast<void*>(table.base + s.st_value);
  best->hidden = hidden;
}

PUMP_BEFORE_SANITIZERS void search(const DynamicSymbols& table, const char* name, const char* version_prefix,
                                   Candidate* best) {
  if (table.gnu_hash != nullptr) {
    const uint32_t buckets = table.gnu_hash[0], first_symbol = table.gnu_hash[1], bloom_words = table.gnu_hash[2];
    if (buckets == 0) return;
    const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(table.gnu_hash + 4);
    const auto* bucket = reinterpret_cast<const uint32_t*>(bloom + bloom_words);
    const uint32_t* chain = bucket + buckets;
    const uint32_t hash = gnu_hash(name);
    uint32_t index = bucket[hash % buckets];
    if (index < first_symbol) return;
    for (;; ++index) {
      const uint32_t entry = chain[index - first_symbol];
      if ((entry | 1) == (hash | 1)) consider(table, index, name, version_prefix, best);
      if ((entry & 1) != 0) return;  // last of its chain
    }
  }
  const ElfW(Word) buckets = table.sysv_hash[0];
  if (buckets == 0) return;
  const ElfW(Word)* bucket = table.sysv_hash + 2;
  const ElfW(Word)* chain = bucket + buckets;
  for (ElfW(Word) index = bucket[sysv_hash(name) % buckets]; index != STN_UNDEF; index = chain[index])
    consider(table, index, name, version_prefix, best);
}

void* g_dlsym = nullptr;  // cached; every thread that races here computes the same value
void* g_dlvsym = nullptr;

PUMP_BEFORE_SANITIZERS void* cached(void** slot, const char* name) {
  void* p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (p == nullptr) {
    p = find_versioned_function(name, "GLIBC_");
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
  }
  return p;
}

}  // namespace

PUMP_BEFORE_SANITIZERS void* find_versioned_function(const char* name, const char* version_prefix) {
  if (name == nullptr || version_prefix == nullptr) return nullptr;
  for (const link_map* object = _r_debug.r_map; object != nullptr; object = object->l_next) {
    DynamicSymbols table;
    if (!read_dynamic(object, &table)) continue;
    Candidate best;
    search(table, name, version_prefix, &best);
    if (best.address != nullptr) return best.address;
  }
  return nullptr;
}

PUMP_BEFORE_SANITIZERS DlsymFn glibc_dlsym() { return reinterpret_cast<DlsymFn>(cached(&g_dlsym, "dlsym")); }

PUMP_BEFORE_SANITIZERS DlvsymFn glibc_dlvsym() { return reinterpret_cast<DlvsymFn>(cached(&g_dlvsym, "dlvsym")); }

}  // namespace pump::interpose
