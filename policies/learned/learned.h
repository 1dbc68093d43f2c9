// The state of policy "learned" (policy_learned.cc says what it does) and the functions
// its files share. Internal to the plugin: nothing here is exported.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

#include "pump/pump_sdk.h"

namespace learned {

constexpr size_t kHistoryKernels = size_t{1} << 16;  // longest period that can be learned
constexpr size_t kMaxRanges = size_t{1} << 20;       // distinct ranges before everything is relearned
constexpr uint32_t kConfirmMatches = 8;     // kernels in a row matching P kernels before: a period to look ahead by
constexpr uint32_t kTentativeMatches = 2;   // ... a tentative period: it ranks victims, ends at its first miss
constexpr uint32_t kBreakAfterMisses = 2;   // kernels off a confirmed period in a row that end it
constexpr uint32_t kCandidates = 4;         // candidate periods followed at once while detecting
constexpr uint32_t kRelearnsPerPeriod = 8;  // most rebuilds of a changed period per period
constexpr uint64_t kNoUse = UINT64_MAX;     // predicted next use: none known
constexpr uint32_t kNever = UINT32_MAX;     // next-use distance of a range with no predicted use
constexpr uint64_t kYoungFloor = 2;         // the last kernel's blocks are always young (young_age)
constexpr uint64_t kYoungShare = 64;        // ... and those of the last 1/64 of the period
constexpr size_t kDormantPeriods = 4;       // dropped periods kept to be taken back
constexpr uint32_t kDormantMinLength = 64;  // ... when at least this long (shorter ones cost little to build)
// With LEARNED_ANCHOR=extents, a kernel's anchor is the address of its first extent that is not
// a workspace and holds at least 1/kAnchorShare of the budget (a weight, a large activation), else
// what its first extent is (size, access, role): sequence.cc, anchor_of.
constexpr uint64_t kAnchorShare = 4096;
// A period of kBuildMinLength kernels or more is built for a candidate only once kBuildMatches
// kernels in a row matched: building costs its every entry, and near fit detection found a new
// two-match candidate (two like layers) every few kernels, each built and lost at once (on the
// recorded BERT steps replayed at 1.05: 10.6 million entries built, 3.6 million with 3, the same
// bytes moved).
constexpr uint32_t kBuildMinLength = 64;
constexpr uint32_t kBuildMatches = 3;

uint64_t mix64(uint64_t x);

struct RangeKey {
  uint64_t address;
  uint64_t bytes;
  bool operator==(const RangeKey& o) const { return address == o.address && bytes == o.bytes; }
};
struct RangeKeyHash {
  size_t operator()(const RangeKey& k) const { return static_cast<size_t>(mix64(k.address ^ mix64(k.bytes))); }
};

// What is known of one address range a kernel touched (a block as the engine showed it).
struct RangeInfo {
  RangeKey key{};
  uint64_t last_use = kNoUse;    // ordinal of its last use
  uint64_t next_use = kNoUse;    // ordinal of its next use as the period predicts (valid in `epoch`)
  uint32_t epoch = 0;            // the period next_use was predicted by
  uint32_t stride = 0;           // a next_use that passed unused is expected this much later
  uint32_t gap = 0;              // kernels between its last two uses; 0: used once
  bool gap_stable = false;       // its last two gaps were equal: it recurs like clockwork
  uint32_t max_gap = 0;          // its longest reuse gap: when it is back, once its last gap passed without it
  bool last_overwrote = false;   // its last use only wrote it
  uint64_t upcoming = kNoUse;    // its entry in LearnedPolicy::upcoming (a predicted ordinal), if any
  bool next_overwrites = false;  // its predicted next use only writes it (it comes back without a copy)
  bool held = false;             // its last use came when predicted: worth fetching ahead
  bool ahead = false;            // the lookahead brought it in and no kernel used it since
};

// One observed kernel.
struct KernelRecord {
  uint64_t anchor = 0;  // which kernel it is: its first block and stream (block lists vary with residency)
  uint64_t bytes = 0;
  bool matched = false;  // it was the kernel its period slot predicted
  std::vector<uint32_t> ranges;
  std::vector<uint8_t> overwrites;  // per range: written, not read (its old bytes are not needed)
};

// The learned period: P kernels, slot j = kernel ordinal base + j (mod P).
struct Period {
  uint32_t length = 0;  // 0: none learned
  uint64_t base = 0;
  std::vector<uint64_t> slot_anchor;
  std::vector<uint32_t> slot_offsets;  // CSR: entries of slot j
  std::vector<uint32_t> slot_ranges;
  std::vector<uint8_t> slot_overwrites;
  std::vector<uint32_t> slot_next;       // per entry: kernels until its range is used again (1..P)
  std::vector<uint8_t> next_overwrites;  // per entry: that next use only writes it
  std::vector<uint64_t> byte_prefix;     // over two periods: bytes of slots [0, i) (wrapping)

