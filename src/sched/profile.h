// The backfill planner's availability profile, indexed by node: every booking (a running job, a
// job started this cycle, a reservation, a promise kept from the previous cycle) is a pair of
// events (taken, given back) on each of its nodes, kept in a small time-sorted list per node.
// What a node offers a job over [t, e) is computed from that node's list alone, so a candidate
// time costs the nodes whose lists change, not the whole cluster. Pure logic, no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "sched/placement.h"

namespace shoal::sched {

inline constexpr int64_t kProfileForever = INT64_MAX / 4;  // == kUnlimitedSeconds

class Profile {
 public:
  // `now_state`: the nodes at `now` with every job running now booked (the profile's base).
  Profile(std::vector<NodeView> now_state, int64_t now);

  // Books `p` from `start` to `end` (exclusive). A booking that starts at or before now goes
  // into the base state through Allocate (unless `promise`: promises stay events so that they
  // can be switched off); `end` >= kProfileForever never ends. Returns the booking's id.
  uint32_t Book(const JobShape* shape, Placement p, int64_t start, int64_t end, bool promise);
  // A job already in the base state that gives its resources back at `end`; `p` must outlive
  // the profile (running jobs: 10,000 of them need not be copied).
  uint32_t AddRunning(const JobShape* shape, const Placement* p, int64_t end);
  // Switches a booking off (its events stay but count for nothing), or on again.
  void SetActive(uint32_t id, bool active) { live_[id] = active; }
  const Placement& PlacementOf(uint32_t id) const { return *items_[id].placement; }
  int64_t StartOf(uint32_t id) const { return items_[id].start; }
  // While set, promises count for nothing (a job the previous plan did not know of may take
  // what was promised: that is "a higher-priority job arrived").
  void IgnorePromises(bool ignore) { ignore_promises_ = ignore; }

  // The busiest the node gets over [t, e): what a job running then may rely on.
  struct Window {
    uint32_t cpus = 0;  // CPU slots in use at the peak
    uint64_t mem = 0;   // memory in use at the peak
    uint32_t jobs = 0;  // jobs on it at the peak
    bool exclusive = false;
  };
  Window Summarize(int node, int64_t t, int64_t e) const;
  // Writes into view(node) a NodeView a job over [t, e) may be placed on: the state at t plus
  // every booking that starts before e (device bitmaps, exclusivity), with CPU and memory use
  // at their peak over the window. Placing on it never collides with a booking at any instant.
  void Compose(int node, int64_t t, int64_t e);
  const std::vector<NodeView>& views() const { return view_; }
  const std::vector<NodeView>& now_state() const { return base_; }
  const NodeView& base(int node) const { return base_[static_cast<size_t>(node)]; }
  // Cheap facts from contiguous arrays, for skipping nodes without reading their lists: the
  // time of the node's first event (until then its state is the base), and the CPUs its base
  // state could give one job (0 when down or held exclusively), and whether it is idle.
  int64_t FirstEvent(int node) const { return first_event_[static_cast<size_t>(node)]; }
  uint32_t BaseFree(int node, bool exclusive) const {
    const size_t n = static_cast<size_t>(node);
    return exclusive && !base_idle_[n] ? 0 : base_free_[n];
  }
  size_t size() const { return base_.size(); }

  // Time-ordered indexes for the planner's scan.
  const std::map<int64_t, std::vector<int>>& events() const { return ev_nodes_; }
  const std::map<int64_t, std::vector<int>>& bookings() const { return book_nodes_; }
  const std::map<int64_t, uint32_t>& releases() const { return releases_; }

 private:
  struct Item {
    const JobShape* shape = nullptr;
    const Placement* placement = nullptr;
    int64_t start = 0;
    bool promise = false;
  };
  struct NodeEvent {
    int64_t time = 0;
    uint64_t mem = 0;
    uint32_t cpus = 0;
    uint32_t item = 0;
    int32_t slice = -1;      // index into slices_, -1: the item's placement is this node alone
    bool book = false;       // taken (true) or given back
    bool exclusive = false;  // the booking's job is --exclusive
    bool promise = false;
  };
  void AddEvents(uint32_t id, int64_t time, bool book);
  bool Counts(const NodeEvent& ev) const {
    return live_[ev.item] && !(ignore_promises_ && ev.promise);
  }
  void RefreshBase(int node);
  // Walks the node's events over [.., e); with `out`, also applies them to out (view_).
  Window Walk(int node, int64_t t, int64_t e, std::vector<NodeView>* out) const;

  std::vector<NodeView> base_;
  std::vector<uint32_t> base_free_;
  std::vector<uint8_t> base_idle_;
  std::vector<int64_t> first_event_;
  std::vector<NodeView> view_;
  std::vector<Item> items_;
  std::vector<uint8_t> live_;
  std::vector<std::vector<NodeEvent>> node_ev_;  // per node, by time, releases first
  std::deque<Placement> owned_;                  // placements of bookings made here
  std::vector<Placement> slices_;                // one node's share of a multi-node booking
  int64_t now_ = 0;
  std::map<int64_t, std::vector<int>> ev_nodes_;    // nodes with an event, by time
  std::map<int64_t, std::vector<int>> book_nodes_;  // nodes with a booking starting, by time
  std::map<int64_t, uint32_t> releases_;            // times something is given back
  bool ignore_promises_ = false;
};

}  // namespace shoal::sched
