// ExtractorHost: the host table an extractor plugin gets forwards each service to the
// ExtractorServices it was built with, and a failing init is one error line.
#include "core/plugin_host/extractor_adapter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/common/log.h"
#include "pump/pump_sdk.h"
#include "tests/core/common/warning_capture.h"

namespace pump {
namespace {

struct FakeServices final : ExtractorServices {
  const char* config(const char* key) override { return std::string(key) == "KEY" ? "value" : nullptr; }
  bool find_block(uint64_t address, pump_block_v1_t* out) override {
    ++lookups;
    if (address < 0x1000 || address >= 0x2000) return false;
    *out = pump_block_v1_t{7, 0x1000, 0x1000};
    return true;
  }
  void* real_symbol(const char* name) override { return std::string(name) == "cuFoo" ? this : nullptr; }
  void tracked_span(uint64_t* lowest, uint64_t* end) override {
    *lowest = 0x1000;
    *end = 0x2000;
  }
  bool resolves_pointers() const override { return resolves; }
  int lookups = 0;
  bool resolves = true;
};

// The extractor below keeps the table its init got, and fails its init when told to.
const pump_extractor_host_v1_t* g_table = nullptr;
pump_status_v1_t g_init_status = PUMP_OK;

const pump_extractor_v1_t kExtractor = {
    sizeof(pump_extractor_v1_t),
    PUMP_EXTRACTOR_ABI_V1,
    "test-extractor",
    "1.0",
    nullptr,  // apis
    [](const pump_extractor_host_v1_t* host, void**) {
      g_table = host;
      return g_init_status;
    },
};

class ExtractorHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_table = nullptr;
    g_init_status = PUMP_OK;
    set_log_level(LogLevel::kWarn);
  }
  std::vector<std::string> lines() const { return log_.taken(); }

  testing::WarningCapture log_;
  FakeServices services_;
};

TEST_F(ExtractorHostTest, ServicesForwardToTheGivenServices) {
  ExtractorHost host(&kExtractor, services_);
  void* ctx = nullptr;
  ASSERT_TRUE(host.init(&ctx));
  ASSERT_EQ(g_table, host.table());
  const pump_extractor_host_v1_t& t = *g_table;
  EXPECT_EQ(t.struct_size, sizeof(pump_extractor_host_v1_t));
  EXPECT_EQ(host.name(), "test-extractor");

  EXPECT_STREQ(t.get_config(&t, "KEY"), "value");
  EXPECT_EQ(t.get_config(&t, nullptr), nullptr);
  pump_block_v1_t block{};
  EXPECT_EQ(t.find_block(&t, 0x1800, &block), PUMP_OK);
  EXPECT_EQ(block.id, 7u);
  EXPECT_EQ(t.find_block(&t, 0x10, &block), PUMP_ERR_NOT_FOUND);
  EXPECT_EQ(t.find_block(&t, 0x1800, nullptr), PUMP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(services_.lookups, 2);  // a null out never reaches the services
  EXPECT_EQ(t.real_symbol(&t, "cuFoo"), &services_);
  ASSERT_TRUE(PUMP_HAS_MEMBER(&t, pump_extractor_host_v1_t, tracked_span));
  uint64_t lowest = 0, end = 0;
  t.tracked_span(&t, &lowest, &end);
  EXPECT_EQ(lowest, 0x1000u);
  EXPECT_EQ(end, 0x2000u);
  t.tracked_span(&t, nullptr, &end);  // a null out-pointer is skipped
  ASSERT_TRUE(PUMP_HAS_FIELD(&t, pump_extractor_host_v1_t, flags));
  EXPECT_EQ(t.flags, PUMP_HOST_RESOLVES_POINTERS);

  t.log(&t, PUMP_LOG_WARN, "shown");
  t.log(&t, PUMP_LOG_DEBUG, "below the level");
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_NE(lines()[0].find("extractor test-extractor: shown"), std::string::npos) << lines()[0];
}

TEST_F(ExtractorHostTest, PointerResolutionIsOfferedOnlyWhenTheServicesDoIt) {
  services_.resolves = false;
  ExtractorHost host(&kExtractor, services_);
  EXPECT_EQ(host.table()->flags, 0u);
}

TEST_F(ExtractorHostTest, FailedInitIsOneError) {
  g_init_status = PUMP_ERR_UNSUPPORTED;
  ExtractorHost host(&kExtractor, services_);
  void* ctx = nullptr;
  EXPECT_FALSE(host.init(&ctx));
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_NE(lines()[0].find("extractor test-extractor failed to initialize"), std::string::npos) << lines()[0];
}

}  // namespace
}  // namespace pump
