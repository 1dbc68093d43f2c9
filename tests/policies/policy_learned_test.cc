// "learned": online period detection, Belady eviction, MIN-safe lookahead
// prefetch, and what it does before a period is known and after the program changes.
// policy_learned_patterns_test.cc holds the access patterns (cycles, scans, costs).
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_driving.h"
#include "tests/policies/policy_instance.h"

namespace {

void run_period(PolicyInstance& policy, FakePolicyHost& host, const std::vector<Ids>& period, uint64_t budget) {
  for (const Ids& k : period) run_kernel(policy, host, k, budget);
}

// Six kernels, one 100-byte block each, in a budget that holds them all; an idle block
// as large as the budget makes the tracked memory exceed it (while everything fits
// nothing is evicted, and the policy predicts nothing).
struct Chain {
  static constexpr uint64_t kBudget = 10000;
  FakePolicyHost host{kBudget};
  Ids blocks;
  std::vector<Ids> period;
  Chain() {
    for (int i = 0; i < 6; ++i) blocks.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
    for (uint64_t b : blocks) period.push_back({b});
    host.add_block(kBudget, PUMP_ROLE_UNKNOWN, false);
  }
};

// Three periods: 8 kernels in a row matched the kernel 6 before them, the period is confirmed.
void learn(PolicyInstance& policy, Chain& c) {
  for (int i = 0; i < 3; ++i) run_period(policy, c.host, c.period, Chain::kBudget);
}

TEST(PolicyLearned, BeforeThePeriodIsLearnedPrefetchesOnlyTheKernelsBlocks) {
  Chain c;
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  for (size_t i = 0; i < c.period.size(); ++i) {
    c.host.prefetches.clear();
    run_kernel(policy, c.host, c.period[i], Chain::kBudget);
    EXPECT_EQ(prefetched_ids(c.host), c.period[i]) << "kernel " << i << " of the first iteration";
    for (const auto& p : c.host.prefetches) EXPECT_EQ(p.when, PUMP_WHEN_NOW);
  }
}

// A range whose reuse gap passed without it is not expected "a gap away" for good: past the
// longest gap it has shown it is ranked by its age. A used twice in a row long ago (gap 1),
// then B and C in turn (gap 2): N's room is A's, the range used longest ago, not B's (which
// wrapping A's gap forward had kept A ahead of: a training step's first gaps, forward to
// backward, said nothing of the next use and took the room of what was needed).
TEST(PolicyLearned, ARangeWhoseGapPassedWithoutItIsRankedByItsAgeNotKeptAGapAway) {
  FakePolicyHost host(300);
  const uint64_t a = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  const uint64_t b = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  const uint64_t c = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  const uint64_t n = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  host.add_block(1000, PUMP_ROLE_UNKNOWN, false);  // the tracked memory exceeds the budget
  PolicyInstance policy("learned", host);
  ASSERT_TRUE(policy.ready());
  for (const Ids& k : std::vector<Ids>{{a}, {a}, {b}, {c}, {b}, {c}, {b}, {c}, {b}, {c}})
    run_kernel(policy, host, k, 300);
  ASSERT_TRUE(host.evictions.empty());
  run_kernel(policy, host, {n}, 300);
  EXPECT_EQ(host.evicted_ids(), Ids{a});
}

TEST(PolicyLearned, LearnsARepeatingSequenceAndPrefetchesTheNextKernelsBlocks) {
  Chain c;
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  learn(policy, c);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[0], Chain::kBudget);
  // Its own block, then the predicted next five (a whole period minus itself), in order.
  EXPECT_EQ(prefetched_ids(c.host), c.blocks);
  for (const auto& p : c.host.prefetches) EXPECT_EQ(p.when, PUMP_WHEN_NOW);
}

// At the end it says whether a period was found and how much of the run it predicted.
TEST(PolicyLearned, SaysAtTheEndHowMuchOfTheRunItsPeriodPredicted) {
  Chain c;
  {
    PolicyInstance policy("learned", c.host);
    ASSERT_TRUE(policy.ready());
    learn(policy, c);
  }
  ASSERT_FALSE(c.host.logs.empty());
  const std::string& line = c.host.logs.back().message;
  EXPECT_EQ(c.host.logs.back().level, PUMP_LOG_INFO);
  EXPECT_NE(line.find("18 kernels observed under pressure"), std::string::npos) << line;
  EXPECT_NE(line.find("periods confirmed: 1 (the last 6 kernels long), ended: 0"), std::string::npos) << line;
  // A tentative period from the second kernel matching the one 6 before (the 8th of the
  // run): the last 10 of 18 kernels were predicted.
  EXPECT_NE(line.find(" 55.6% as a period predicted"), std::string::npos) << line;
}

TEST(PolicyLearned, SaysNothingAtTheEndWhenTheProgramFit) {
  FakePolicyHost host(1000);
  const uint64_t a = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  {
    PolicyInstance policy("learned", host);
    ASSERT_TRUE(policy.ready());
    for (int i = 0; i < 20; ++i) run_kernel(policy, host, {a}, 1000);
  }
  EXPECT_TRUE(host.logs.empty());
}

