#include "ctld/shape_interner.h"

#include <algorithm>
#include <iterator>

namespace shoal::ctld {

bool ShapeInterner::Simple(const sched::JobShape& s) {
  return s.allowed.empty() && s.required.empty() && s.gres.empty() && s.constraint.empty() &&
         s.constraint.text.empty();
}

// KeyOf names every scalar field of JobShape by hand: a field added there must be added to the
// key too, or jobs that differ in it would share one shape. The size changes with any field
// added, which stops the build here until KeyOf (and then this number) is brought up to date.
static_assert(sizeof(sched::JobShape) == 328,
              "sched::JobShape changed: add its new scalar fields to ShapeInterner::KeyOf "
              "(and to Simple if they are not scalars), then update this size");

ShapeInterner::Key ShapeInterner::KeyOf(const sched::JobShape& s) {
  uint8_t flags = static_cast<uint8_t>((s.exclusive ? 1 : 0) | (s.exclusive_user ? 2 : 0) |
                                       (s.oversubscribe ? 4 : 0) | (s.mem_whole_node ? 8 : 0));
  return {s.min_nodes,
          s.max_nodes,
          s.num_tasks,
          s.cpus_per_task,
          s.ntasks_per_node,
          s.mem_per_node_mb,
          s.mem_per_cpu_mb,
          s.uid,
          flags};
}

std::shared_ptr<const sched::JobShape> ShapeInterner::Intern(sched::JobShape shape) {
  if (!Simple(shape)) return std::make_shared<const sched::JobShape>(std::move(shape));
  Key key = KeyOf(shape);
  auto& slot = shared_[key];
  if (auto existing = slot.lock()) return existing;
  auto fresh = std::make_shared<const sched::JobShape>(std::move(shape));
  slot = fresh;
  if (shared_.size() >= sweep_at_) SweepExpired();
  return fresh;
}

void ShapeInterner::SweepExpired() {
  for (auto it = shared_.begin(); it != shared_.end();)
    it = it->second.expired() ? shared_.erase(it) : std::next(it);
  // Amortized: the next sweep waits until the table has doubled again.
  sweep_at_ = std::max<size_t>(64, 2 * shared_.size());
}

}  // namespace shoal::ctld
