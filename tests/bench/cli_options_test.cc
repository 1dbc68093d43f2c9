#include "bench/pump_bench/cli_options.h"

#include <gtest/gtest.h>

namespace pump::bench {
namespace {

TEST(PumpBenchCli, DefaultsCoverEveryPolicyAndRatio) {
  CliResult r = parse_cli({});
  ASSERT_EQ(r.action, CliAction::kRun);
  EXPECT_EQ(r.options.ratios, (std::vector<double>{1.0, 1.5, 2.0, 3.0}));
  EXPECT_EQ(r.options.policies, (std::vector<std::string>{"none", "eager", "lazy", "lru", "activations", "learned"}));
  EXPECT_FALSE(r.options.sim);
  EXPECT_FALSE(r.options.iterations);
  EXPECT_EQ(r.options.datapaths, (std::vector<std::string>{"vmm"})) << "the library's default";
}

TEST(PumpBenchCli, DatapathListsCopyAndUm) {
  CliResult r = parse_cli({"--datapath", "copy,um"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.error;
  EXPECT_EQ(r.options.datapaths, (std::vector<std::string>{"copy", "um"}));
  EXPECT_EQ(parse_cli({"--datapath=um"}).options.datapaths, (std::vector<std::string>{"um"}));
  EXPECT_EQ(parse_cli({"--datapath=copy,vmm"}).options.datapaths, (std::vector<std::string>{"copy", "vmm"}));
  const std::string help = cli_help();
  for (const char* text : {"--datapath", "PUMP_DATAPATH=um", "wb MiB/it", "drop MiB/it", "BW_both"})
    EXPECT_NE(help.find(text), std::string::npos) << text;
}

TEST(PumpBenchCli, TheSimsDriverModelIsChosenByPopulateDeferredLimitAndIdlePopulate) {
  CliResult r = parse_cli({"--populate", "discard-and-prefetch", "--deferred-limit=0"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.error;
  EXPECT_EQ(r.options.populate, "discard-and-prefetch");
  EXPECT_EQ(r.options.deferred_limit, 0);
  EXPECT_FALSE(parse_cli({}).options.populate.has_value()) << "not given: the model's default";
  EXPECT_EQ(parse_cli({"--deferred-limit", "64"}).options.deferred_limit, 64);
  EXPECT_EQ(parse_cli({"--idle-populate", "no"}).options.idle_populate, false);
  EXPECT_EQ(parse_cli({"--idle-populate=yes"}).options.idle_populate, true);
  EXPECT_FALSE(parse_cli({}).options.idle_populate.has_value()) << "not given: the model's default";
}

TEST(PumpBenchCli, ParsesEveryOptionInBothSpellings) {
  CliResult r = parse_cli({"--workload", "training-loop,mlp", "--size=small", "--oversubscription", "1,2.5",
                           "--policies=lru", "--sim", "--repeats", "5", "--iterations=6", "--json", "a.json", "--csv",
                           "a.csv", "--plot", "a.png", "--plugin-dir", "/p"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.error;
  const BenchOptions& o = r.options;
  EXPECT_EQ(o.workloads, (std::vector<std::string>{"training-loop", "mlp"}));
  EXPECT_EQ(o.size, "small");
  EXPECT_EQ(o.ratios, (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(o.policies, (std::vector<std::string>{"lru"}));
  EXPECT_TRUE(o.sim);
  EXPECT_EQ(o.repeats, 5);
  EXPECT_EQ(o.iterations, 6);
  EXPECT_EQ(o.json_path, "a.json");
  EXPECT_EQ(o.csv_path, "a.csv");
  EXPECT_EQ(o.plot_path, "a.png");
  EXPECT_EQ(o.plugin_dir, "/p");
}

TEST(PumpBenchCli, EverythingAfterDoubleDashIsTheCommand) {
  CliResult r = parse_cli({"--policies", "lru", "--", "python3", "train.py", "--sim", "--help"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.error;
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"python3", "train.py", "--sim", "--help"}));
  EXPECT_FALSE(r.options.sim);
}

TEST(PumpBenchCli, HelpWins) {
  EXPECT_EQ(parse_cli({"--sim", "-h"}).action, CliAction::kHelp);
  EXPECT_EQ(parse_cli({"--help"}).action, CliAction::kHelp);
  EXPECT_NE(std::string(cli_help()).find("--oversubscription"), std::string::npos);
}

TEST(PumpBenchCli, BadInputGivesOneClearMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--frobnicate"}, "unknown option '--frobnicate'"},
      {{"--oversubscription", "1,0.5"}, "'0.5' is not a ratio"},
      {{"--oversubscription", "2,x"}, "'x' is not a ratio"},
      {{"--oversubscription", "2,2"}, "listed twice"},
      {{"--repeats", "0"}, "--repeats: '0'"},
      {{"--iterations", "1"}, "integer >= 2"},
      {{"--size", "huge"}, "--size: 'huge'"},
      {{"--workload", "resnet"}, "unknown workload 'resnet'"},
      {{"--policies", "lru,,eager"}, "empty name"},
      {{"--datapath", "copy,zero"}, "'zero' is not copy, um or vmm"},
      {{"--datapath", "um,um"}, "listed twice"},
      {{"--populate", "eager"}, "'eager' is not prefetch, discard-and-prefetch or auto"},
      {{"--deferred-limit", "-1"}, "--deferred-limit: '-1' is not an integer >= 0"},
      {{"--populate", "prefetch", "--", "ls"}, "mean nothing on a GPU"},
      {{"--idle-populate", "maybe"}, "--idle-populate: 'maybe' is not yes or no"},
      {{"--idle-populate", "no", "--", "ls"}, "mean nothing on a GPU"},
      {{"--populate", "auto", "--idle-populate", "no"}, "applies to --populate prefetch only"},
      {{"--json"}, "--json needs a value"},
      {{"--"}, "followed by a command"},
      {{"--sim", "--", "ls"}, "--sim runs only the models"},
      {{"--trace", "t", "--workload", "mlp"}, "--trace replaces --workload"},
      {{"stray"}, "unexpected argument 'stray'"},
  };
  for (const auto& [args, expected] : cases) {
    CliResult r = parse_cli(args);
    EXPECT_EQ(r.action, CliAction::kError) << args[0];
    EXPECT_NE(r.error.find(expected), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  }
}

// The edges where CLI11 now splits the line: unknown flags in every spelling, a
// repeated option (the last wins, as before), a missing value before another option.
TEST(PumpBenchCli, UnknownFlagsRepeatsAndMissingValuesAtTheEdges) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-x"}, "unknown option '-x'"},
      {{"--frob=1"}, "unknown option '--frob'"},
      {{"--sim", "--workload", "mlp", "--nope", "v"}, "unknown option '--nope'"},
      {{"--size"}, "--size needs a value"},
      {{"--repeats=abc"}, "--repeats: 'abc'"},
      {{"--iterations", "-3"}, "--iterations"},
      {{"mlp", "--sim"}, "unexpected argument 'mlp'"},
  };
  for (const auto& [args, expected] : cases) {
    CliResult r = parse_cli(args);
    EXPECT_EQ(r.action, CliAction::kError) << args[0];
    EXPECT_NE(r.error.find(expected), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  }
  CliResult r = parse_cli({"--policies", "lru", "--policies=eager", "--repeats", "2", "--repeats", "4"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.error;
  EXPECT_EQ(r.options.policies, (std::vector<std::string>{"eager"}));
  EXPECT_EQ(r.options.repeats, 4);
  r = parse_cli({"--json", "out.json", "--", "prog", "--", "-x"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.error;
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"prog", "--", "-x"}));
  EXPECT_EQ(parse_cli({"--frobnicate", "--help"}).action, CliAction::kHelp);
}

}  // namespace
}  // namespace pump::bench