// What the summary line at the end (the last log line) says after `key` (a number).
double summary_number(const FakePolicyHost& host, const std::string& key) {
  if (host.logs.empty()) return -1;
  const std::string& line = host.logs.back().message;
  const size_t at = line.find(key);
  return at == std::string::npos ? -1 : std::stod(line.substr(at + key.size()));
}

// LEARNED_ANCHOR=extents (SDK 1.6): a kernel is known by the extents its call named, not by the
// pieces the engine made of them. After three periods, kernels 2 and 3 touch other pieces (as when
// the engine has split a block and another piece comes first) and name the same extents: the
// period holds. By first blocks (the default, or an SDK 1.5 host, or a value it does not know, with
// a warning) the two kernels in a row off it end it.
TEST(PolicyLearned, WithExtentAnchorsAPeriodHoldsWhileTheEnginesPiecesChange) {
  struct Case {
    const char* anchor;  // nullptr: unset
    bool sdk_1_5;
    double ended;
    size_t warnings;
  };
  for (const Case& t : {Case{"extents", false, 0, 0}, Case{"extents", true, 1, 0}, Case{nullptr, false, 1, 0},
                        Case{"block", false, 1, 0}, Case{"extent", false, 1, 1}}) {
    Chain c;
    if (t.anchor) c.host.set_config("LEARNED_ANCHOR", t.anchor);
    if (t.sdk_1_5) c.host.pretend_sdk_1_5();
    const Ids pieces = {c.host.add_block(100, PUMP_ROLE_ACTIVATION, false),
                        c.host.add_block(100, PUMP_ROLE_ACTIVATION, false)};
    {
      PolicyInstance policy("learned", c.host);
      ASSERT_TRUE(policy.ready());
      learn(policy, c);
      for (int i = 0; i < 2; ++i) {
        for (size_t k = 0; k < c.period.size(); ++k) {
          const pump_block_v1_t named = c.host.block(c.period[k][0]);
          c.host.set_next_extents({{named.address, named.bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION}});
          run_kernel(policy, c.host, k == 2 || k == 3 ? Ids{pieces[k - 2]} : c.period[k], Chain::kBudget);
        }
      }
    }
    const std::string what = std::string(t.anchor ? t.anchor : "(unset)") + (t.sdk_1_5 ? " on SDK 1.5: " : ": ");
    EXPECT_EQ(summary_number(c.host, "ended: "), t.ended) << what << c.host.logs.back().message;
    EXPECT_NE(c.host.logs.back().message.find("(the last 6 kernels long)"), std::string::npos)
        << what << c.host.logs.back().message;
    EXPECT_EQ(std::count_if(c.host.logs.begin(), c.host.logs.end(),
                            [](const FakePolicyHost::LogLine& l) { return l.level == PUMP_LOG_WARN; }),
              static_cast<std::ptrdiff_t>(t.warnings))
        << what;
  }
}

// LEARNED_ANCHOR=extents (SDK 1.6): a kernel whose extents are all small (under 1/4096 of the
// budget) is known by what its first extent is (size, access, role), not where it is: a decoder's
// activations are at new addresses every token, its weights stay. Two weights and two new
// activations a token, six kernels: by their extents the token is the period and most kernels are
// predicted; by first blocks (an SDK 1.5 host) no period holds.
TEST(PolicyLearned, WithExtentAnchorsADecodersNewActivationsEveryTokenLeaveItsPeriodWhole) {
  for (const bool sdk_1_5 : {false, true}) {
    constexpr uint64_t kBudget = 4096 * 1000;  // large from 1000 bytes
    FakePolicyHost host(kBudget);
    host.set_config("LEARNED_ANCHOR", "extents");
    if (sdk_1_5) host.pretend_sdk_1_5();
    const Ids weights = {host.add_block(2000, PUMP_ROLE_UNKNOWN, false),
                         host.add_block(2000, PUMP_ROLE_UNKNOWN, false)};
    host.add_block(2 * kBudget, PUMP_ROLE_UNKNOWN, false);  // the tracked memory exceeds the budget
    {
      PolicyInstance policy("learned", host);
      ASSERT_TRUE(policy.ready());
      for (int token = 0; token < 12; ++token) {
        const uint64_t a = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
        const uint64_t b = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
        for (const Ids& k : std::vector<Ids>{{a, weights[0]}, {a, b}, {b, weights[1]}, {b}, {a}, {a, b}})
          run_kernel(policy, host, k, kBudget);
      }
    }
    const double predicted = summary_number(host, "under pressure, ");
    if (sdk_1_5) {
      EXPECT_LT(predicted, 25) << host.logs.back().message;
    } else {
      EXPECT_GT(predicted, 75) << host.logs.back().message;
      EXPECT_NE(host.logs.back().message.find("(the last 6 kernels long)"), std::string::npos)
          << host.logs.back().message;
    }
  }
}

