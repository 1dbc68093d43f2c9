// GraphExtents: what each CUDA graph touches, learned while it was captured. The
// extents of every call seen during a capture are gathered under its capture id (one
// id for every stream the capture forked into), handed to the graph at the end of the
// capture and to each executable graph instantiated from it, so that a graph launch is
// decided like one kernel touching their union. A graph pump saw no capture of (built
// from nodes by hand, updated from such a graph) has no record: its launch stays an
// access pump cannot attribute. Not thread-safe: the engine holds its lock.
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
  void graph_destroyed(uint64_t graph) { graphs_.erase(graph); }
  void forget_graphs() { graphs_.clear(); }
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
  };
  void add_extent(Capture& c, const pump_extent_v1_t& e, bool inexact);
  static Record finish(const Capture& c);

  std::unordered_map<uint64_t, Capture> captures_;
  std::unordered_map<uint64_t, Record> graphs_;
  std::unordered_map<uint64_t, Record> execs_;
  bool lost_call_pending_ = false;
};

}  // namespace pump
