#include "core/interpose/cuda_library_files.h"

#include <dlfcn.h>

#include <string_view>

namespace pump::interpose {
namespace {

// Where ".so" ends the stem of file name `name` ("libcudnn_graph.so.9": 14); npos if it has none.
size_t so_suffix_at(std::string_view name) {
  for (size_t at = name.find(".so"); at != std::string_view::npos; at = name.find(".so", at + 1)) {
    if (at + 3 == name.size() || name[at + 3] == '.') return at;
  }
  return std::string_view::npos;
}

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view directory_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// "/x/libcudnn_graph.so.9" -> "libcudnn_graph"; a name without ".so" is its own stem.
// auditwheel's renaming of bundled libraries is undone: "libcudart-1a2b3c4d.so.12".
std::string_view stem_of(const char* path) {
  const std::string_view name = base_name(path);
  std::string_view stem = name.substr(0, so_suffix_at(name));
  constexpr size_t kHashChars = 8;
  if (stem.size() > kHashChars + 1 && stem[stem.size() - kHashChars - 1] == '-' &&
      stem.substr(stem.size() - kHashChars).find_first_not_of("0123456789abcdef") == std::string_view::npos)
    stem.remove_suffix(kHashChars + 1);
  return stem;
}

// "/x/libcudnn_graph.so.9" -> ".so.9".
std::string_view version_of(const char* path) {
  const std::string_view name = base_name(path);
  const size_t at = so_suffix_at(name);
  return at == std::string_view::npos ? std::string_view() : name.substr(at);
}

// `stem` is `family` itself, or `family` followed by "_part" (libcudnn_graph).
bool of_family(std::string_view stem, std::string_view family) {
  return stem == family || (stem.size() > family.size() && stem.starts_with(family) && stem[family.size()] == '_');
}

}  // namespace

std::optional<Library> hooked_library_of_file(const char* path) {
  if (path == nullptr) return std::nullopt;
  const std::string_view stem = stem_of(path);
  if (stem == "libcuda") return Library::kDriver;
  if (stem == "libcudart") return Library::kCudart;
  if (of_family(stem, "libcudnn")) return Library::kCudnn;
  if (stem == "libcublas") return Library::kCublas;
  if (stem == "libcublasLt") return Library::kCublasLt;
  return std::nullopt;
}

bool is_cuda_library_file(const char* path) {
  if (path == nullptr) return false;
  const std::string_view stem = stem_of(path);
  // Families whose parts are separate files (libcudnn_ops, libnvshmem_host, libnppc...).
  for (std::string_view family : {"libcudnn", "libnvshmem", "libcutensor", "libnvinfer"})
    if (of_family(stem, family)) return true;
  if (stem.starts_with("libnpp")) return true;
  for (std::string_view name :
       {"libcublas", "libcublasLt", "libcufft", "libcufftw", "libcurand", "libcusparse", "libcusparseLt", "libcusolver",
        "libcusolverMg", "libcutensorMg", "libcudss", "libcufile", "libcupti", "libnvblas", "libnccl", "libnvjpeg"})
    if (stem == name) return true;
  return false;
}

bool same_library_copy(const char* a, const char* b) {
  if (a == nullptr || b == nullptr) return false;
  return directory_of(a) == directory_of(b) && version_of(a) == version_of(b);
}

const char* file_of_address(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0) return nullptr;
  return info.dli_fname;
}

}  // namespace pump::interpose