TEST(PolicyLearned, AKernelOffThePredictionDrivesNoPrefetchingAndTheChangedSequenceIsRelearned) {
  Chain c;
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  learn(policy, c);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[3], Chain::kBudget);  // slot 0 was predicted
  EXPECT_EQ(prefetched_ids(c.host), c.period[3]) << "a broken prediction must not drive prefetching";

  // The program now runs kernels 3,4,5,0,1,2: the old period ends at its second miss in a
  // row; until the new one is confirmed, sequences consistent with both may be followed.
  const std::vector<Ids> shifted = {c.period[3], c.period[4], c.period[5], c.period[0], c.period[1], c.period[2]};
  for (size_t i = 1; i < shifted.size(); ++i) run_kernel(policy, c.host, shifted[i], Chain::kBudget);
  for (int i = 0; i < 4; ++i) run_period(policy, c.host, shifted, Chain::kBudget);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, shifted[0], Chain::kBudget);
  EXPECT_EQ(prefetched_ids(c.host),
            (Ids{c.blocks[3], c.blocks[4], c.blocks[5], c.blocks[0], c.blocks[1], c.blocks[2]}));
}

// As above after a long prediction: what was seen while predicting (not written to the
// policy's map of where each kernel was seen then) still finds the new period at once.
TEST(PolicyLearned, AfterALongPredictionTheChangedSequenceIsRelearnedFromWhatWasSeen) {
  Chain c;
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  for (int i = 0; i < 5; ++i) run_period(policy, c.host, c.period, Chain::kBudget);
  // The program now runs kernels 3,4,5 only: the second of them (the second miss) ends
  // the period and each was seen 3 kernels before, so after 8 kernels matching the
  // kernel 3 before them the next are predicted again.
  const std::vector<Ids> tail = {c.period[3], c.period[4], c.period[5]};
  for (int i = 0; i < 3; ++i) run_period(policy, c.host, tail, Chain::kBudget);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, tail[0], Chain::kBudget);
  EXPECT_EQ(prefetched_ids(c.host), (Ids{c.blocks[3], c.blocks[4], c.blocks[5]}));
}

// The count after `label` in the policy's end-of-run line ("tables built: 3 (...)").
uint64_t summary_count(const std::string& line, const std::string& label) {
  const size_t at = line.find(label);
  return at == std::string::npos ? UINT64_MAX : std::stoull(line.substr(at + label.size()));
}

// A long period whose kernels are the last step's but for two in a row every 16 (activations
// at new addresses), as a training step under pressure is: the period ends at the second and
// is found again two kernels on, `rounds` times `length` / 16. With `touch_more_when_found`,
// the kernel it is found again at touches one new block besides its own. Returns the
// end-of-run line.
std::string run_losing_and_finding(uint32_t length, int rounds, bool touch_more_when_found = false) {
  constexpr uint64_t kBudget = 100000;
  FakePolicyHost host(kBudget);
  Ids blocks;
  for (uint32_t i = 0; i < length; ++i) blocks.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
  host.add_block(kBudget, PUMP_ROLE_UNKNOWN, false);
  {
    PolicyInstance policy("learned", host);
    EXPECT_TRUE(policy.ready());
    for (int r = 0; r < 3; ++r)
      for (uint64_t b : blocks) run_kernel(policy, host, {b}, kBudget);
    for (int r = 0; r < rounds; ++r)
      for (uint32_t i = 0; i < length; ++i) {
        const uint64_t b = i % 16 < 2 ? host.add_block(100, PUMP_ROLE_ACTIVATION, false) : blocks[i];
        Ids kernel{b};
        if (touch_more_when_found && i % 16 == 3) kernel.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
        run_kernel(policy, host, kernel, kBudget);
      }
  }
  return host.logs.empty() ? std::string() : host.logs.back().message;
}

// Each loss drops the period and each find takes its tables back: built once, not once a
// loss (building costs the period's every block: on the H200 a BERT step lost and found its
// period 16 times, and building was most of the policy's 12 us a kernel).
TEST(PolicyLearned, APeriodFoundAgainAfterItsLossIsTakenBackNotBuiltAgain) {
  const std::string line = run_losing_and_finding(128, 4);
  EXPECT_EQ(summary_count(line, "tables built: "), 1u) << line;
  EXPECT_EQ(summary_count(line, "taken back: "), 4u * 128 / 16) << line;
}

// The kernel a period is taken back at touched other ranges than its slot (its first block
// matched, not the rest): that is not taken as predicted, and the period is relearned once
// confirmed, as when a kernel it predicts touches other ranges.
TEST(PolicyLearned, APeriodTakenBackAtAKernelTouchingOtherRangesIsRelearned) {
  const std::string line = run_losing_and_finding(128, 4, true);
  EXPECT_EQ(summary_count(line, "taken back: "), 4u * 128 / 16) << line;
  EXPECT_GT(summary_count(line, "tables built: "), 1u) << line;
}

