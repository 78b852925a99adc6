#include "sched/profile.h"

#include <algorithm>

namespace shoal::sched {
namespace {

uint64_t MemAt(const Placement& p, size_t k) {
  return k < p.mem_mb.size() ? p.mem_mb[k] : p.mem_per_node_mb;
}

}  // namespace

Profile::Profile(std::vector<NodeView> now_state, int64_t now)
    : base_(std::move(now_state)),
      base_free_(base_.size(), 0),
      base_idle_(base_.size(), 0),
      first_event_(base_.size(), INT64_MAX),
      view_(base_),
      node_ev_(base_.size()),
      now_(now) {
  for (size_t n = 0; n < base_.size(); ++n) RefreshBase(static_cast<int>(n));
}

void Profile::RefreshBase(int node) {
  const size_t n = static_cast<size_t>(node);
  const NodeView& v = base_[n];
  const uint64_t slots = uint64_t{v.cpus} * std::max<uint32_t>(v.oversubscribe, 1);
  const uint64_t free = slots - std::min<uint64_t>(slots, v.alloc_cpus);
  base_free_[n] = v.available && !v.exclusive_in_use
                      ? static_cast<uint32_t>(std::min<uint64_t>(free, v.cpus))
                      : 0;
  base_idle_[n] = v.alloc_cpus == 0 && v.num_jobs == 0;
}

uint32_t Profile::AddRunning(const JobShape* shape, const Placement* p, int64_t end) {
  const uint32_t id = static_cast<uint32_t>(items_.size());
  items_.push_back({shape, p, INT64_MIN, false});
  live_.push_back(1);
  if (end < kProfileForever) AddEvents(id, end, false);
  return id;
}

uint32_t Profile::Book(const JobShape* shape, Placement p, int64_t start, int64_t end,
                       bool promise) {
  const uint32_t id = static_cast<uint32_t>(items_.size());
  owned_.push_back(std::move(p));
  items_.push_back({shape, &owned_.back(), start, promise});
  live_.push_back(1);
  // A start at or before now is part of the base state for good. A promise stays an event
  // so that it can be switched off.
  if (!promise && start <= now_) {
    Allocate(base_, *shape, owned_.back());
    for (int n : owned_.back().nodes) RefreshBase(n);
  } else {
    AddEvents(id, start, true);
  }
  if (end < kProfileForever) AddEvents(id, end, false);
  return id;
}

void Profile::AddEvents(uint32_t id, int64_t time, bool book) {
  const Placement& p = *items_[id].placement;
  const bool single = p.nodes.size() == 1;
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const int n = p.nodes[k];
    NodeEvent ev;
    ev.time = time;
    ev.mem = MemAt(p, k);
    ev.cpus = p.cpus[k];
    ev.item = id;
    ev.book = book;
    ev.exclusive = items_[id].shape->exclusive;
    ev.promise = items_[id].promise;
    first_event_[static_cast<size_t>(n)] = std::min(first_event_[static_cast<size_t>(n)], time);
    if (!single) {
      // Release pairs with the booking's slice (made when it was booked, or now if it is in
      // the base): one slice per node serves both events.
      auto& list = node_ev_[static_cast<size_t>(n)];
      auto it = std::find_if(list.begin(), list.end(),
                             [&](const NodeEvent& e) { return e.item == id && e.slice >= 0; });
      if (it != list.end()) {
        ev.slice = it->slice;
      } else {
        Placement s;
        s.nodes = {n};
        s.cpus = {p.cpus[k]};
        s.tasks = {k < p.tasks.size() ? p.tasks[k] : 0};
        s.mem_per_node_mb = MemAt(p, k);
        s.mem_mb = {s.mem_per_node_mb};
        if (k < p.gres.size()) s.gres = {p.gres[k]};
        ev.slice = static_cast<int32_t>(slices_.size());
        slices_.push_back(std::move(s));
      }
    }
    auto& list = node_ev_[static_cast<size_t>(n)];
    // By time, and at one time releases before bookings: a job reserved for the moment
    // another ends never appears to overlap it.
    auto pos =
        std::upper_bound(list.begin(), list.end(), ev, [](const NodeEvent& a, const NodeEvent& b) {
          return a.time != b.time ? a.time < b.time : (!a.book && b.book);
        });
    list.insert(pos, ev);
    ev_nodes_[time].push_back(n);
    if (book) book_nodes_[time].push_back(n);
  }
  if (!book) ++releases_[time];
}

Profile::Window Profile::Walk(int node, int64_t t, int64_t e, std::vector<NodeView>* out) const {
  const NodeView& b = base_[static_cast<size_t>(node)];
  int64_t cpus = b.alloc_cpus, jobs = b.num_jobs;
  int64_t mem = static_cast<int64_t>(b.alloc_memory_mb);
  int64_t excl = b.exclusive_in_use ? 1 : 0;
  Window w;
  bool in_window = false;
  auto peak = [&] {
    w.cpus = static_cast<uint32_t>(std::max<int64_t>(w.cpus, cpus));
    w.mem = static_cast<uint64_t>(std::max<int64_t>(static_cast<int64_t>(w.mem), mem));
    w.jobs = static_cast<uint32_t>(std::max<int64_t>(w.jobs, jobs));
    w.exclusive |= excl > 0;
  };
  for (const NodeEvent& ev : node_ev_[static_cast<size_t>(node)]) {
    if (ev.time >= e) break;
    if (!in_window && ev.time > t) {
      in_window = true;
      peak();  // the state at t
    }
    if (!Counts(ev)) continue;
    const int sign = ev.book ? 1 : -1;
    cpus = std::max<int64_t>(0, cpus + sign * static_cast<int64_t>(ev.cpus));
    mem = std::max<int64_t>(0, mem + sign * static_cast<int64_t>(ev.mem));
    jobs = std::max<int64_t>(0, jobs + sign);
    if (ev.exclusive) excl = std::max<int64_t>(0, excl + sign);
    if (in_window) {
      // Releases inside the window lower the current use but not what the views show:
      // a device or exclusivity taken at any instant of the window counts for all of it.
      if (ev.book) {
        peak();
        if (out) {
          const Item& item = items_[ev.item];
          Allocate(*out, *item.shape, ev.slice < 0 ? *item.placement : slices_[ev.slice]);
        }
      }
    } else if (out) {
      const Item& item = items_[ev.item];
      const Placement& p = ev.slice < 0 ? *item.placement : slices_[ev.slice];
      if (ev.book)
        Allocate(*out, *item.shape, p);
      else
        Release(*out, *item.shape, p);
    }
  }
  if (!in_window) peak();
  return w;
}

Profile::Window Profile::Summarize(int node, int64_t t, int64_t e) const {
  return Walk(node, t, e, nullptr);
}

void Profile::Compose(int node, int64_t t, int64_t e) {
  NodeView& v = view_[static_cast<size_t>(node)];
  v = base_[static_cast<size_t>(node)];
  Window w = Walk(node, t, e, &view_);
  v.alloc_cpus = w.cpus;
  v.alloc_memory_mb = w.mem;
}

}  // namespace shoal::sched
