#include "core/interpose/hook_table.h"

#include <string>
#include <unordered_map>

namespace pump::interpose {

const char* library_name(Library library) {
  switch (library) {
    case Library::kCudart: return "cudart";
    case Library::kDriver: return "cuda driver";
    case Library::kCudnn: return "cudnn";
    case Library::kCublas: return "cublas";
    case Library::kCublasLt: return "cublasLt";
    case Library::kNccl: return "nccl";
  }
  return "?";
}

const char* const* library_sonames(Library library, size_t* count) {
  static const char* const cudart[] = {"libcudart.so.13"};
  static const char* const driver[] = {"libcuda.so.1"};
  // libcudnn.so.9 is the shim applications link; the sub-libraries define the same
  // functions (cudnnBackend* in libcudnn_graph.so.9) and are found if only they are loaded.
  static const char* const cudnn[] = {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9",
                                      "libcudnn_adv.so.9"};
  static const char* const cublas[] = {"libcublas.so.13"};
  static const char* const cublaslt[] = {"libcublasLt.so.13"};
  static const char* const nccl[] = {"libnccl.so.2"};
  switch (library) {
    case Library::kCudart: *count = std::size(cudart); return cudart;
    case Library::kDriver: *count = std::size(driver); return driver;
    case Library::kCudnn: *count = std::size(cudnn); return cudnn;
    case Library::kCublas: *count = std::size(cublas); return cublas;
    case Library::kCublasLt: *count = std::size(cublaslt); return cublaslt;
    case Library::kNccl: *count = std::size(nccl); return nccl;
  }
  *count = 0;
  return nullptr;
}

std::optional<SymbolId> find_hook(std::string_view name) {
  static const auto* by_name = [] {
    auto* map = new std::unordered_map<std::string_view, SymbolId>();
    for (uint32_t i = 0; i < kHookCount; ++i) map->emplace(kSymbols[i].name, static_cast<SymbolId>(i));
    return map;
  }();
  auto it = by_name->find(name);
  if (it == by_name->end()) return std::nullopt;
  return it->second;
}

void* hook_address(SymbolId id) {
  // libpump is linked with -Bsymbolic-functions: these bind to our own definitions.
  static void* const addresses[kHookCount] = {
#define PUMP_HOOK(kind, library, ret, name, params, args, stream) \
  reinterpret_cast<void*>(static_cast<Sym<k_##name>::Fn>(&::name)),
#include "core/interpose/hook_list.def"
  };
  return id < kHookCount ? addresses[id] : nullptr;
}

}  // namespace pump::interpose
