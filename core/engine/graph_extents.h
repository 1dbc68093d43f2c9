// GraphExtents: what each CUDA graph touches, learned while it was captured. The
// extents of every call seen during a capture are gathered under its capture id (one
// id for every stream the capture forked into), handed to the graph at the end of the
// capture and to each executable graph instantiated from it, so that a graph launch is
// decided like one kernel touching their union. A graph made empty (cuGraphCreate) starts
// with an empty record, and each node added to a graph by hand, or whose parameters
// change, adds its extents to the graph's (or executable graph's) record: the union only
// grows, an over-approximation. A graph pump knows nothing of (a clone, a child graph's
// embedded copy) has no record: its launch stays an access pump cannot attribute. Not
// thread-safe: the engine holds its lock.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "pump/extractor_v1.h"

namespace pump {

class GraphExtents {
 public:
  // The union of a graph's accesses, ready for Engine::before_kernel.
  struct Record {
    std::vector<pump_extent_v1_t> extents;
    std::vector<uint8_t> inexact;  // per extent: named only through a pointer
    bool unattributed = false;     // some access of the capture could not be sized
  };

  // A call inside capture `capture` (never 0) touches `extents`.
  void add_call(uint64_t capture, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact);
  // A call inside the capture that pump cannot size (or a graph of unknown extents
  // launched into it): the graph's launches take the unattributed path.
  void add_unattributed(uint64_t capture);
  // A call inside a capture the backend could not name: every capture open now, and the
  // next to end (it may have been that call's), take the unattributed path.
  void add_lost_call();
  // The capture began into existing graph `graph`: it starts from the graph's record, which
  // its end replaces. A graph without a record leaves the capture unattributed and, as it
  // may be a child graph's embedded copy, forgets every graph.
  void capture_into(uint64_t capture, uint64_t graph);
  // A launch of known graph `exec` inside the capture: its accesses become the capture's.
  void add_graph(uint64_t capture, uint64_t exec);

  // The capture ended into `graph`. `empty_is_known`: a capture that reached no call of
  // this engine touched none of its memory (false where another engine may have seen
  // the capture's calls on its own memory instead: then the graph stays unknown here).
  void end_capture(uint64_t capture, uint64_t graph, bool empty_is_known);
  // The capture failed: no graph will have its record.
  void abandon(uint64_t capture) { captures_.erase(capture); }
  // Executable `exec` was made from `graph` (instantiated, or updated in place).
  void instantiated(uint64_t graph, uint64_t exec);
  void graph_destroyed(uint64_t graph) {
    graphs_.erase(graph);
    parent_.erase(graph);
  }

  // Graphs and executable graphs edited by hand (graph_hooks.cc).
  // An empty graph was made: it touches nothing yet (a reused handle loses its record).
  void created(uint64_t graph) {
    graphs_[graph] = Record{};
    parent_.erase(graph);
  }
  // `clone` was cloned from `original`: it has its record (none if it has none).
  void cloned(uint64_t original, uint64_t clone);
  // Nodes added to `graph`, or its nodes' parameters changed, touch `extents` too. A graph
  // without a record may be a child graph's embedded copy, edited behind the record of the
  // graph that holds it: every graph is forgotten then.
  void add_to_graph(uint64_t graph, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact);
  // A node pump cannot size was added to `graph` (or changed): its launches are unattributed.
  void graph_unattributed(uint64_t graph);
  // A child graph node of `child` was added to `graph`: the child's record joins the graph's.
  void add_child(uint64_t graph, uint64_t child);
  // The same for an executable graph's node edits; an executable without a record keeps none.
  void add_to_exec(uint64_t exec, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact);
  void exec_unattributed(uint64_t exec);
  void add_child_to_exec(uint64_t exec, uint64_t child);
  // A conditional node was added to `graph` with body graphs `bodies` (made empty by the
  // driver): what is later added to a body is added to `graph`, and to the graphs holding
  // it, too (a body may run any number of times: the union covers them all).
  void bodies_added(uint64_t graph, const uint64_t* bodies, size_t count);
  // The record of `graph`, or null when pump knows nothing of it.
  const Record* of_graph(uint64_t graph) const;
  void forget_graphs() {
    graphs_.clear();
    parent_.clear();
  }
  void exec_destroyed(uint64_t exec) { execs_.erase(exec); }

  // The record of executable `exec`, or null when pump did not see it captured.
  const Record* of_exec(uint64_t exec) const;

  size_t captures_open() const { return captures_.size(); }
  size_t graphs_known() const { return graphs_.size(); }
  size_t execs_known() const { return execs_.size(); }

 private:
  // A capture's calls repeat the same tensors many times: one extent per distinct
  // (address, bytes, inexact), access modes joined (a write counts as read and write too:
  // the calls' order is lost), a role kept only if all agree.
  struct Key {
    uint64_t address;
    uint64_t bytes;
    bool inexact;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.address * 31 + k.bytes * 7 + k.inexact; }
  };
  struct Capture {
    std::unordered_map<Key, pump_extent_v1_t, KeyHash> extents;
    bool unattributed = false;
    bool seed_only = false;  // began into a known graph, no call of its own seen yet
  };
  void add_extent(Capture& c, const pump_extent_v1_t& e, bool inexact);
  static Record finish(const Capture& c);
  // Adds `extents` (and `child`'s record, when not null) to record `r`.
  void join(Record& r, const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact, const Record* child);

  std::unordered_map<uint64_t, Capture> captures_;
  std::unordered_map<uint64_t, Record> graphs_;
  std::unordered_map<uint64_t, Record> execs_;
  std::unordered_map<uint64_t, uint64_t> parent_;  // a conditional body -> the graph holding it
  // Calls f(record) for each graph holding `graph` through conditional bodies; false (and
  // every graph forgotten) when one of them has no record.
  template <typename F>
  bool each_holder(uint64_t graph, F f);
  bool lost_call_pending_ = false;
};

}  // namespace pump
