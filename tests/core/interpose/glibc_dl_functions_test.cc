// glibc's dlsym/dlvsym found by reading the loaded objects' symbol tables (no dlsym).
#include "core/interpose/glibc_dl_functions.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace pump::interpose {
namespace {

TEST(GlibcDlFunctions, FindsTheSameDlsymTheDynamicLinkerBindsTo) {
  ASSERT_NE(glibc_dlsym(), nullptr);
  // From this executable, the next dlsym is the C library's default version.
  EXPECT_EQ(reinterpret_cast<void*>(glibc_dlsym()), dlsym(RTLD_NEXT, "dlsym"));
  EXPECT_EQ(reinterpret_cast<void*>(glibc_dlvsym()), dlsym(RTLD_NEXT, "dlvsym"));
}

TEST(GlibcDlFunctions, TheFunctionsFoundWork) {
  auto fn = reinterpret_cast<int (*)()>(glibc_dlsym()(RTLD_DEFAULT, "pump_fake_linked_symbol"));
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn(), 7);
  EXPECT_EQ(glibc_dlsym()(RTLD_DEFAULT, "pump_no_such_symbol_anywhere"), nullptr);
}

TEST(GlibcDlFunctions, OnlyDefinitionsUnderTheVersionAsked) {
  EXPECT_NE(find_versioned_function("dlsym", "GLIBC_"), nullptr);
  EXPECT_EQ(find_versioned_function("dlsym", "PUMP_NO_SUCH_VERSION"), nullptr);
  EXPECT_EQ(find_versioned_function("pump_fake_linked_symbol", ""), nullptr) << "unversioned: never matches";
  EXPECT_EQ(find_versioned_function("pump_no_such_symbol_anywhere", "GLIBC_"), nullptr);
  EXPECT_EQ(find_versioned_function(nullptr, "GLIBC_"), nullptr);
}

}  // namespace
}  // namespace pump::interpose
