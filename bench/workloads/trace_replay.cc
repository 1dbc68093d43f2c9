#include "bench/workloads/trace_replay.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

namespace pump {

namespace {

// Traces that do not mark which extents were guessed from a pointer (written before the
// header said "inexact"): the launch extractor's are whole blocks read and written with no
// role, and a kernel of it has nothing else; cuBLAS, cuDNN and copies always name a
// read-only, write-only or role-carrying extent. Replayed as exact, a launch would reach
// only the piece it named, where the engine must bring and keep its whole allocation.
bool launch_guess(const TraceRecord& r) {
  if (r.extents.empty()) return false;
  for (const pump_extent_v1_t& e : r.extents)
    if (e.access != PUMP_ACCESS_READ_WRITE || e.role != PUMP_ROLE_UNKNOWN) return false;
  return true;
}

}  // namespace

SimWorkload trace_to_workload(const Trace& trace, const std::string& name, const TraceReplayOptions& options,
                              TraceReplayReport* report) {
  TraceReplayReport local;
  TraceReplayReport& rep = report ? *report : local;
  rep = {};

  // Union of allocated ranges: start -> end.
  std::map<uint64_t, uint64_t> ranges;
  for (const TraceRecord& r : trace.records) {
    if (r.op != TraceRecord::Op::kAlloc || r.bytes == 0) continue;
    uint64_t start = r.address, end = r.address + r.bytes;
    auto it = ranges.upper_bound(start);
    if (it != ranges.begin() && std::prev(it)->second > start) --it;
    while (it != ranges.end() && it->first < end) {
      start = std::min(start, it->first);
      end = std::max(end, it->second);
      it = ranges.erase(it);
      ++rep.allocations_merged;
    }
    ranges[start] = end;
  }

  SimWorkload w;
  w.name = name;
  w.iterations = std::max(1, options.iterations);
  for (const auto& [start, end] : ranges)
    w.allocations.push_back({start, end - start, PUMP_ROLE_UNKNOWN, "alloc@" + std::to_string(start)});

  auto inside = [&](const pump_extent_v1_t& e) {
    auto it = ranges.upper_bound(e.address);
    if (it == ranges.begin()) return false;
    --it;
    return e.address < it->second && e.bytes > 0;
  };

  const double rate = options.bytes_per_second > 0 ? options.bytes_per_second : 135e9;
  for (const TraceRecord& r : trace.records) {
    if (r.op != TraceRecord::Op::kKernel) continue;
    SimKernel k;
    // Stream 0 (legacy) is a real stream to the runtime; the sim has no default
    // stream semantics, so it is just one more FIFO.
    k.stream = r.stream;
    k.name = r.name.empty() ? "kernel" + std::to_string(rep.kernels) : r.name;
    if (r.host_seconds > 0) k.host_seconds = r.host_seconds;
    uint64_t bytes = 0;
    const bool guessed_all = !trace.marks_inexact && launch_guess(r);
    for (size_t i = 0; i < r.extents.size(); ++i) {
      const pump_extent_v1_t& e = r.extents[i];
      const bool guessed = guessed_all || (i < r.inexact.size() && r.inexact[i]);
      if (!inside(e)) {
        ++rep.extents_dropped;
        continue;
      }
      // Clip to the allocation the extent starts in: the sim's ground truth must
      // not see pages no allocation owns.
      auto it = std::prev(ranges.upper_bound(e.address));
      pump_extent_v1_t clipped = e;
      clipped.bytes = std::min(e.bytes, it->second - e.address);
      k.extents.push_back(clipped);
      k.inexact.push_back(guessed ? 1 : 0);
      rep.extents_inexact += guessed ? 1 : 0;
      bytes += clipped.bytes;
    }
    if (r.seconds >= 0) {
      k.compute_seconds = r.seconds;
    } else {
      k.compute_seconds = static_cast<double>(bytes) / rate;
      ++rep.kernels_estimated;
    }
    ++rep.kernels;
    w.iteration.push_back(std::move(k));
  }
  // Roles for reports: the role kernels most often gave each allocation's bytes.
  std::map<uint64_t, size_t> index_of;
  for (size_t i = 0; i < w.allocations.size(); ++i) index_of[w.allocations[i].address] = i;
  std::vector<std::map<uint32_t, uint64_t>> votes(w.allocations.size());
  for (const SimKernel& k : w.iteration)
    for (const pump_extent_v1_t& e : k.extents)
      votes[std::prev(index_of.upper_bound(e.address))->second][e.role] += e.bytes;
  for (size_t i = 0; i < w.allocations.size(); ++i) {
    uint64_t best = 0;
    for (const auto& [role, bytes] : votes[i])
      if (bytes > best) {
        best = bytes;
        w.allocations[i].role = static_cast<pump_role_v1_t>(role);
      }
  }
  return w;
}

}  // namespace pump