// The same at the period's last slot, whose entries end the tables: built at the third match
// (kernel 2 of the second lap, so the last slot is kernel 2's), lost at the last kernel of a
// lap and the first of the next, found again at kernel 2, which touches one more block than
// its slot has (reading on past the slot's entries would leave the tables; the sanitizer
// builds would say).
TEST(PolicyLearned, APeriodTakenBackAtItsLastSlotByAKernelTouchingMoreIsRelearned) {
  constexpr uint64_t kBudget = 100000;
  FakePolicyHost host(kBudget);
  Ids blocks;
  for (int i = 0; i < 128; ++i) blocks.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
  host.add_block(kBudget, PUMP_ROLE_UNKNOWN, false);
  {
    PolicyInstance policy("learned", host);
    ASSERT_TRUE(policy.ready());
    for (int lap = 0; lap < 5; ++lap)
      for (size_t i = 0; i < blocks.size(); ++i) {
        const bool lost = (lap == 3 && i == blocks.size() - 1) || (lap == 4 && i == 0);
        Ids kernel{lost ? host.add_block(100, PUMP_ROLE_ACTIVATION, false) : blocks[i]};
        if (lap == 4 && i == 2) kernel.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
        run_kernel(policy, host, kernel, kBudget);
      }
  }
  ASSERT_FALSE(host.logs.empty());
  const std::string& line = host.logs.back().message;
  EXPECT_EQ(summary_count(line, "taken back: "), 1u) << line;
  EXPECT_EQ(summary_count(line, "tables built: "), 2u) << line;  // the first, and the relearn once confirmed
}

TEST(PolicyLearned, PressureBeforeLearningEvictsTheLeastRecentlyUsedBlock) {
  FakePolicyHost host(300);
  const uint64_t oldest = host.add_block(100, PUMP_ROLE_ACTIVATION, true);
  host.add_block(100, PUMP_ROLE_ACTIVATION, true);
  host.add_block(100, PUMP_ROLE_ACTIVATION, true);
  const uint64_t missing = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("learned", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({missing}), 100);
  EXPECT_EQ(host.evicted_ids(), Ids{oldest});
}

// Forward then backward over four blocks in a budget of three: a, b, c, d, c, b.
struct ForwardBackward {
  static constexpr uint64_t kBudget = 300;
  FakePolicyHost host{kBudget};
  uint64_t a, b, c, d;
  std::vector<Ids> period;
  ForwardBackward() {
    a = host.add_block(100, PUMP_ROLE_WEIGHT, false);
    b = host.add_block(100, PUMP_ROLE_WEIGHT, false);
    c = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
    d = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
    period = {{a}, {b}, {c}, {d}, {c}, {b}};
  }
};

TEST(PolicyLearned, PressureEvictsTheBlockUsedFarthestInTheFutureNotTheLeastRecentlyUsed) {
  ForwardBackward f;
  f.host.set_config("LEARNED_LOOKAHEAD", "0");  // eviction alone
  PolicyInstance policy("learned", f.host);
  ASSERT_TRUE(policy.ready());
  for (int i = 0; i < 3; ++i) run_period(policy, f.host, f.period, ForwardBackward::kBudget);
  // Next: a needs room among {b, c, d}; b is used next, then c, then d. d is made the most
  // recently used, so LRU would evict b.
  evict_all(f.host, {f.a, f.b, f.c, f.d});
  for (uint64_t id : {f.b, f.c, f.d}) ASSERT_EQ(f.host.table()->prefetch(f.host.table(), id, PUMP_WHEN_NOW), PUMP_OK);
  const Ids lru = f.host.lru_order();
  ASSERT_EQ(lru.size(), 3u);
  ASSERT_NE(lru.front(), f.d) << "the scenario must tell Belady from LRU";
  f.host.evictions.clear();
  run_kernel(policy, f.host, f.period[0], ForwardBackward::kBudget);
  EXPECT_EQ(f.host.evicted_ids(), Ids{f.d});
}