  uint32_t slot_of(uint64_t ordinal) const { return static_cast<uint32_t>((ordinal - base) % length); }
  // Bytes of the kernels in slots from+1 .. from+count.
  uint64_t bytes_after(uint32_t from, uint32_t count) const {
    return byte_prefix[from + 1 + count] - byte_prefix[from + 1];
  }
};

// A period dropped, kept to be taken back: its tables and when they were built.
struct DormantPeriod {
  Period period;
  uint64_t built_at = 0;
};

// The last ordinals at which an anchor was seen, the most recent first.
struct Occurrences : std::array<uint64_t, kCandidates> {
  Occurrences() { fill(kNoUse); }
};

// A candidate period: `matches` kernels in a row were the kernel `distance` before them.
struct Candidate {
  uint32_t distance = 0;
  uint32_t matches = 0;
};

struct Victim {
  uint64_t score;     // its distance, weighed by what evicting it moves (victims.cc); never used first
  uint32_t distance;  // kernels until its predicted next use
  uint32_t lru_rank;  // older (smaller) first among equals
  uint32_t range;     // UINT32_MAX: no range known
  size_t candidate;
  bool operator<(const Victim& o) const {  // max-heap: the best victim on top
    return score != o.score ? score < o.score : lru_rank > o.lru_rank;
  }
};

struct Lookahead {
  bool is_percent = true;
  double percent = 25.0;
  uint64_t bytes = 0;
};

// Bytes the lookahead brought in, used by their kernel or evicted unused; the window
// shrinks while much of it is wasted (a prediction that does not hold moves bytes for nothing).
struct LookaheadGuard {
  uint64_t useful = 0;
  uint64_t wasted = 0;
  uint32_t shift = 0;  // the window is the configured one >> shift
};

// What it did over the run, said at the end (learned_fini) so a run shows whether a period
// was found and followed.
struct Summary {
  uint64_t kernels_observed = 0;    // kernels seen while the tracked memory exceeded the budget
  uint64_t kernels_predicted = 0;   // ... that were the kernel their period slot predicted
  uint64_t confirmations = 0;       // periods confirmed
  uint64_t ended = 0;               // confirmed periods ended (kernels off them, the program fitting, a reset)
  uint32_t period_length = 0;       // kernels in the period confirmed last
  uint64_t ahead_used_bytes = 0;    // fetched ahead, then used by their kernel
  uint64_t ahead_wasted_bytes = 0;  // fetched ahead, evicted unused by the policy itself
  uint64_t builds = 0;              // periods' tables built (adopted or relearned)
  uint64_t built_entries = 0;       // ... their entries together (the work of building them)
  uint64_t resumes = 0;             // dropped periods taken back without a build
  // Host time, ns, past the fits gate: where the policy's share of a launch goes.
  uint64_t observe_ns = 0;     // observing the kernel (recording, detection, building)
  uint64_t lookahead_ns = 0;   // fetching ahead (its evictions and the host's calls included)
  uint64_t pressure_ns = 0;    // on_pressure (observing excluded)
  uint64_t ranking_ns = 0;     // ranking victims, in either (rank_victims)
  uint64_t candidates_ns = 0;  // ... of it the host's eviction_candidates
};

// Adds the time from its construction to its end to `*sum` (ns).
class Timed {
 public:
  explicit Timed(uint64_t* sum) : sum_(sum), begin_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    *sum_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin_).count());
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  uint64_t* sum_;
  std::chrono::steady_clock::time_point begin_;
};

struct LearnedPolicy {
  const pump_policy_host_v1_t* host = nullptr;
  Lookahead lookahead;
  bool call_extents = false;  // LEARNED_ANCHOR=extents on an SDK 1.6 host: anchors are read from the extents
  bool idle_first = false;    // LEARNED_IDLE_FIRST: under pressure, blocks no queued kernel uses go first
  // Kernels since a block's last use before evicting it overlaps with compute: LEARNED_MIN_AGE
  // when given (0: none young), else young_age()'s share of the period.
  bool min_age_given = false;
  uint64_t min_age = 0;

  // Observation (only while the tracked memory exceeds the budget: otherwise nothing is decided).
  std::unordered_map<RangeKey, uint32_t, RangeKeyHash> range_ids;
  std::vector<RangeInfo> ranges;
  std::vector<KernelRecord> history;                    // ring of kHistoryKernels, indexed by ordinal
  std::unordered_map<uint64_t, Occurrences> last_seen;  // anchor -> where it was seen
  uint64_t last_seen_through = 0;                       // last_seen holds the kernels before this ordinal
  uint64_t next_ordinal = 0;                            // ordinals observed so far
  uint64_t observed_seq = 0;                            // engine seq of the kernel observed last
  bool observed_any = false;
  bool paused = true;  // the program fit: kernels were not observed, the sequence has a gap

