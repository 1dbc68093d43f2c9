#include "core/engine/graph_extents.h"

#include <algorithm>
#include <utility>

namespace pump {

void GraphExtents::add_extent(Capture& c, const pump_extent_v1_t& extent, bool inexact) {
  if (!extent.bytes) return;
  // The record loses the order of the graph's calls: a range one call writes whole may be
  // read by an earlier one, so a write is kept as read and write, never an overwrite that
  // lets the engine bring a dropped piece back without its bytes (PUMP_VERIFY=poison under
  // torch.compile showed it).
  pump_extent_v1_t e = extent;
  if (e.access & PUMP_ACCESS_WRITE) e.access |= PUMP_ACCESS_READ;
  auto [it, inserted] = c.extents.try_emplace(Key{e.address, e.bytes, inexact}, e);
  if (inserted) return;
  pump_extent_v1_t& joined = it->second;
  joined.access |= e.access;
  // A piece is dead after the graph only if every use of it was as a workspace, and
  // its role is known only if its uses agree.
  if (joined.role != e.role) joined.role = PUMP_ROLE_UNKNOWN;
}

void GraphExtents::add_call(uint64_t capture, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact) {
  Capture& c = captures_[capture];
  c.seed_only = false;
  for (size_t i = 0; i < count; ++i) add_extent(c, extents[i], inexact && inexact[i]);
}

void GraphExtents::add_unattributed(uint64_t capture) { captures_[capture].unattributed = true; }

void GraphExtents::add_lost_call() {
  for (auto& [id, c] : captures_) c.unattributed = true;
  lost_call_pending_ = true;
}

void GraphExtents::capture_into(uint64_t capture, uint64_t graph) {
  auto g = graphs_.find(graph);
  if (g == graphs_.end()) {
    forget_graphs();
    add_unattributed(capture);
    return;
  }
  Capture& c = captures_[capture];
  c.seed_only = c.extents.empty() && !c.unattributed;
  c.unattributed |= g->second.unattributed;
  for (size_t i = 0; i < g->second.extents.size(); ++i) add_extent(c, g->second.extents[i], g->second.inexact[i] != 0);
}

void GraphExtents::add_graph(uint64_t capture, uint64_t exec) {
  const Record* r = of_exec(exec);
  if (!r) {
    add_unattributed(capture);
    return;
  }
  Capture& c = captures_[capture];
  c.seed_only = false;
  c.unattributed |= r->unattributed;
  for (size_t i = 0; i < r->extents.size(); ++i) add_extent(c, r->extents[i], r->inexact[i] != 0);
}

GraphExtents::Record GraphExtents::finish(const Capture& c) {
  Record r;
  r.unattributed = c.unattributed;
  std::vector<std::pair<Key, pump_extent_v1_t>> sorted(c.extents.begin(), c.extents.end());
  // In address order: the engine then walks its block tree forward, and a record is
  // the same whatever order the hash map kept.
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.first.address != b.first.address) return a.first.address < b.first.address;
    if (a.first.bytes != b.first.bytes) return a.first.bytes < b.first.bytes;
    return a.first.inexact < b.first.inexact;
  });
  r.extents.reserve(sorted.size());
  r.inexact.reserve(sorted.size());
  for (const auto& [key, extent] : sorted) {
    r.extents.push_back(extent);
    r.inexact.push_back(key.inexact ? 1 : 0);
  }
  return r;
}

void GraphExtents::end_capture(uint64_t capture, uint64_t graph, bool empty_is_known) {
  if (std::exchange(lost_call_pending_, false)) add_unattributed(capture);
  auto it = captures_.find(capture);
  if (it == captures_.end()) {
    // A new graph may reuse a destroyed one's handle: never let it inherit that record.
    if (empty_is_known) graphs_[graph] = Record{};
    else graphs_.erase(graph);
    return;
  }
  // With several engines, one that saw none of the capture's own calls keeps the graph
  // unknown, as for a capture of its own (see above).
  if (it->second.seed_only && !empty_is_known) {
    graphs_.erase(graph);
    if (parent_.count(graph)) forget_graphs();  // a body's holders would miss what it gained
  } else {
    Record r = finish(it->second);
    // A capture into a conditional body: the graphs holding it gain what it gained.
    if (parent_.count(graph)) each_holder(graph, [&](Record& h) { join(h, nullptr, 0, nullptr, &r); });
    graphs_[graph] = std::move(r);
  }
  captures_.erase(it);
}

void GraphExtents::instantiated(uint64_t graph, uint64_t exec) {
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) execs_.erase(exec);
  else execs_[exec] = it->second;
}