// The Belady scenario above with d, the farthest, still used by a queued kernel: by default
// it goes all the same; with LEARNED_IDLE_FIRST the farthest idle block (c) goes instead, and
// d only when the idle ones do not suffice. With `young_b_and_c`, b and c were used by the
// kernel being decided (their eviction would wait for it) and b is still in use too.
Ids evicted_with_d_in_use(const char* idle_first, uint64_t bytes_needed, bool young_b_and_c = false) {
  ForwardBackward f;
  f.host.set_config("LEARNED_LOOKAHEAD", "0");
  if (idle_first) f.host.set_config("LEARNED_IDLE_FIRST", idle_first);
  PolicyInstance policy("learned", f.host);
  EXPECT_TRUE(policy.ready());
  for (int i = 0; i < 3; ++i) run_period(policy, f.host, f.period, ForwardBackward::kBudget);
  evict_all(f.host, {f.a, f.b, f.c, f.d});
  for (uint64_t id : {f.b, f.c, f.d}) EXPECT_EQ(f.host.table()->prefetch(f.host.table(), id, PUMP_WHEN_NOW), PUMP_OK);
  f.host.set_flags(f.d, PUMP_BLOCK_IN_USE);
  if (young_b_and_c) {
    f.host.set_flags(f.b, PUMP_BLOCK_IN_USE);
    f.host.set_last_use(f.b, f.host.next_kernel_seq());
    f.host.set_last_use(f.c, f.host.next_kernel_seq());
  }
  f.host.evictions.clear();
  policy.on_pressure(f.host.begin_kernel(f.period[0]), bytes_needed);
  f.host.end_kernel();
  Ids out = f.host.evicted_ids();
  // Which block is which, by name, for the expectations.
  for (uint64_t& id : out) id = id == f.b ? 'b' : id == f.c ? 'c' : id == f.d ? 'd' : id;
  return out;
}

TEST(PolicyLearned, WithIdleFirstAYoungIdleBlockGoesBeforeAnOldOneInUse) {
  EXPECT_EQ(evicted_with_d_in_use(nullptr, 100, /*young_b_and_c=*/true), Ids{'d'}) << "old before young, in use or not";
  EXPECT_EQ(evicted_with_d_in_use("1", 100, /*young_b_and_c=*/true), Ids{'c'});
  EXPECT_EQ(evicted_with_d_in_use("1", 200, /*young_b_and_c=*/true), (Ids{'c', 'd'})) << "the young one in use stays";
}

// A cycle of `length` kernels, one block each, learned as a period. Then the blocks of the
// last ten kernels are resident (the one just used is due back farthest) and the first
// kernel needs room for one. Which of them goes tells how many of the last kernels count as
// young. `warnings`: how many warnings the policy logged.
uint64_t age_of_the_victim_on_a_cycle(uint64_t length, const char* min_age, size_t* warnings = nullptr) {
  constexpr uint64_t kBudget = 10000, kResident = 10;
  FakePolicyHost host{kBudget};
  Ids blocks;
  for (uint64_t i = 0; i < length; ++i) blocks.push_back(host.add_block(100, PUMP_ROLE_WEIGHT, false));
  host.set_config("LEARNED_LOOKAHEAD", "0");
  if (min_age) host.set_config("LEARNED_MIN_AGE", min_age);
  PolicyInstance policy("learned", host);
  EXPECT_TRUE(policy.ready());
  for (int lap = 0; lap < 3; ++lap)
    for (uint64_t b : blocks) run_kernel(policy, host, {b}, kBudget);
  evict_all(host, blocks);
  const uint64_t now = host.next_kernel_seq();
  for (uint64_t age = 1; age <= kResident; ++age) {
    const uint64_t b = blocks[length - age];
    EXPECT_EQ(host.table()->prefetch(host.table(), b, PUMP_WHEN_NOW), PUMP_OK);
    host.set_last_use(b, now - age);
  }
  host.evictions.clear();
  policy.on_pressure(host.begin_kernel({blocks[0]}), 100);
  host.end_kernel();
  if (warnings) {
    *warnings = 0;
    for (const auto& line : host.logs) *warnings += line.level == PUMP_LOG_WARN;
  }
  const Ids evicted = host.evicted_ids();
  if (evicted.size() != 1) return 0;
  return length - static_cast<uint64_t>(std::find(blocks.begin(), blocks.end(), evicted[0]) - blocks.begin());
}

// Young means the last 1/64 of the period (at least 2 kernels), not a fixed two: a victim
// the last kernels used leaves only when they are done, and its fetch waits for that (on the
// sim's recorded traces, learned at 1.5 then replays as fast as lru but on the LSTM trace).
TEST(PolicyLearned, TheYoungAreTheLastKernelsOfAShareOfThePeriod) {
  EXPECT_EQ(age_of_the_victim_on_a_cycle(256, nullptr), 4u) << "the oldest of the farthest, past 256 / 64 kernels";
  EXPECT_EQ(age_of_the_victim_on_a_cycle(512, nullptr), 8u) << "512 / 64";
  EXPECT_EQ(age_of_the_victim_on_a_cycle(64, nullptr), 2u) << "at least the last kernel's";
}

TEST(PolicyLearned, LearnedMinAgeFixesHowManyKernelsAreYoung) {
  EXPECT_EQ(age_of_the_victim_on_a_cycle(256, "2"), 2u);
  EXPECT_EQ(age_of_the_victim_on_a_cycle(256, "6"), 6u);
  EXPECT_EQ(age_of_the_victim_on_a_cycle(256, "0"), 1u) << "none young: the farthest, just used";
  for (const char* bad : {"abc", "-1", "4x", ""}) {
    size_t warnings = 0;
    EXPECT_EQ(age_of_the_victim_on_a_cycle(256, bad, &warnings), 4u) << "'" << bad << "': the default";
    EXPECT_EQ(warnings, 1u) << "'" << bad << "'";
  }
}

