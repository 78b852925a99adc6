#include "sched/eligibility.h"

namespace shoal::sched {

void EligibilityIndex::ParkUntil(uint32_t id, int64_t time) {
  Unpark(id);
  time_of_.emplace(id, time);
  by_time_.emplace(time, id);
}

void EligibilityIndex::ParkUntilEvent(uint32_t id) {
  Unpark(id);
  on_event_.insert(id);
}

void EligibilityIndex::Unpark(uint32_t id) {
  if (auto it = time_of_.find(id); it != time_of_.end()) {
    by_time_.erase({it->second, id});
    time_of_.erase(it);
  }
  on_event_.erase(id);
}

std::vector<uint32_t> EligibilityIndex::TakeDue(int64_t now) {
  std::vector<uint32_t> due;
  while (!by_time_.empty() && by_time_.begin()->first <= now) {
    uint32_t id = by_time_.begin()->second;
    by_time_.erase(by_time_.begin());
    time_of_.erase(id);
    due.push_back(id);
  }
  if (event_) {
    event_ = false;
    due.insert(due.end(), on_event_.begin(), on_event_.end());
    on_event_.clear();
  }
  return due;
}

}  // namespace shoal::sched
