#include "core/interpose/cuda_library_files.h"

#include <gtest/gtest.h>

namespace pump::interpose {
namespace {

TEST(CudaLibraryFiles, TellsTheHookedLibrariesByTheirFileStem) {
  EXPECT_EQ(hooked_library_of_file("libcuda.so.1"), Library::kDriver);
  EXPECT_EQ(hooked_library_of_file("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"), Library::kDriver);
  EXPECT_EQ(hooked_library_of_file("/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"), Library::kCudart);
  EXPECT_EQ(hooked_library_of_file("/usr/local/cuda/lib64/libcudart.so"), Library::kCudart);
  EXPECT_EQ(hooked_library_of_file("libcudnn.so.9"), Library::kCudnn);
  EXPECT_EQ(hooked_library_of_file("libcudnn_graph.so.9"), Library::kCudnn);
  EXPECT_EQ(hooked_library_of_file("libcublas.so.13"), Library::kCublas);
  EXPECT_EQ(hooked_library_of_file("libcublasLt.so.13"), Library::kCublasLt);
  EXPECT_EQ(hooked_library_of_file("/wheel.libs/libcudart-1a2b3c4d.so.12"), Library::kCudart) << "auditwheel's name";
}

TEST(CudaLibraryFiles, OtherFilesServeNoHook) {
  EXPECT_FALSE(hooked_library_of_file("/opt/app/bin/train"));
  EXPECT_FALSE(hooked_library_of_file("libcudaplugin.so"));
  EXPECT_FALSE(hooked_library_of_file("/jax/xla_cuda_plugin.so"));
  EXPECT_FALSE(hooked_library_of_file("libcufft.so.12"));
  EXPECT_FALSE(hooked_library_of_file("libpump.so"));
  EXPECT_FALSE(hooked_library_of_file(""));
  EXPECT_FALSE(hooked_library_of_file(nullptr));
}

TEST(CudaLibraryFiles, NvidiasLibrariesAreCudaLibrariesButNotTheRuntimeOrDriver) {
  for (const char* file :
       {"libcublas.so.13", "/x/libcublasLt.so.13", "libcudnn_ops.so.9", "libnccl.so.2", "libcufft.so.12",
        "libcusparse.so.12", "libcusolver.so.12", "libcurand.so.10", "libnvshmem_host.so.3", "libnppc.so.13",
        "libcutensor.so.2", "libnvinfer.so.10", "libnvinfer_plugin.so.10"})
    EXPECT_TRUE(is_cuda_library_file(file)) << file;
  for (const char* file : {"libcuda.so.1", "libcudart.so.13", "/usr/lib/libcudf.so", "libtorch_cuda.so",
                           "/jax/xla_cuda_plugin.so", "/opt/app/bin/train", ""})
    EXPECT_FALSE(is_cuda_library_file(file)) << file;
  EXPECT_FALSE(is_cuda_library_file(nullptr));
}

TEST(CudaLibraryFiles, OneCopyIsOneDirectoryAndOneVersion) {
  EXPECT_TRUE(same_library_copy("/usr/lib/libcudnn.so.9", "/usr/lib/libcudnn_graph.so.9"));
  EXPECT_FALSE(same_library_copy("/wheel/lib/libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so.13"));
  EXPECT_FALSE(same_library_copy("/a/libcudart.so.13", "/b/libcudart.so.13"));
  EXPECT_FALSE(same_library_copy(nullptr, "/b/libcudart.so.13"));
}

TEST(CudaLibraryFiles, FileOfAnAddressIsTheObjectHoldingIt) {
  const char* file = file_of_address(reinterpret_cast<const void*>(&file_of_address));
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file_of_address(nullptr), nullptr);
}

}  // namespace
}  // namespace pump::interpose
