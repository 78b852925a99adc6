// Shares one JobShape among the jobs that ask for the same resources. Most queues are many jobs
// of a few shapes, and a JobShape is ~330 bytes (its GRES and constraint parts are inline), so a
// copy per pending job was a fifth of the controller's memory for a runnable queue. Only simple
// shapes are shared (no GRES, constraint or node list): their equality is a handful of numbers.
// Pure logic, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "sched/placement.h"

namespace shoal::ctld {

class ShapeInterner {
 public:
  // `shape` itself, shared with earlier equal simple shapes while any of them is alive.
  std::shared_ptr<const sched::JobShape> Intern(sched::JobShape shape);
  size_t size() const { return shared_.size(); }

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t,
                         uint32_t, uint8_t>;
  static bool Simple(const sched::JobShape& s);
  static Key KeyOf(const sched::JobShape& s);
  void SweepExpired();

  std::map<Key, std::weak_ptr<const sched::JobShape>> shared_;
  size_t sweep_at_ = 64;  // sweeps expired entries when the table reaches this size
};

}  // namespace shoal::ctld