void GraphExtents::join(Record& r, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact,
                        const Record* child) {
  if (child) r.unattributed |= child->unattributed;
  // A graph built by hand grows one node at a time and repeats the same blocks: an extent
  // already in the (sorted) record is joined in place, only new ones re-sort it.
  auto key_less = [](const Key& a, const Key& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    return a.inexact < b.inexact;
  };
  auto join_into = [](pump_extent_v1_t& joined, const pump_extent_v1_t& e) {
    joined.access |= e.access;
    if (joined.role != e.role) joined.role = PUMP_ROLE_UNKNOWN;
  };
  std::vector<std::pair<Key, pump_extent_v1_t>> fresh;
  auto add = [&](const pump_extent_v1_t& extent, bool in) {
    if (!extent.bytes) return;
    pump_extent_v1_t e = extent;
    if (e.access & PUMP_ACCESS_WRITE) e.access |= PUMP_ACCESS_READ;  // see add_extent
    const Key k{e.address, e.bytes, in};
    size_t lo = 0, hi = r.extents.size();
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      const Key m{r.extents[mid].address, r.extents[mid].bytes, r.inexact[mid] != 0};
      if (key_less(m, k)) lo = mid + 1;
      else hi = mid;
    }
    if (lo < r.extents.size() && Key{r.extents[lo].address, r.extents[lo].bytes, r.inexact[lo] != 0} == k) {
      join_into(r.extents[lo], e);
      return;
    }
    for (auto& [fk, fe] : fresh)
      if (fk == k) {
        join_into(fe, e);
        return;
      }
    fresh.emplace_back(k, e);
  };
  for (size_t i = 0; i < count; ++i) add(extents[i], inexact && inexact[i]);
  if (child)
    for (size_t i = 0; i < child->extents.size(); ++i) add(child->extents[i], child->inexact[i] != 0);
  if (fresh.empty()) return;
  for (size_t i = 0; i < r.extents.size(); ++i)
    fresh.emplace_back(Key{r.extents[i].address, r.extents[i].bytes, r.inexact[i] != 0}, r.extents[i]);
  std::sort(fresh.begin(), fresh.end(), [&](const auto& a, const auto& b) { return key_less(a.first, b.first); });
  r.extents.clear();
  r.inexact.clear();
  for (const auto& [k, e] : fresh) {
    r.extents.push_back(e);
    r.inexact.push_back(k.inexact ? 1 : 0);
  }
}

template <typename F>
bool GraphExtents::each_holder(uint64_t graph, F f) {
  std::vector<uint64_t> holders;
  for (auto p = parent_.find(graph); p != parent_.end() && holders.size() < 64; p = parent_.find(p->second))
    holders.push_back(p->second);
  for (uint64_t h : holders) {
    auto it = graphs_.find(h);
    if (it == graphs_.end()) {
      forget_graphs();
      return false;
    }
    f(it->second);
  }
  return true;
}

void GraphExtents::add_to_graph(uint64_t graph, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact) {
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) {
    forget_graphs();
    return;
  }
  join(it->second, extents, count, inexact, nullptr);
  each_holder(graph, [&](Record& r) { join(r, extents, count, inexact, nullptr); });
}

void GraphExtents::graph_unattributed(uint64_t graph) {
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) {
    forget_graphs();
    return;
  }
  it->second = Record{{}, {}, true};
  each_holder(graph, [](Record& r) { r = Record{{}, {}, true}; });
}

void GraphExtents::add_child(uint64_t graph, uint64_t child) {
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) {
    forget_graphs();
    return;
  }
  auto c = graphs_.find(child);
  if (c == graphs_.end()) {
    graph_unattributed(graph);
    return;
  }
  if (c == it) return;
  const Record copy = c->second;
  join(it->second, nullptr, 0, nullptr, &copy);
  each_holder(graph, [&](Record& r) { join(r, nullptr, 0, nullptr, &copy); });
}

void GraphExtents::cloned(uint64_t original, uint64_t clone) {
  parent_.erase(clone);
  auto it = graphs_.find(original);
  if (it == graphs_.end()) {
    graphs_.erase(clone);
    return;
  }
  Record copy = it->second;
  graphs_[clone] = std::move(copy);
}

void GraphExtents::bodies_added(uint64_t graph, const uint64_t* bodies, size_t count) {
  if (graphs_.find(graph) == graphs_.end()) {
    forget_graphs();
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    graphs_[bodies[i]] = Record{};
    parent_[bodies[i]] = graph;
  }
}

void GraphExtents::add_to_exec(uint64_t exec, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact) {
  auto it = execs_.find(exec);
  if (it != execs_.end()) join(it->second, extents, count, inexact, nullptr);
}

void GraphExtents::exec_unattributed(uint64_t exec) {
  auto it = execs_.find(exec);
  if (it != execs_.end()) it->second = Record{{}, {}, true};
}

void GraphExtents::add_child_to_exec(uint64_t exec, uint64_t child) {
  auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  auto c = graphs_.find(child);
  if (c == graphs_.end()) it->second = Record{{}, {}, true};
  else join(it->second, nullptr, 0, nullptr, &c->second);
}

const GraphExtents::Record* GraphExtents::of_graph(uint64_t graph) const {
  auto it = graphs_.find(graph);
  return it == graphs_.end() ? nullptr : &it->second;
}

const GraphExtents::Record* GraphExtents::of_exec(uint64_t exec) const {
  auto it = execs_.find(exec);
  return it == execs_.end() ? nullptr : &it->second;
}

}  // namespace pump
