// Pending jobs that cannot start until something happens: their begin time comes, or an event
// (another job starts, ends, is updated or purged) may satisfy their dependency. The scheduling
// pass parks such jobs here instead of re-checking them on every pass, so a pass costs what the
// eligible jobs cost, and takes them back when they are due. Pure bookkeeping, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shoal::sched {

class EligibilityIndex {
 public:
  // Parks `id` until `time` (seconds); replaces any earlier parking of it.
  void ParkUntil(uint32_t id, int64_t time);
  // Parks `id` until the next NoteEvent(); replaces any earlier parking of it.
  void ParkUntilEvent(uint32_t id);
  // Forgets `id` (it started, ended, was updated or removed). No-op when not parked.
  void Unpark(uint32_t id);
  // Something happened that may satisfy a dependency: every job parked until an event is due.
  void NoteEvent() { event_ = true; }
  // Removes and returns the jobs due at `now`: those whose time is <= now, and, after a
  // NoteEvent(), every job parked until an event. Each id is returned at most once.
  std::vector<uint32_t> TakeDue(int64_t now);

  bool Contains(uint32_t id) const { return time_of_.count(id) || on_event_.count(id); }
  size_t size() const { return time_of_.size() + on_event_.size(); }
  bool event_pending() const { return event_; }

 private:
  std::set<std::pair<int64_t, uint32_t>> by_time_;
  std::unordered_map<uint32_t, int64_t> time_of_;
  std::unordered_set<uint32_t> on_event_;
  bool event_ = false;
};

}  // namespace shoal::sched