TEST(PolicyLearned, PressureTakesTheFarthestBlockEvenInUseUnlessIdleFirstIsSet) {
  EXPECT_EQ(evicted_with_d_in_use(nullptr, 100), Ids{'d'});
  EXPECT_EQ(evicted_with_d_in_use("0", 100), Ids{'d'});
  EXPECT_EQ(evicted_with_d_in_use("1", 100), Ids{'c'}) << "the farthest idle block";
  EXPECT_EQ(evicted_with_d_in_use("1", 300), (Ids{'c', 'b', 'd'})) << "the one in use last, when needed";
}

TEST(PolicyLearned, PressureEvictsABlockNeverUsedInThePeriodFirst) {
  ForwardBackward f;
  f.host.set_config("LEARNED_LOOKAHEAD", "0");
  PolicyInstance policy("learned", f.host);
  ASSERT_TRUE(policy.ready());
  for (int i = 0; i < 3; ++i) run_period(policy, f.host, f.period, ForwardBackward::kBudget);
  f.host.table()->evict(f.host.table(), f.d, 0);  // make room for a stranger, most recently used
  const uint64_t stranger = f.host.add_block(100, PUMP_ROLE_UNKNOWN, true);
  ASSERT_EQ(f.host.lru_order().back(), stranger);
  f.host.evictions.clear();
  run_kernel(policy, f.host, f.period[0], ForwardBackward::kBudget);
  EXPECT_EQ(f.host.evicted_ids(), Ids{stranger});
}

TEST(PolicyLearned, EvictionWritesBackUnlessTheHostFlagsTheBlockDead) {
  ForwardBackward f;
  f.host.set_config("LEARNED_LOOKAHEAD", "0");
  PolicyInstance policy("learned", f.host);
  ASSERT_TRUE(policy.ready());
  for (int i = 0; i < 3; ++i) run_period(policy, f.host, f.period, ForwardBackward::kBudget);
  f.host.evictions.clear();
  run_kernel(policy, f.host, f.period[0], ForwardBackward::kBudget);
  ASSERT_EQ(f.host.evictions.size(), 1u);
  EXPECT_EQ(f.host.evictions[0].flags, 0u) << "a prediction never justifies dropping data";
}

// Every host call in order, so a lookahead eviction can be paired with the
// prefetch it made room for.
struct HostCall {
  bool evict;
  uint64_t id;
};
std::vector<HostCall>* g_calls = nullptr;
pump_status_v1_t (*g_real_prefetch)(const pump_policy_host_v1_t*, uint64_t, pump_when_v1_t) = nullptr;
pump_status_v1_t (*g_real_evict)(const pump_policy_host_v1_t*, uint64_t, uint32_t) = nullptr;

pump_status_v1_t logged_prefetch(const pump_policy_host_v1_t* host, uint64_t id, pump_when_v1_t when) {
  const pump_status_v1_t status = g_real_prefetch(host, id, when);
  if (g_calls && status == PUMP_OK) g_calls->push_back({false, id});
  return status;
}
pump_status_v1_t logged_evict(const pump_policy_host_v1_t* host, uint64_t id, uint32_t flags) {
  const pump_status_v1_t status = g_real_evict(host, id, flags);
  if (g_calls && status == PUMP_OK) g_calls->push_back({true, id});
  return status;
}