  // Detection and following.
  std::array<Candidate, kCandidates> candidates_seen;
  uint32_t live_candidates = 0;
  uint32_t candidate_gap = 0;  // the best candidate's distance (0: none): a guess for ranges used once
  Period period;
  // Periods dropped lately (kDormantPeriods, the last dropped first): detection finds one again
  // a few kernels on, and taking its tables back costs no build (a training step whose kernels
  // are the last one's but for a few addresses drops and finds its period many times a step).
  std::array<DormantPeriod, kDormantPeriods> dormant;
  bool confirmed = false;     // the period is sure enough to prefetch by (else it only ranks victims)
  uint32_t epoch = 0;         // bumped per period built or taken back (the ranges' predictions are its)
  uint64_t built_at = 0;      // ordinal at which the period's tables were built
  uint32_t misses = 0;        // kernels in a row that were not the period's
  bool period_stale = false;  // a matched kernel touched other ranges than its slot: rebuild
  bool predicting = false;    // the current kernel is the one its period slot predicted
  uint32_t current_slot = 0;
  uint32_t current_farthest = 0;  // farthest next use among the current kernel's ranges
  uint64_t lookahead_next = 0;    // first predicted ordinal whose blocks are not requested yet
  LookaheadGuard guard;
  // Without a confirmed period: the ranges whose reuse gap held twice, by the ordinal they
  // come back at (a decoder whose growing cache keeps its kernels from forming a period
  // still reads each weight once a token), and the ordinal up to which they were requested.
  std::set<std::pair<uint64_t, uint32_t>> upcoming;
  std::pair<uint64_t, uint32_t> upcoming_requested{};  // the last entry asked for (ordinals tie)
  bool gap_lookahead = false;                          // LEARNED_GAP_LOOKAHEAD=1 (an experiment: off by default)

  // Candidates of the current decision, ranked once per callback.
  std::vector<pump_block_v1_t> candidates;
  std::vector<Victim> victims;                      // a max-heap: the best victim on top
  std::vector<Victim> victims_idle_dead;            // the dead ones not in use, least recently used first
  std::vector<Victim> victims_kept, victims_young;  // evict_farthest's scratch
  bool victims_ready = false;
  uint64_t victims_seq = 0;

  std::vector<uint32_t> scratch;  // period building: per range, its next position
  Summary summary;
};

// sequence.cc: observation, following the period, predictions.
void observe(LearnedPolicy* s, const pump_kernel_v1_t* kernel);
void forget_everything(LearnedPolicy* s);
void pause_observation(LearnedPolicy* s);
// One line: how much of the run its period predicted (learned_fini logs it).
void describe_summary(const LearnedPolicy& s, char* out, size_t size);
const KernelRecord& record_at(const LearnedPolicy& s, uint64_t ordinal);
// Kernels from the current one until range `id`'s predicted next use; kNever if none.
uint32_t distance_of_range(const LearnedPolicy& s, uint32_t id);
uint32_t range_of(const LearnedPolicy& s, const pump_block_v1_t& b);  // UINT32_MAX: unknown

// detection.cc: candidate periods.
// Follows the candidates with the kernel recorded at `ordinal`; returns the best (0 matches: none).
Candidate detect(LearnedPolicy* s, uint64_t ordinal);
void reset_detection(LearnedPolicy* s);
void forget_seen(LearnedPolicy* s);  // also where anchors were seen (a gap in the sequence)

// period.cc: the period's tables.
Period build_period(const std::vector<const KernelRecord*>& slots, uint64_t base, std::vector<uint32_t>* scratch);
// The period of the last `length` kernels (the slots of kernels that were not their
// slot's keep what they had), and every range's next use by it.
void learn_period(LearnedPolicy* s, uint32_t length);
// The records of the `length` kernels up to `ordinal` stand for their slots when a period is
// (re)learned from them.
void mark_matched(LearnedPolicy* s, uint64_t ordinal, uint32_t length);
// Takes a dormant period back when it is `length` kernels long and its slots for the kernels
// at `ordinal` and the one before are theirs (by anchor): nothing is built, the ranges' next
// uses are predicted afresh from it. False when none is that period.
bool resume_period(LearnedPolicy* s, uint32_t length, uint64_t ordinal);
// Keeps the period followed among the dormant ones (when long enough), leaving none followed.
void set_dormant(LearnedPolicy* s);
void forget_dormant(LearnedPolicy* s);

// victims.cc: eviction. What a pass does with a choice that a kernel still queued uses.
enum class InUse {
  kTake,  // evict it (the fetch needing its room waits for that kernel)
  kStop,  // stop the pass there, rather than take a nearer choice
  kSkip,  // pass over it to the next choice
};
uint64_t evict_farthest(LearnedPolicy* s, uint64_t bytes_needed, uint32_t protect_distance, InUse in_use,
                        uint64_t min_age);
uint64_t free_bytes(const LearnedPolicy& s);
// The min_age of the decision: LEARNED_MIN_AGE, else 1/kYoungShare of the period being followed
// (tentative or confirmed), at least kYoungFloor kernels (so kYoungFloor while none is).
uint64_t young_age(const LearnedPolicy& s);

// lookahead.cc: prefetch of the predicted next kernels' blocks.
void prefetch_ahead(LearnedPolicy* s);
// The same by the ranges' own reuse gaps (LearnedPolicy::upcoming), while no period is confirmed.
void prefetch_ahead_by_gaps(LearnedPolicy* s);
void note_used_ahead(LearnedPolicy* s, RangeInfo& r);
void note_evicted(LearnedPolicy* s, uint32_t range);

}  // namespace learned
