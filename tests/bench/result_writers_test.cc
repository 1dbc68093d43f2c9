#include "bench/pump_bench/result_writers.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "bench/pump_bench/table_printer.h"

namespace pump::bench {
namespace {

using Json = nlohmann::json;

// A counter as written: an unsigned integer, or nothing.
std::optional<uint64_t> as_uint(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  return std::nullopt;
}

ConfigResult row(const char* config, std::vector<double> samples, uint64_t violations = 0) {
  ConfigResult r;
  r.workload = "w";
  r.ratio = 2.0;
  r.config = config;
  r.ran = true;
  r.samples_seconds = std::move(samples);
  r.footprint_bytes = 1ull << 30;
  r.budget_bytes = 1ull << 29;
  r.bytes_prefetched = 3ull << 20;
  r.datapath = std::string(config) == "bound" ? "" : "copy";
  r.violations = violations;
  if (violations) r.violation_texts = {"evicted while in use: [0x1000, 0x2000)"};
  return r;
}

BenchReport fixed_report() {
  BenchReport report;
  report.invocation = "pump-bench --sim";
  report.machine = {"host", "cpu, \"fast\"", "", "", "sim"};
  report.link = {50e9, 40e9, 45e9, "test"};
  report.results = {row("none", {0.010, 0.012, 0.011}), row("lru", {0.005, 0.004, 0.006}), row("bound", {0.002}),
                    row("eager", {0.004}, 2)};
  ConfigResult skipped = row("lazy", {});
  skipped.ran = false;
  skipped.note = "policy not loaded";
  report.results.push_back(skipped);
  finalize_comparisons(&report.results);
  return report;
}

TEST(PumpBenchResults, MedianSpreadSpeedupAndBoundRatioComeFromTheSamples) {
  BenchReport r = fixed_report();
  EXPECT_DOUBLE_EQ(r.results[0].median_seconds, 0.011);
  EXPECT_DOUBLE_EQ(r.results[1].median_seconds, 0.005);
  EXPECT_DOUBLE_EQ(r.results[1].min_seconds, 0.004);
  EXPECT_DOUBLE_EQ(r.results[1].max_seconds, 0.006);
  EXPECT_DOUBLE_EQ(r.results[1].speedup_vs_none, 0.011 / 0.005);
  EXPECT_DOUBLE_EQ(r.results[1].ratio_to_bound, 0.005 / 0.002);
  EXPECT_EQ(total_violations(r.results), 2u);
}

TEST(PumpBenchResults, TableHasOneLinePerRowAndShowsViolationsLoudly) {
  BenchReport r = fixed_report();
  std::ostringstream table;
  print_table(table, r.results);
  const std::string t = table.str();
  EXPECT_NE(t.find("ms/iter"), std::string::npos);
  EXPECT_NE(t.find("4.000-6.000"), std::string::npos) << t;
  EXPECT_NE(t.find("2.20x"), std::string::npos) << t;
  EXPECT_NE(t.find("VIOLATION x2"), std::string::npos) << t;
  EXPECT_NE(t.find("policy not loaded"), std::string::npos) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 2 + 5);
  std::ostringstream loud;
  print_violations(loud, r.results);
  EXPECT_NE(loud.str().find("This is a bug"), std::string::npos);
  EXPECT_NE(loud.str().find("evicted while in use"), std::string::npos);
  std::ostringstream quiet;
  r.results.pop_back();
  r.results.pop_back();
  print_violations(quiet, r.results);
  EXPECT_TRUE(quiet.str().empty());
}

TEST(PumpBenchResults, ARowWhoseChecksumDiffersFromNativeIsNotOk) {
  ConfigResult wrong = row("learned", {0.1, 0.1});
  wrong.checksum_differs = true;
  std::ostringstream table;
  print_table(table, {row("lru", {0.1, 0.1}), wrong});
  const std::string text = table.str();
  const size_t line = text.find("learned");
  ASSERT_NE(line, std::string::npos);
  const std::string learned_line = text.substr(line, text.find('\n', line) - line);
  EXPECT_NE(learned_line.find("CHECKSUM DIFFERS FROM NATIVE"), std::string::npos) << text;
  EXPECT_EQ(learned_line.find(" ok"), std::string::npos) << "a wrong result must not read as ok";
}

TEST(PumpBenchResults, JsonParsesBackWithEveryConfiguration) {
  std::ostringstream out;
  write_json(out, fixed_report());
  const Json v = Json::parse(out.str(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(v.is_discarded()) << out.str();
  EXPECT_EQ(v.at("machine").at("cpu").get<std::string>(), "cpu, \"fast\"");
  const Json* results = v.contains("results") ? &v.at("results") : nullptr;
  ASSERT_TRUE(results && results->is_array());
  ASSERT_EQ(results->size(), 5u);
  const Json& lru = (*results)[1];
  EXPECT_EQ(lru.at("config").get<std::string>(), "lru");
  EXPECT_DOUBLE_EQ(lru.at("seconds_per_iteration").get<double>(), 0.005);
  EXPECT_EQ(lru.at("samples_seconds").size(), 3u);
  EXPECT_EQ(as_uint(lru.at("bytes_prefetched_per_iteration")), 3ull << 20);
  EXPECT_EQ(lru.at("datapath").get<std::string>(), "copy");
  EXPECT_EQ(as_uint(lru.at("bytes_brought_in_per_iteration")), 3ull << 20);
  EXPECT_EQ(as_uint((*results)[3].at("violations")), 2u);
  EXPECT_DOUBLE_EQ(v.at("link").at("out_bytes_per_second").get<double>(), 40e9);
  EXPECT_EQ(v.at("link").at("source").get<std::string>(), "test");
  EXPECT_FALSE((*results)[4].at("ran").get<bool>());
}

TEST(PumpBenchResults, CsvHasAHeaderAndOneQuotedSafeLinePerRow) {
  std::ostringstream out;
  write_csv(out, fixed_report());
  std::istringstream in(out.str());
  std::string line;
  std::vector<std::string> data;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') data.push_back(line);
  ASSERT_EQ(data.size(), 6u);
  EXPECT_EQ(data[0].rfind("workload,ratio,config,datapath,ran,seconds_per_iteration", 0), 0u);
  EXPECT_EQ(data[2].rfind("w,2,lru,copy,1,0.005,0.004,0.006,", 0), 0u) << data[2];
  EXPECT_NE(out.str().find("# link: in 50.0 GB/s, out 40.0 GB/s, both 45.0 GB/s (test)"), std::string::npos);
  EXPECT_NE(data[5].find(",0,"), std::string::npos);
}

TEST(PumpBenchResults, LinkBoundIsTheSlowestOfComputeEachDirectionAndBoth) {
  const LinkRates link{50e9, 40e9, 60e9, "test"};
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.5, 0, 0, link), 0.5);                                   // compute
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.0, 100'000'000'000, 0, link), 2.0);                     // in alone
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.0, 0, 80'000'000'000, link), 2.0);                      // out alone
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.0, 60'000'000'000, 60'000'000'000, link), 2.0);         // both: 120/60
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.0, 45'000'000'000, 0, {50e9, 40e9, 30e9, ""}), 1.5);    // both caps one way too
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.25, 1'000'000'000, 1'000'000'000, LinkRates{}), 0.25);  // unknown link
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.0, 100'000'000'000, 0, link, 2), 1.0);  // two devices, a link each
  EXPECT_DOUBLE_EQ(link_bound_seconds(0.0, 100'000'000'000, 0, link, 0), 2.0);  // no device known: one link
  EXPECT_EQ(describe_link(link), "link: in 50.0 GB/s, out 40.0 GB/s, both 60.0 GB/s (test)");
}

TEST(PumpBenchResults, OwnBoundWinsOverTheBoundRowAndTheTableShowsPathAndBytes) {
  BenchReport r = fixed_report();
  r.results[1].bound_seconds = 0.0025;
  r.results[1].bytes_saved = 5ull << 20;
  r.results[1].bytes_evicted = 1ull << 20;
  r.results[1].bytes_discarded = 7ull << 20;
  r.results[1].bytes_restored = 2ull << 20;
  finalize_comparisons(&r.results);
  EXPECT_DOUBLE_EQ(r.results[1].ratio_to_bound, 0.005 / 0.0025);
  EXPECT_DOUBLE_EQ(r.results[0].ratio_to_bound, 0.011 / 0.002);  // no own bound: the bound row
  std::ostringstream table;
  print_table(table, r.results);
  const std::string t = table.str();
  for (const char* column : {"path", "bound ms", "in MiB/it", "wb MiB/it", "drop MiB/it"})
    EXPECT_NE(t.find(column), std::string::npos) << column << "\n" << t;
  const size_t lru = t.find("lru");
  ASSERT_NE(lru, std::string::npos);
  const std::string line = t.substr(lru, t.find('\n', lru) - lru);
  EXPECT_NE(line.find("copy"), std::string::npos) << line;
  EXPECT_NE(line.find("2.500"), std::string::npos) << line;  // bound ms
  EXPECT_NE(line.find(" 5 "), std::string::npos) << line;    // in: 3 prefetched + 2 restored
  EXPECT_NE(line.find(" 6 "), std::string::npos) << line;    // written back: 1 evicted + 5 saved
  EXPECT_NE(line.find(" 7 "), std::string::npos) << line;    // dropped
}

TEST(PumpBenchResults, UnwritablePathIsOneError) {
  std::string error;
  EXPECT_FALSE(write_json_file("/nonexistent-dir/x.json", fixed_report(), &error));
  EXPECT_NE(error.find("cannot write /nonexistent-dir/x.json"), std::string::npos) << error;
}

}  // namespace
}  // namespace pump::bench