TEST(PolicyLearned, LookaheadNeverEvictsABlockNeededBeforeTheOneItPrefetches) {
  FakePolicyHost host(500);
  Ids blk;
  for (int i = 0; i < 8; ++i) blk.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
  // A forward and a backward sweep over pairs: each block comes back after a long gap.
  std::vector<Ids> period;
  for (int i = 0; i < 7; ++i) period.push_back({blk[i], blk[i + 1]});
  for (int i = 7; i > 0; --i) period.push_back({blk[i], blk[i - 1]});
  host.set_config("LEARNED_LOOKAHEAD", "100%");
  pump_policy_host_v1_t* table = host.mutable_table();
  g_real_prefetch = table->prefetch;
  g_real_evict = table->evict;
  table->prefetch = &logged_prefetch;
  table->evict = &logged_evict;
  PolicyInstance policy("learned", host);
  ASSERT_TRUE(policy.ready());
  for (int i = 0; i < 3; ++i) run_period(policy, host, period, 500);

  // Kernels until the next use of `id` after position `at` (1 = the next kernel).
  auto distance = [&](size_t at, uint64_t id) {
    for (size_t d = 1; d <= period.size(); ++d) {
      const Ids& k = period[(at + d) % period.size()];
      if (std::find(k.begin(), k.end(), id) != k.end()) return d;
    }
    return period.size() + 1;
  };
  size_t lookahead_prefetches = 0;
  for (int round = 0; round < 2; ++round) {
    for (size_t at = 0; at < period.size(); ++at) {
      const pump_kernel_v1_t& kernel = host.begin_kernel(period[at]);
      uint64_t missing = 0;
      for (uint64_t id : period[at])
        if (host.block(id).residency != PUMP_RESIDENT_DEVICE) missing += 100;
      if (missing && host.resident_bytes() + missing > 500)
        policy.on_pressure(kernel, host.resident_bytes() + missing - 500);
      std::vector<HostCall> calls;
      g_calls = &calls;
      policy.on_kernel(kernel);
      g_calls = nullptr;
      host.end_kernel();
      for (size_t i = 0; i < calls.size(); ++i) {
        if (!calls[i].evict) {
          const bool own = std::find(period[at].begin(), period[at].end(), calls[i].id) != period[at].end();
          lookahead_prefetches += !own;
          continue;
        }
        auto made_room_for =
            std::find_if(calls.begin() + static_cast<long>(i), calls.end(), [](const HostCall& c) { return !c.evict; });
        ASSERT_NE(made_room_for, calls.end()) << "an eviction in on_kernel that made room for nothing";
        EXPECT_GT(distance(at, calls[i].id), distance(at, made_room_for->id))
            << "at kernel " << at << ": evicted block " << calls[i].id << " is needed before block "
            << made_room_for->id << " it made room for";
      }
    }
  }
  EXPECT_GT(lookahead_prefetches, 0u) << "the lookahead never ran: the check above proved nothing";
}

// LEARNED_GAP_LOOKAHEAD=1 (an experiment): no kernel is ever seen twice (each one's first
// block is a fresh activation, as a decoder's growing cache makes them), so no period forms;
// but each of three weights comes back every third kernel, and once that gap held twice
// the next ones are prefetched ahead. Off (the default), only the kernel's own blocks.
TEST(PolicyLearned, WithTheGapLookaheadRangesThatRecurLikeClockworkArePrefetchedWithoutAPeriod) {
  for (const bool on : {false, true}) {
    FakePolicyHost host{10000};
    if (on) host.set_config("LEARNED_GAP_LOOKAHEAD", "1");
    Ids weights;
    for (int i = 0; i < 3; ++i) weights.push_back(host.add_block(100, PUMP_ROLE_UNKNOWN, false));
    host.add_block(10000, PUMP_ROLE_UNKNOWN, false);  // tracked memory exceeds the budget
    PolicyInstance policy("learned", host);
    ASSERT_TRUE(policy.ready());
    for (int i = 0; i < 12; ++i)
      run_kernel(policy, host, {host.add_block(100, PUMP_ROLE_ACTIVATION, false), weights[i % 3]}, 10000);
    evict_all(host, weights);
    const uint64_t fresh = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
    run_kernel(policy, host, {fresh, weights[0]}, 10000);
    const Ids expected = on ? Ids{fresh, weights[0], weights[1], weights[2]} : Ids{fresh, weights[0]};
    EXPECT_EQ(prefetched_ids(host), expected) << (on ? "with" : "without") << " the gap lookahead";
  }
}

// A range whose gap broke (it did not come back when predicted) is not fetched ahead on it;
// one whose gap holds still is.
TEST(PolicyLearned, TheGapLookaheadDropsARangeWhoseGapBroke) {
  FakePolicyHost host{10000};
  host.set_config("LEARNED_GAP_LOOKAHEAD", "1");
  Ids weights;
  for (int i = 0; i < 4; ++i) weights.push_back(host.add_block(100, PUMP_ROLE_UNKNOWN, false));
  host.add_block(10000, PUMP_ROLE_UNKNOWN, false);
  PolicyInstance policy("learned", host);
  ASSERT_TRUE(policy.ready());
  auto fresh = [&] { return host.add_block(100, PUMP_ROLE_ACTIVATION, false); };
  for (int i = 0; i < 12; ++i) run_kernel(policy, host, {fresh(), weights[i % 3]}, 10000);
  // Weights 1 and 2 stop coming; weights 0 and 3 take turns from here (3 comes every other kernel).
  for (int i = 0; i < 8; ++i) run_kernel(policy, host, {fresh(), weights[i % 2 ? 3 : 0]}, 10000);
  evict_all(host, weights);
  run_kernel(policy, host, {fresh(), weights[0]}, 10000);
  const Ids got = prefetched_ids(host);
  EXPECT_EQ(std::count(got.begin(), got.end(), weights[1]), 0);
  EXPECT_EQ(std::count(got.begin(), got.end(), weights[2]), 0);
  EXPECT_EQ(std::count(got.begin(), got.end(), weights[3]), 1) << "its gap holds: fetched ahead";
}

