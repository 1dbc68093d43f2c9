/*
 * Policy "learned": learns the program's repeating kernel sequence online (a
 * training loop repeats the same kernels on the same addresses every
 * iteration) and uses the prediction for
 *   - Belady eviction: under pressure, the resident blocks whose predicted next
 *     use is farthest go first (never used again in the period: first of all);
 *   - lookahead prefetch: after the current kernel, the blocks of the predicted
 *     next kernels are prefetched now, up to a byte window, evicting for them
 *     only blocks whose next use comes later than the prefetched block's (the
 *     MIN condition: a prefetch never pushes out something needed sooner).
 * Until a period is confirmed, and from the moment a kernel does not match the
 * prediction, it behaves like "lru" (kernel blocks now, dead-first LRU eviction,
 * no headroom by default).
 *
 * Blocks are keyed by address range (address, bytes), never by id: ids change
 * when the engine splits a block; a caching allocator hands out the same
 * addresses every iteration. Eviction is always a write-back unless the host
 * flags the block DEAD: a prediction may be wrong, data is never dropped on it.
 *
 * Config: LEARNED_LOOKAHEAD (PUMP_LEARNED_LOOKAHEAD): bytes of predicted
 * kernels' blocks to keep prefetched ahead ("512MiB", "1.5GiB", "0" = none) or
 * a percentage of the budget ("25%"). Default 25%. A bad value: one warning,
 * the default is used.
 *
 * C++ inside; only the extern "C" entry struct is exported, and no exception
 * leaves a callback (an allocation failure drops the learned state and the
 * policy goes on as lru).
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>
#include <vector>

#include "pump/pump_sdk.h"

namespace {

constexpr size_t kHistoryKernels = size_t{1} << 16;  // longest period that can be learned
constexpr size_t kMaxRanges = size_t{1} << 20;       // distinct ranges before everything is relearned
constexpr uint32_t kConfirmMatches = 8;              // matches (or P if smaller) that confirm a period
constexpr size_t kCandidatesInitial = 256;
constexpr size_t kCandidatesMax = size_t{1} << 14;  // Belady ranks at most this many LRU-first candidates
constexpr uint32_t kNever = UINT32_MAX;             // next-use distance of a range absent from the period
constexpr double kDefaultLookaheadPercent = 25.0;
constexpr double kLruHeadroomPercent = 0.0;  // as lru's default (see policy_lru.c)
constexpr uint64_t kDefaultMinAge = 2;

uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct RangeKey {
  uint64_t address;
  uint64_t bytes;
  bool operator==(const RangeKey& o) const { return address == o.address && bytes == o.bytes; }
};
struct RangeKeyHash {
  size_t operator()(const RangeKey& k) const { return static_cast<size_t>(mix64(k.address ^ mix64(k.bytes))); }
};

// One observed kernel: its signature and the ranges it touched.
struct KernelRecord {
  uint64_t signature = 0;
  uint64_t bytes = 0;
  std::vector<uint32_t> ranges;
};

// The learned period: P kernels, slot j = kernel ordinal base + j (mod P).
struct Period {
  uint32_t length = 0;  // 0: none learned
  uint64_t base = 0;
  std::vector<uint64_t> slot_signature;
  std::vector<uint32_t> slot_offsets;  // CSR: ranges of slot j
  std::vector<uint32_t> slot_ranges;
  std::vector<uint64_t> byte_prefix;  // over two periods: bytes of slots [0, i) (wrapping)
  std::vector<uint32_t> use_offsets;  // CSR: slots using range r, ascending
  std::vector<uint32_t> use_slots;

  uint32_t slot_of(uint64_t ordinal) const { return static_cast<uint32_t>((ordinal - base) % length); }

  // Kernels from slot `from` until range r is next used (strictly after `from`); kNever if never.
  uint32_t next_use(uint32_t range, uint32_t from) const {
    if (range + 1 >= use_offsets.size()) return kNever;
    const uint32_t* first = use_slots.data() + use_offsets[range];
    const uint32_t* last = use_slots.data() + use_offsets[range + 1];
    if (first == last) return kNever;
    const uint32_t* after = std::upper_bound(first, last, from);
    return after != last ? *after - from : *first + length - from;
  }
  // Bytes of the kernels in slots from+1 .. from+count.
  uint64_t bytes_after(uint32_t from, uint32_t count) const {
    return byte_prefix[from + 1 + count] - byte_prefix[from + 1];
  }
};

struct Victim {
  uint32_t distance;  // kNever first
  uint32_t lru_rank;  // older (smaller) first among equals
  size_t candidate;
  bool operator<(const Victim& o) const {  // max-heap: the best victim on top
    return distance != o.distance ? distance < o.distance : lru_rank > o.lru_rank;
  }
};

struct Lookahead {
  bool is_percent = true;
  double percent = kDefaultLookaheadPercent;
  uint64_t bytes = 0;
};

struct LearnedPolicy {
  const pump_policy_host_v1_t* host = nullptr;
  Lookahead lookahead;

  // Observation.
  std::unordered_map<RangeKey, uint32_t, RangeKeyHash> range_ids;
  std::vector<RangeKey> range_keys;
  std::vector<KernelRecord> history;                 // ring of kHistoryKernels, indexed by ordinal
  std::unordered_map<uint64_t, uint64_t> last_seen;  // signature -> ordinal
  // last_seen holds the kernels before this ordinal: while a period is followed it is not
  // needed, and catch_up_last_seen fills it from the history when it is (one map write per
  // kernel, as before, but none in the per-launch steady state).
  uint64_t last_seen_through = 0;
  uint64_t next_ordinal = 0;  // ordinals observed so far
  uint64_t observed_seq = 0;  // engine seq of the kernel observed last (0: none)
  bool observed_any = false;

  // Detection.
  uint32_t candidate = 0;
  uint32_t matches = 0;
  Period period;
  bool predicting = false;  // the current kernel matched the period's prediction
  uint32_t current_slot = 0;
  uint32_t current_farthest = 0;        // farthest next use among the current kernel's ranges
  bool current_farthest_known = false;  // computed on first use: most kernels never need it
  uint64_t lookahead_next = 0;          // first predicted ordinal whose blocks are not requested yet

  // Candidates of the current decision, ranked once per callback.
  std::vector<pump_block_v1_t> candidates;
  std::vector<Victim> victims;
  bool victims_ready = false;
  uint64_t victims_seq = 0;
  uint64_t min_age = kDefaultMinAge;  // kernels since a block's last use before it is "old"
};

// ------------------------------------------------------------------ config

void configure(LearnedPolicy* s) {
  const pump_policy_host_v1_t* host = s->host;
  if (const char* age = PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_config)
                            ? host->get_config(host, "LEARNED_MIN_AGE")
                            : nullptr)
    s->min_age = std::strtoull(age, nullptr, 10);
  const char* text =
      PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_config) ? host->get_config(host, "LEARNED_LOOKAHEAD") : nullptr;
  if (text == nullptr) return;
  // Through the host's size parser (SDK 1.1): bytes, or a percentage of the budget.
  pump_budget_v1_t budget{};
  host->get_budget(host, &budget);
  uint64_t bytes = 0;
  if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, parse_size) &&
      host->parse_size(host, text, budget.budget_bytes, &bytes) == PUMP_OK) {
    s->lookahead = Lookahead{false, 0.0, bytes};
    return;
  }
  s->lookahead = Lookahead{};
  char message[256];
  std::snprintf(message, sizeof message,
                "PUMP_LEARNED_LOOKAHEAD='%.64s' is not a byte size (e.g. 512MiB) or a percentage up to 100%% "
                "(e.g. 25%%): using %.0f%% of the budget",
                text, kDefaultLookaheadPercent);
  if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, log)) host->log(host, PUMP_LOG_WARN, message);
}

uint64_t lookahead_bytes(const Lookahead& l, uint64_t budget_bytes) {
  return l.is_percent ? static_cast<uint64_t>(static_cast<double>(budget_bytes) * l.percent / 100.0) : l.bytes;
}

// --------------------------------------------------------------- learning

void forget_everything(LearnedPolicy* s) {
  s->range_ids.clear();
  s->range_keys.clear();
  for (KernelRecord& r : s->history) r.ranges.clear();
  s->last_seen.clear();
  s->last_seen_through = s->next_ordinal;
  s->candidate = s->matches = 0;
  s->period = Period{};
  s->predicting = false;
}

bool in_history(const LearnedPolicy& s, uint64_t ordinal) {
  return ordinal < s.next_ordinal && s.next_ordinal - ordinal <= kHistoryKernels;
}

const KernelRecord& record_at(const LearnedPolicy& s, uint64_t ordinal) { return s.history[ordinal % kHistoryKernels]; }

// Tables of the period made of the last `length` observed kernels.
void build_period(LearnedPolicy* s, uint32_t length) {
  Period p;
  p.length = length;
  p.base = s->next_ordinal - length;
  p.slot_signature.resize(length);
  p.slot_offsets.assign(length + 1, 0);
  p.byte_prefix.assign(2 * static_cast<size_t>(length) + 1, 0);
  p.use_offsets.assign(s->range_keys.size() + 1, 0);
  for (uint32_t j = 0; j < length; ++j) {
    const KernelRecord& r = record_at(*s, p.base + j);
    p.slot_signature[j] = r.signature;
    p.slot_offsets[j + 1] = p.slot_offsets[j] + static_cast<uint32_t>(r.ranges.size());
    for (uint32_t id : r.ranges) ++p.use_offsets[id + 1];
  }
  for (size_t i = 0; i < 2 * static_cast<size_t>(length); ++i)
    p.byte_prefix[i + 1] = p.byte_prefix[i] + record_at(*s, p.base + i % length).bytes;
  for (size_t r = 0; r + 1 < p.use_offsets.size(); ++r) p.use_offsets[r + 1] += p.use_offsets[r];
  p.slot_ranges.resize(p.slot_offsets[length]);
  p.use_slots.resize(p.use_offsets.back());
  std::vector<uint32_t> fill(p.use_offsets.begin(), p.use_offsets.end() - 1);
  for (uint32_t j = 0; j < length; ++j) {
    const KernelRecord& r = record_at(*s, p.base + j);
    std::copy(r.ranges.begin(), r.ranges.end(), p.slot_ranges.begin() + p.slot_offsets[j]);
    for (uint32_t id : r.ranges) p.use_slots[fill[id]++] = j;  // ascending: j grows
  }
  s->period = std::move(p);
  s->lookahead_next = 0;
}

// Brings last_seen up to the kernels before `ordinal` (the current one, already in the
// history). Kernels that left the history are skipped: their entries would be too old to
// be usable (observe's `usable`) whether written or not.
void catch_up_last_seen(LearnedPolicy* s, uint64_t ordinal) {
  uint64_t o = s->last_seen_through;
  if (ordinal + 1 > kHistoryKernels && o < ordinal + 1 - kHistoryKernels) o = ordinal + 1 - kHistoryKernels;
  for (; o < ordinal; ++o) s->last_seen[record_at(*s, o).signature] = o;
  s->last_seen_through = ordinal;
}

// The ranges of the blocks in `kernel`, when they are those of the period's `slot` in order:
// one read of each range's key instead of a hash lookup (the steady state of a training loop).
bool ranges_as_predicted(const LearnedPolicy& s, uint32_t slot, const pump_kernel_v1_t* kernel) {
  const Period& p = s.period;
  const uint32_t first = p.slot_offsets[slot];
  if (p.slot_offsets[slot + 1] - first != kernel->num_blocks) return false;
  for (size_t i = 0; i < kernel->num_blocks; ++i) {
    const RangeKey& key = s.range_keys[p.slot_ranges[first + i]];
    if (key.address != kernel->blocks[i].address || key.bytes != kernel->blocks[i].bytes) return false;
  }
  return true;
}

uint32_t farthest_next_use(const LearnedPolicy& s, const KernelRecord& record) {
  uint32_t farthest = 0;
  for (uint32_t id : record.ranges) farthest = std::max(farthest, s.period.next_use(id, s.current_slot));
  return farthest;
}

// Records the kernel (once per engine seq: on_pressure and on_kernel both see it)
// and updates the period: confirm, follow, or break.
void observe(LearnedPolicy* s, const pump_kernel_v1_t* kernel) {
  if (s->observed_any && kernel->seq == s->observed_seq) return;
  s->observed_any = true;
  s->observed_seq = kernel->seq;
  s->victims_ready = false;
  if (s->range_keys.size() + kernel->num_blocks > kMaxRanges) forget_everything(s);

  const uint64_t ordinal = s->next_ordinal;
  KernelRecord& record = s->history[ordinal % kHistoryKernels];
  record.ranges.clear();
  record.bytes = 0;
  uint64_t signature = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < kernel->num_blocks; ++i) {
    const pump_block_v1_t& b = kernel->blocks[i];
    record.bytes += b.bytes;
    signature = mix64(signature ^ mix64(b.address) ^ mix64(b.bytes * 4 + b.access));
  }
  const uint32_t predicted_slot = s->period.length ? s->period.slot_of(ordinal) : 0;
  if (s->period.length && s->period.slot_signature[predicted_slot] == signature &&
      ranges_as_predicted(*s, predicted_slot, kernel)) {
    const uint32_t* first = s->period.slot_ranges.data() + s->period.slot_offsets[predicted_slot];
    record.ranges.assign(first, first + kernel->num_blocks);
  } else {
    for (size_t i = 0; i < kernel->num_blocks; ++i) {
      const RangeKey key{kernel->blocks[i].address, kernel->blocks[i].bytes};
      auto [it, inserted] = s->range_ids.try_emplace(key, static_cast<uint32_t>(s->range_keys.size()));
      if (inserted) s->range_keys.push_back(key);
      record.ranges.push_back(it->second);
    }
  }
  record.signature = signature;
  ++s->next_ordinal;

  if (s->period.length) {
    const uint32_t slot = s->period.slot_of(ordinal);
    if (s->period.slot_signature[slot] == signature) {
      s->predicting = true;
      s->current_slot = slot;
      s->current_farthest_known = false;
    } else {  // the program changed: back to lru until a period is confirmed again
      s->period = Period{};
      s->predicting = false;
      s->candidate = s->matches = 0;
    }
  }
  if (!s->period.length) {
    s->predicting = false;
    if (s->candidate && in_history(*s, ordinal - s->candidate) && ordinal >= s->candidate &&
        record_at(*s, ordinal - s->candidate).signature == signature) {
      ++s->matches;
    } else {
      catch_up_last_seen(s, ordinal);
      auto seen = s->last_seen.find(signature);
      const bool usable = seen != s->last_seen.end() && ordinal - seen->second < kHistoryKernels;
      s->candidate = usable ? static_cast<uint32_t>(ordinal - seen->second) : 0;
      s->matches = usable ? 1 : 0;
    }
    if (s->candidate && s->matches >= std::min(s->candidate, kConfirmMatches)) {
      build_period(s, s->candidate);
      s->predicting = true;
      s->current_slot = s->period.slot_of(ordinal);
      s->current_farthest_known = false;
    }
  }
  if (s->period.length) return;  // last_seen catches up when it is needed again
  catch_up_last_seen(s, ordinal);
  // Old signatures are useless once they left the history: keep the map bounded.
  if (s->last_seen.size() > 4 * kHistoryKernels) {
    s->last_seen.clear();
    for (uint64_t o = s->next_ordinal > kHistoryKernels ? s->next_ordinal - kHistoryKernels : 0; o < s->next_ordinal;
         ++o)
      s->last_seen[record_at(*s, o).signature] = o;
  }
  s->last_seen[signature] = ordinal;
  s->last_seen_through = ordinal + 1;
}

// ---------------------------------------------------------------- eviction

size_t fetch_candidates(LearnedPolicy* s) {
  const pump_policy_host_v1_t* host = s->host;
  for (;;) {
    size_t n = host->eviction_candidates(host, PUMP_ALL_ROLES, s->candidates.data(), s->candidates.size());
    if (n > s->candidates.size()) n = s->candidates.size();
    if (n < s->candidates.size() || s->candidates.size() >= kCandidatesMax) return n;
    s->candidates.resize(s->candidates.size() * 4);
  }
}

uint32_t distance_of(const LearnedPolicy& s, const pump_block_v1_t& b) {
  auto it = s.range_ids.find(RangeKey{b.address, b.bytes});
  return it == s.range_ids.end() ? kNever : s.period.next_use(it->second, s.current_slot);
}

// Ranks the host's candidates by predicted next use, once per callback.
void rank_victims(LearnedPolicy* s) {
  if (s->victims_ready && s->victims_seq == s->observed_seq) return;
  const size_t n = fetch_candidates(s);
  s->victims.clear();
  for (size_t i = 0; i < n; ++i)
    s->victims.push_back(Victim{distance_of(*s, s->candidates[i]), static_cast<uint32_t>(i), i});
  std::make_heap(s->victims.begin(), s->victims.end());
  s->victims_ready = true;
  s->victims_seq = s->observed_seq;
}

uint32_t evict_flags(const pump_block_v1_t& b) { return (b.flags & PUMP_BLOCK_DEAD) ? PUMP_EVICT_DISCARD : 0u; }

// Discarding an idle dead block moves nothing and waits for nothing: those go
// first, still only if not needed within `protect_distance` kernels.
uint64_t discard_idle_dead(LearnedPolicy* s, uint64_t bytes_needed, uint32_t protect_distance) {
  uint64_t freed = 0;
  for (Victim& v : s->victims) {
    if (freed >= bytes_needed) break;
    pump_block_v1_t& b = s->candidates[v.candidate];
    if (v.distance <= protect_distance) continue;
    if (b.bytes == 0 || (b.flags & (PUMP_BLOCK_DEAD | PUMP_BLOCK_IN_USE)) != PUMP_BLOCK_DEAD) continue;
    if (s->host->evict(s->host, b.id, PUMP_EVICT_DISCARD) == PUMP_OK) freed += b.bytes;
    b.bytes = 0;  // gone (or refused): never offered again
  }
  return freed;
}

// Whether evicting `b` for the kernel being decided can overlap with compute: its
// write-back (or drop) waits for its last kernel, and the fetch that needs the room
// waits for that. A block the last few kernels used leaves only when they are done,
// so kernel -> save -> fetch -> kernel runs in series (nothing hides the copies).
bool is_young(const LearnedPolicy& s, const pump_block_v1_t& b) {
  return b.last_use != 0 && s.observed_seq >= b.last_use && s.observed_seq - b.last_use < s.min_age;
}

// Belady: evicts the candidates used farthest in the future whose next use is
// later than `protect_distance` kernels from now, until `bytes_needed` are freed;
// blocks used by the last min_age kernels only when the older ones do not suffice.
// With `idle_only`, stops at the first choice still in use rather than take a
// nearer one (that would cost MIN a miss) or wait for its kernel on the
// transfer stream (that would hold back every transfer queued behind it).
uint64_t evict_farthest(LearnedPolicy* s, uint64_t bytes_needed, uint32_t protect_distance, bool idle_only) {
  rank_victims(s);
  uint64_t freed = discard_idle_dead(s, bytes_needed, protect_distance);
  if (freed >= bytes_needed) return freed;
  std::sort_heap(s->victims.begin(), s->victims.end());  // ascending: the best victim last
  for (int young_pass = 0; young_pass <= 1 && freed < bytes_needed; ++young_pass) {
    for (size_t i = s->victims.size(); i-- > 0 && freed < bytes_needed;) {
      const Victim& v = s->victims[i];
      if (v.distance <= protect_distance) break;
      pump_block_v1_t& b = s->candidates[v.candidate];
      if (b.bytes == 0 || is_young(*s, b) != (young_pass == 1)) continue;
      if (idle_only && (b.flags & PUMP_BLOCK_IN_USE)) break;
      if (s->host->evict(s->host, b.id, evict_flags(b)) == PUMP_OK) freed += b.bytes;
      b.bytes = 0;
    }
  }
  std::make_heap(s->victims.begin(), s->victims.end());
  return freed;
}

// lru's eviction: dead blocks first, then least recently used, among blocks
// whose flags pass (flags & mask) == 0 (mask PUMP_BLOCK_IN_USE: idle only).
uint64_t evict_lru(LearnedPolicy* s, uint64_t bytes_needed, uint32_t mask) {
  const size_t n = fetch_candidates(s);
  uint64_t freed = 0;
  for (int dead_pass = 1; dead_pass >= 0; --dead_pass) {
    for (size_t i = 0; i < n && freed < bytes_needed; ++i) {
      pump_block_v1_t& b = s->candidates[i];
      const bool dead = (b.flags & PUMP_BLOCK_DEAD) != 0;
      if (b.bytes == 0 || (b.flags & mask) != 0) continue;
      if (dead_pass && (!dead || (b.flags & PUMP_BLOCK_IN_USE))) continue;
      if (s->host->evict(s->host, b.id, evict_flags(b)) == PUMP_OK) freed += b.bytes;
      b.bytes = 0;
    }
  }
  s->victims_ready = false;  // the candidate buffer now holds this pass's leftovers
  return freed;
}

// ---------------------------------------------------------------- prefetch

void prefetch_kernel(const LearnedPolicy& s, const pump_kernel_v1_t* kernel) {
  for (size_t i = 0; i < kernel->num_blocks; ++i)
    if (kernel->blocks[i].residency != PUMP_RESIDENT_DEVICE)
      s.host->prefetch(s.host, kernel->blocks[i].id, PUMP_WHEN_NOW);
}

uint64_t free_bytes(const LearnedPolicy& s) {
  pump_budget_v1_t budget{};
  s.host->get_budget(s.host, &budget);
  return budget.resident_bytes < budget.budget_bytes ? budget.budget_bytes - budget.resident_bytes : 0;
}

// Brings the range's blocks in, evicting only blocks whose next use is more than
// `protect` kernels away. False when room could not be made that way.
bool prefetch_range_ahead(LearnedPolicy* s, const RangeKey& key, uint32_t protect) {
  const pump_policy_host_v1_t* host = s->host;
  uint64_t address = key.address;
  const uint64_t end = key.address + key.bytes;
  while (address < end) {
    pump_block_v1_t b{};
    if (host->find_block(host, address, &b) != PUMP_OK || b.bytes == 0) return true;  // freed since: nothing to do
    if (b.residency != PUMP_RESIDENT_DEVICE) {
      const uint64_t room = free_bytes(*s);
      if (room < b.bytes && evict_farthest(s, b.bytes - room, protect, true) < b.bytes - room) return false;
      if (host->prefetch(host, b.id, PUMP_WHEN_NOW) != PUMP_OK) return false;
    }
    if (b.address + b.bytes <= address) return true;  // a host that does not advance: stop, never spin
    address = b.address + b.bytes;
  }
  return true;
}

void prefetch_ahead(LearnedPolicy* s, uint64_t ordinal) {
  const Period& p = s->period;
  pump_budget_v1_t budget{};
  s->host->get_budget(s->host, &budget);
  const uint64_t window = lookahead_bytes(s->lookahead, budget.budget_bytes);
  if (window == 0 || p.length < 2) return;
  for (uint64_t k = std::max(ordinal + 1, s->lookahead_next); k < ordinal + p.length; ++k) {
    const uint32_t distance = static_cast<uint32_t>(k - ordinal);
    if (distance > 1 && p.bytes_after(s->current_slot, distance) > window) return;
    // MIN would rather evict the current kernel's farthest block, which the host
    // cannot offer yet: a victim used sooner than it waits for a later kernel.
    if (!s->current_farthest_known) {
      s->current_farthest = farthest_next_use(*s, record_at(*s, ordinal));
      s->current_farthest_known = true;
    }
    const uint32_t protect = std::max(distance, s->current_farthest ? s->current_farthest - 1 : 0);
    const uint32_t slot = p.slot_of(k);
    for (uint32_t i = p.slot_offsets[slot]; i < p.slot_offsets[slot + 1]; ++i)
      if (!prefetch_range_ahead(s, s->range_keys[p.slot_ranges[i]], protect)) return;
    s->lookahead_next = k + 1;
  }
}

bool everything_resident(const LearnedPolicy& s) {
  pump_budget_v1_t budget{};
  s.host->get_budget(s.host, &budget);
  return budget.resident_bytes >= budget.managed_bytes;
}

// lru's headroom, kept only when the program does not fit (something to make room for).
void keep_lru_headroom(LearnedPolicy* s) {
  pump_budget_v1_t budget{};
  s->host->get_budget(s->host, &budget);
  if (budget.managed_bytes <= budget.budget_bytes || kLruHeadroomPercent <= 0.0) return;
  const uint64_t room = budget.resident_bytes < budget.budget_bytes ? budget.budget_bytes - budget.resident_bytes : 0;
  const uint64_t wanted = static_cast<uint64_t>(static_cast<double>(budget.budget_bytes) * kLruHeadroomPercent / 100.0);
  if (room < wanted) evict_lru(s, wanted - room, PUMP_BLOCK_IN_USE);
}

// ---------------------------------------------------------------- callbacks

bool host_is_usable(const pump_policy_host_v1_t* host) {
  return host->abi_version == PUMP_POLICY_ABI_V1 && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_budget) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, find_block) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, eviction_candidates) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, prefetch) && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, evict);
}

bool kernel_is_usable(const pump_kernel_v1_t* kernel) {
  return kernel != nullptr && (kernel->blocks != nullptr || kernel->num_blocks == 0);
}

// An allocation failed mid-decision: drop what was learned, keep deciding as lru.
void recover(LearnedPolicy* s) {
  try {
    forget_everything(s);
  } catch (...) {
  }
  s->victims_ready = false;
}

pump_status_v1_t learned_init(const pump_policy_host_v1_t* host, void** ctx) {
  if (host == nullptr || ctx == nullptr) return PUMP_ERR_INVALID_ARGUMENT;
  if (!host_is_usable(host)) return PUMP_ERR_UNSUPPORTED;
  LearnedPolicy* s = new (std::nothrow) LearnedPolicy;
  if (s == nullptr) return PUMP_ERR_OUT_OF_MEMORY;
  try {
    s->host = host;
    s->history.resize(kHistoryKernels);
    s->candidates.resize(kCandidatesInitial);
    configure(s);
  } catch (...) {
    delete s;
    return PUMP_ERR_OUT_OF_MEMORY;
  }
  *ctx = s;
  return PUMP_OK;
}

void learned_fini(void* ctx) { delete static_cast<LearnedPolicy*>(ctx); }

void learned_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  LearnedPolicy* s = static_cast<LearnedPolicy*>(ctx);
  if (s == nullptr || bytes_needed == 0) return;
  try {
    if (kernel_is_usable(kernel) && kernel->num_blocks) observe(s, kernel);
    if (s->predicting) {
      const uint64_t freed = evict_farthest(s, bytes_needed, 0, false);
      if (freed < bytes_needed) evict_lru(s, bytes_needed - freed, 0);  // refused or unranked ones
    } else {
      evict_lru(s, bytes_needed, 0);
    }
    // The host may evict more itself after this: rank afresh for the lookahead.
    s->victims_ready = false;
  } catch (...) {
    recover(s);
  }
}

void learned_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  LearnedPolicy* s = static_cast<LearnedPolicy*>(ctx);
  if (s == nullptr || !kernel_is_usable(kernel) || kernel->num_blocks == 0) return;
  try {
    observe(s, kernel);
    if (s->predicting) {
      // A block of a predicted kernel is missing: something evicted the window
      // after it was requested; walk it again from here.
      for (size_t i = 0; i < kernel->num_blocks; ++i)
        if (kernel->blocks[i].residency != PUMP_RESIDENT_DEVICE) s->lookahead_next = 0;
    }
    prefetch_kernel(*s, kernel);
    // While every block is resident (the model fits, after its first step) there is
    // nothing to fetch or make room for: looking ahead would only find resident blocks
    // (a find per range: most of this policy's per-launch cost on a launch-bound program).
    if (everything_resident(*s)) return;
    if (s->predicting) prefetch_ahead(s, s->next_ordinal - 1);
    else keep_lru_headroom(s);
  } catch (...) {
    recover(s);
  }
}

}  // namespace

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1,  "learned", "1.0.0", learned_init, learned_fini,
    learned_on_kernel,        learned_on_pressure, nullptr,   nullptr,
};