// Two ranges due at the same kernel (one kernel reading two weights) are both fetched ahead.
TEST(PolicyLearned, TheGapLookaheadFetchesEveryRangeDueAtOneKernel) {
  FakePolicyHost host{10000};
  host.set_config("LEARNED_GAP_LOOKAHEAD", "1");
  Ids a, b;
  for (int i = 0; i < 3; ++i) {
    a.push_back(host.add_block(100, PUMP_ROLE_UNKNOWN, false));
    b.push_back(host.add_block(100, PUMP_ROLE_UNKNOWN, false));
  }
  host.add_block(10000, PUMP_ROLE_UNKNOWN, false);
  PolicyInstance policy("learned", host);
  ASSERT_TRUE(policy.ready());
  for (int i = 0; i < 12; ++i)
    run_kernel(policy, host, {host.add_block(100, PUMP_ROLE_ACTIVATION, false), a[i % 3], b[i % 3]}, 10000);
  Ids all = a;
  all.insert(all.end(), b.begin(), b.end());
  evict_all(host, all);
  run_kernel(policy, host, {host.add_block(100, PUMP_ROLE_ACTIVATION, false), a[0], b[0]}, 10000);
  const Ids got = prefetched_ids(host);
  for (uint64_t id : {a[1], b[1], a[2], b[2]}) EXPECT_EQ(std::count(got.begin(), got.end(), id), 1) << id;
}

// The lookahead asks where each predicted block is, about 20 times a kernel on BERT near fit: a
// host with SDK 1.5's locate_block answers without a fence query, so it asks that, not find_block
// (which it still uses on an older host, fetching the same blocks ahead).
TEST(PolicyLearned, TheLookaheadLocatesBlocksWithoutFindBlockWhereTheHostCan) {
  for (const bool sdk_1_4 : {false, true}) {
    Chain c;
    if (sdk_1_4) c.host.pretend_sdk_1_4();
    PolicyInstance policy("learned", c.host);
    ASSERT_TRUE(policy.ready());
    learn(policy, c);
    evict_all(c.host, c.blocks);
    const size_t found_before = c.host.find_block_calls, located_before = c.host.locate_block_calls;
    run_kernel(policy, c.host, c.period[0], Chain::kBudget);
    EXPECT_EQ(prefetched_ids(c.host), Ids(c.blocks.begin(), c.blocks.begin() + 6)) << "SDK 1.4 host: " << sdk_1_4;
    const size_t found = c.host.find_block_calls - found_before, located = c.host.locate_block_calls - located_before;
    EXPECT_EQ(found, sdk_1_4 ? 5u : 0u);
    EXPECT_EQ(located, sdk_1_4 ? 0u : 5u) << "one lookup per block fetched ahead";
  }
}

// LEARNED_LOOKAHEAD in bytes or percent of the 10000-byte budget: how many of
// the five predicted 100-byte kernels after the first are prefetched ahead.
struct LookaheadCase {
  const char* value;
  size_t kernels_ahead;
  size_t warnings;
};

void PrintTo(const LookaheadCase& c, std::ostream* os) {
  *os << "LEARNED_LOOKAHEAD=";
  if (c.value) *os << "'" << c.value << "'";
  else *os << "(unset)";
}

class PolicyLearnedLookaheadConfig : public ::testing::TestWithParam<LookaheadCase> {};

TEST_P(PolicyLearnedLookaheadConfig, PrefetchesTheConfiguredWindowOrWarnsOnceAndUsesTheDefault) {
  const LookaheadCase& p = GetParam();
  Chain c;
  if (p.value) c.host.set_config("LEARNED_LOOKAHEAD", p.value);
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  learn(policy, c);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[0], Chain::kBudget);
  EXPECT_EQ(prefetched_ids(c.host), Ids(c.blocks.begin(), c.blocks.begin() + 1 + static_cast<long>(p.kernels_ahead)));
  size_t warnings = 0;
  for (const auto& line : c.host.logs) {
    EXPECT_EQ(line.level, PUMP_LOG_WARN) << line.message;
    if (line.level == PUMP_LOG_WARN) {
      ++warnings;
      EXPECT_NE(line.message.find("LEARNED_LOOKAHEAD"), std::string::npos) << line.message;
    }
  }
  EXPECT_EQ(warnings, p.warnings);
}

INSTANTIATE_TEST_SUITE_P(
    Values, PolicyLearnedLookaheadConfig,
    ::testing::Values(LookaheadCase{nullptr, 5, 0}, LookaheadCase{"0", 0, 0}, LookaheadCase{"0%", 0, 0},
                      LookaheadCase{"100", 1, 0}, LookaheadCase{"250 B", 2, 0}, LookaheadCase{"3%", 3, 0},
                      LookaheadCase{"0.4k", 4, 0}, LookaheadCase{"100%", 5, 0}, LookaheadCase{"lots", 5, 1},
                      LookaheadCase{"", 5, 1}, LookaheadCase{"-5", 5, 1}, LookaheadCase{"101%", 5, 1},
                      LookaheadCase{"1e3", 5, 1}, LookaheadCase{"12XB", 5, 1}, LookaheadCase{"5%%", 5, 1}));

}  // namespace
