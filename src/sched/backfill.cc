#include "sched/backfill.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <unordered_map>

#include "sched/profile.h"

namespace shoal::sched {
namespace {

using Clock = std::chrono::steady_clock;
static_assert(kProfileForever == kUnlimitedSeconds);

int64_t SatAdd(int64_t t, int64_t d) { return d >= kUnlimitedSeconds ? kUnlimitedSeconds : t + d; }

int64_t LimitOf(const PendingJob& j) {
  return (j.time_limit_s <= 0 || j.time_limit_s >= kUnlimitedSeconds) ? kUnlimitedSeconds
                                                                      : j.time_limit_s;
}

// CPUs the job needs at least, and nodes it needs at least (a lower bound, for pruning).
struct Need {
  uint64_t cpus = 1;
  uint32_t nodes = 1;
  uint32_t per_node = 1;  // free CPUs a node needs to be of any use to the job
};

Need NeedOf(const JobShape& s) {
  uint32_t nodes = std::max<uint32_t>(s.min_nodes, 1);
  uint64_t tasks = s.num_tasks;
  if (!tasks) tasks = s.ntasks_per_node ? uint64_t{s.ntasks_per_node} * nodes : nodes;
  const uint32_t cpt = std::max<uint32_t>(s.cpus_per_task, 1);
  uint64_t per_node = cpt;
  if (s.ntasks_per_node)
    per_node = uint64_t{s.ntasks_per_node} * cpt;
  else if (s.max_nodes == 1)
    per_node = tasks * cpt;
  return {tasks * cpt, nodes, static_cast<uint32_t>(std::min<uint64_t>(per_node, UINT32_MAX))};
}

// Upper bound on the CPUs a node can give one job over a window (PlaceJob stays the judge):
// OverSubscribe slots counted at their most generous, a whole idle node for --exclusive.
uint32_t FreeBound(const NodeView& base, const Profile::Window& w, const JobShape& s) {
  if (!base.available || w.exclusive) return 0;
  if (s.exclusive && (w.cpus > 0 || w.jobs > 0)) return 0;
  const uint64_t slots = uint64_t{base.cpus} * std::max<uint32_t>(base.oversubscribe, 1);
  return static_cast<uint32_t>(
      std::min<uint64_t>(slots - std::min<uint64_t>(slots, w.cpus), base.cpus));
}

class Planner {
 public:
  explicit Planner(const PlanInput& in)
      : in_(in),
        res_(std::max<uint32_t>(in.params.resolution_s, 1)),
        window_end_(in.now + int64_t{in.params.window_min} * 60),
        prof_(in.nodes, in.now),
        fn_(in.nodes.size(), 0),
        upos_(in.nodes.size(), -1),
        stamp_(in.nodes.size(), 0),
        promise_(in.pending.size(), -1),
        known_(in.pending.size(), false) {}

  CyclePlan Run();

 private:
  using Found = std::optional<std::pair<int64_t, Placement>>;

  const std::vector<int>& AllowedFor(const PendingJob& j) const {
    if (!j.shape.allowed.empty() || j.partition >= in_.partition_nodes.size())
      return j.shape.allowed;
    return in_.partition_nodes[j.partition];
  }
  int64_t RoundUp(int64_t t) const {
    if (t >= kUnlimitedSeconds) return t;
    return (t + res_ - 1) / res_ * res_;
  }
  // When a booking from start to `end` is expected to give its resources back.
  int64_t ReleaseAt(int64_t end) const { return RoundUp(std::max(end, in_.now + 1)); }

  void BuildProfile();
  void BookPromises();
  void MainPass(std::vector<bool>& started, CyclePlan& plan);
  void Backfill(std::vector<bool>& started, CyclePlan& plan, Clock::time_point t0);

  // The earliest candidate time in [from, last] at which `job` fits for its whole limit
  // without touching any booking, and where.
  Found Earliest(const PendingJob& job, int64_t from, int64_t last, PlanStats& stats);
  // Places the job at t on the nodes currently counted useful (see Useful), nearest first.
  std::optional<Placement> TryPlace(const PendingJob& job, int64_t t, int64_t e,
                                    const std::vector<int32_t>& rank, const Need& need,
                                    PlanStats& stats);
  // Places the job from `start` on exactly `nodes` (a promise), or nullopt.
  std::optional<Placement> FitOn(const PendingJob& job, int64_t start,
                                 const std::vector<int>& nodes, PlanStats& stats);
  void Update(int node, int64_t t, int64_t e);
  const std::vector<int32_t>& RankFor(const PendingJob& job);

  const PlanInput& in_;
  const int64_t res_;
  const int64_t window_end_;
  Profile prof_;
  std::unordered_map<uint32_t, std::vector<int32_t>> part_rank_;
  std::vector<int32_t> job_rank_;

  // While one job's scan runs: the nodes that could take a share of it over the current
  // window (those whose bound reaches Need::per_node), and their CPUs. A node is recomputed
  // only when the scan moves past one of its own events.
  struct Useful {
    const PendingJob* job = nullptr;
    const std::vector<int32_t>* rank = nullptr;
    Need need;
    uint64_t cpus = 0;
    uint32_t nodes = 0;
  } useful_;
  std::vector<uint32_t> fn_;     // per node: CPUs counted in useful_ (0: not useful)
  std::vector<int32_t> upos_;    // per node: position in ulist_, -1 if absent
  std::vector<int> ulist_;       // the useful nodes, unordered
  std::vector<uint32_t> stamp_;  // per node: last scan step that recomputed it
  uint32_t step_ = 0;
  std::vector<int> dirty_, cand_;

  // Promises kept from the previous cycle: per pending job, the booking holding it (-1: none),
  // and whether the previous plan knew the job at all.
  std::vector<int64_t> promise_;
  std::vector<bool> known_;
  bool any_promise_ = false;

  // Jobs with equal shape keys (and partitions) cannot start before an earlier one did.
  struct ShapeMemo {
    int64_t limit = 0;
    std::optional<int64_t> start;  // nullopt: nothing within the window
  };
  std::unordered_map<uint64_t, ShapeMemo> memo_;
};

const std::vector<int32_t>& Planner::RankFor(const PendingJob& job) {
  bool own = !job.shape.allowed.empty() || job.partition >= in_.partition_nodes.size();
  auto build = [&](const std::vector<int>& allowed, std::vector<int32_t>& rank) {
    rank.assign(prof_.size(), -1);
    for (size_t k = 0; k < allowed.size(); ++k)
      if (allowed[k] >= 0 && static_cast<size_t>(allowed[k]) < rank.size() && rank[allowed[k]] < 0)
        rank[allowed[k]] = static_cast<int32_t>(k);
  };
  if (own) {
    build(job.shape.allowed, job_rank_);
    return job_rank_;
  }
  auto [it, inserted] = part_rank_.try_emplace(job.partition);
  if (inserted) build(in_.partition_nodes[job.partition], it->second);
  return it->second;
}

void Planner::BuildProfile() {
  // Running jobs give their resources back at their expected end; an overdue job is assumed
  // to end at the next resolution step.
  for (const RunningJob& r : in_.running)
    prof_.AddRunning(&r.shape, &r.placement,
                     r.end_time >= kUnlimitedSeconds ? kUnlimitedSeconds : ReleaseAt(r.end_time));
}

void Planner::BookPromises() {
  if (!in_.previous || in_.previous->empty()) return;
  PlanStats unused;
  // In priority order, each against the running jobs and the promises above it: if nothing
  // outside the plan happened they all fit together, as they did when they were made.
  for (size_t k = 0; k < in_.pending.size(); ++k) {
    const PendingDecision* found = in_.previous->Find(in_.pending[k].job_id);
    if (!found) continue;
    known_[k] = true;
    const PendingDecision& d = *found;
    if (!d.start_time || d.planned_nodes.empty()) continue;
    const PendingJob& job = in_.pending[k];
    const int64_t start = std::max(*d.start_time, in_.now);
    auto p = FitOn(job, start, d.planned_nodes, unused);
    if (!p) continue;  // a node went down, a job overran, a new job took it: promise lost
    const int64_t end = SatAdd(start, LimitOf(job));
    promise_[k] = prof_.Book(&job.shape, std::move(*p), start,
                             end >= kUnlimitedSeconds ? end : RoundUp(end), true);
    any_promise_ = true;
  }
}

void Planner::MainPass(std::vector<bool>& started, CyclePlan& plan) {
  std::vector<bool> blocked;
  JobShape shape;
  for (size_t k = 0; k < in_.pending.size(); ++k) {
    const PendingJob& job = in_.pending[k];
    PendingDecision& d = plan.pending[k];
    if (job.partition >= blocked.size()) blocked.resize(job.partition + 1, false);
    if (blocked[job.partition]) {
      d.reason = PendingReason::kPriority;
      continue;
    }
    shape = job.shape;
    if (shape.allowed.empty()) shape.allowed = AllowedFor(job);
    ++plan.stats.main_tested;
    auto p = PlaceJob(shape, prof_.now_state());
    const int64_t own = promise_[k];
    if (p && any_promise_ && known_[k]) {
      // A job the previous plan knew starts now only where it keeps every other job's promise
      // (a job it did not know, one that just arrived, may take them: see BookPromises).
      if (own >= 0) prof_.SetActive(static_cast<uint32_t>(own), false);
      Found r = Earliest(job, in_.now, in_.now, plan.stats);
      if (!r && own >= 0 && prof_.StartOf(static_cast<uint32_t>(own)) <= in_.now)
        if (auto q = FitOn(job, in_.now, prof_.PlacementOf(static_cast<uint32_t>(own)).nodes,
                           plan.stats))
          r.emplace(in_.now, std::move(*q));
      if (own >= 0) prof_.SetActive(static_cast<uint32_t>(own), !r);
      p.reset();
      if (r) p = std::move(r->second);
    }
    if (!p) {
      // The first job that waits for resources blocks its partition (Slurm's main scheduler):
      // starting jobs behind it would take what it waits for. Backfill handles those.
      d.reason = PendingReason::kResources;
      blocked[job.partition] = true;
      continue;
    }
    if (own >= 0) prof_.SetActive(static_cast<uint32_t>(own), false);
    const int64_t end = SatAdd(in_.now, LimitOf(job));
    prof_.Book(&job.shape, *p, in_.now, end >= kUnlimitedSeconds ? end : ReleaseAt(end), false);
    started[k] = true;
    plan.starts.push_back({job.job_id, std::move(*p), false});
  }
}

void Planner::Update(int n, int64_t t, int64_t e) {
  const Useful& u = useful_;
  if ((*u.rank)[n] < 0) return;
  uint32_t f = FreeBound(prof_.base(n), prof_.Summarize(n, t, e), u.job->shape);
  if (f < u.need.per_node) f = 0;
  uint32_t& old = fn_[n];
  useful_.cpus += f;
  useful_.cpus -= old;
  if (f && !old) {
    ++useful_.nodes;
    upos_[n] = static_cast<int32_t>(ulist_.size());
    ulist_.push_back(n);
  } else if (!f && old) {
    --useful_.nodes;
    int last = ulist_.back();
    ulist_[upos_[n]] = last;
    upos_[last] = upos_[n];
    ulist_.pop_back();
    upos_[n] = -1;
  }
  old = f;
}

std::optional<Placement> Planner::TryPlace(const PendingJob& job, int64_t t, int64_t e,
                                           const std::vector<int32_t>& rank, const Need& need,
                                           PlanStats& stats) {
  cand_ = ulist_;
  std::sort(cand_.begin(), cand_.end(), [&](int a, int b) { return rank[a] < rank[b]; });
  for (int n : job.shape.required)
    if (n >= 0 && static_cast<size_t>(n) < prof_.size()) prof_.Compose(n, t, e);
  // PlaceJob stops at the first nodes that satisfy the job, so it is first given only the
  // nearest ones that could (with some slack), and more only if those were not enough
  // (memory, GRES or features the CPU bound does not see). Constraints that choose among
  // nodes (counts, matching OR) see all of them, as they would without the bound.
  const Constraint& c = job.shape.constraint;
  size_t k = cand_.size();
  if (c.counts.empty() && c.one_of.empty()) {
    uint64_t cpus = 0;
    size_t i = 0;
    while (i < cand_.size() && (i < need.nodes || cpus < need.cpus)) cpus += fn_[cand_[i++]];
    k = std::min(cand_.size(), 2 * i + 8);
  }
  JobShape shape = job.shape;
  size_t composed = 0;
  while (true) {
    for (; composed < k; ++composed) prof_.Compose(cand_[composed], t, e);
    shape.allowed.assign(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k));
    ++stats.place_calls;
    auto p = PlaceJob(shape, prof_.views());
    if (p || k == cand_.size()) return p;
    k = std::min(cand_.size(), 4 * k);
  }
}

std::optional<Placement> Planner::FitOn(const PendingJob& job, int64_t start,
                                        const std::vector<int>& nodes, PlanStats& stats) {
  const int64_t e = SatAdd(start, LimitOf(job));
  JobShape shape = job.shape;
  shape.allowed.clear();
  for (int n : nodes)
    if (n >= 0 && static_cast<size_t>(n) < prof_.size()) {
      prof_.Compose(n, start, e);
      shape.allowed.push_back(n);
    }
  for (int n : shape.required)
    if (n >= 0 && static_cast<size_t>(n) < prof_.size()) prof_.Compose(n, start, e);
  ++stats.place_calls;
  return PlaceJob(shape, prof_.views());
}

Planner::Found Planner::Earliest(const PendingJob& job, int64_t from, int64_t last,
                                 PlanStats& stats) {
  const int64_t limit = LimitOf(job);
  const std::vector<int32_t>& rank = RankFor(job);
  const std::vector<int>& allowed = AllowedFor(job);
  const Need need = NeedOf(job.shape);
  const bool prune = job.shape.required.empty();
  int64_t t = std::max(from, in_.now);
  if (t > last) return std::nullopt;
  int64_t e = SatAdd(t, limit);
  useful_ = {&job, &rank, need, 0, 0};
  // Until its first event a node is in its base state, and offers a window at most what it
  // offers at t: on a busy cluster most nodes are dismissed here from two arrays.
  for (size_t k = 0; k < allowed.size(); ++k) {
    const int n = allowed[k];
    if (n < 0 || static_cast<size_t>(n) >= prof_.size() || rank[n] != static_cast<int32_t>(k))
      continue;
    if (prof_.FirstEvent(n) > t && prof_.BaseFree(n, job.shape.exclusive) < need.per_node) continue;
    Update(n, t, e);
  }
  Found found;
  const auto& events = prof_.events();
  const auto& bookings = prof_.bookings();
  const auto& releases = prof_.releases();
  while (true) {
    if (!prune || (useful_.nodes >= need.nodes && useful_.cpus >= need.cpus)) {
      if (auto p = TryPlace(job, t, e, rank, need, stats)) {
        found.emplace(t, std::move(*p));
        break;
      }
    }
    // Only a release can make room, so the next candidate is the next time one happens. The
    // nodes to look at again are those with an event the window's start has passed, or a
    // booking its end has reached.
    auto next = releases.upper_bound(t);
    if (next == releases.end() || next->first > last) break;
    const int64_t t2 = next->first, e2 = SatAdd(t2, limit);
    ++step_;
    dirty_.clear();
    auto mark = [&](const std::vector<int>& nodes) {
      for (int n : nodes)
        if (stamp_[n] != step_) {
          stamp_[n] = step_;
          dirty_.push_back(n);
        }
    };
    for (auto it = events.upper_bound(t); it != events.end() && it->first <= t2; ++it)
      mark(it->second);
    if (e < kUnlimitedSeconds)
      for (auto it = bookings.lower_bound(e); it != bookings.end() && it->first < e2; ++it)
        mark(it->second);
    t = t2;
    e = e2;
    for (int n : dirty_) Update(n, t, e);
  }
  for (int n : ulist_) {
    fn_[n] = 0;
    upos_[n] = -1;
  }
  ulist_.clear();
  useful_.job = nullptr;
  return found;
}

void Planner::Backfill(std::vector<bool>& started, CyclePlan& plan, Clock::time_point t0) {
  PlanStats& stats = plan.stats;
  std::vector<bool> examined(in_.pending.size(), false);
  for (size_t k = 0; k < in_.pending.size(); ++k) {
    if (started[k]) continue;
    if (stats.backfill_tested >= in_.params.max_job_test) break;
    if (in_.params.max_time_s > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() > in_.params.max_time_s) {
      stats.stopped_by_time = true;
      break;
    }
    ++stats.backfill_tested;
    examined[k] = true;
    const PendingJob& job = in_.pending[k];
    const int64_t limit = LimitOf(job);
    const int64_t own = promise_[k];
    if (own >= 0) prof_.SetActive(static_cast<uint32_t>(own), false);
    prof_.IgnorePromises(!known_[k]);
    int64_t from = in_.now;
    uint64_t key = job.shape_key ? job.shape_key * 0x9E3779B97F4A7C15ull + job.partition : 0;
    if (key && !known_[k]) key ^= 0x5bd1e995;  // a different profile: promises not counted
    ShapeMemo* memo = nullptr;
    if (key) {
      auto it = memo_.find(key);
      if (it != memo_.end()) memo = &it->second;
    }
    // An identical job ahead of this one, with no longer a limit, could not start earlier
    // than `memo->start`; the profile has only filled up since (but for this job's own
    // promise, tried below).
    bool search = true;
    if (memo && memo->limit <= limit) {
      if (memo->start)
        from = *memo->start;
      else
        search = false;
    }
    Found r;
    if (search) {
      r = Earliest(job, from, window_end_, stats);
      if (key && (!memo || limit <= memo->limit))
        memo_[key] = {limit, r ? std::optional<int64_t>(r->first) : std::nullopt};
    }
    // The start promised last cycle still holds if its nodes still take the job then: the
    // greedy search above may have missed it (or skipped it for the memo).
    if (own >= 0) {
      const int64_t s = prof_.StartOf(static_cast<uint32_t>(own));
      if (!r || r->first > s)
        if (auto p = FitOn(job, s, prof_.PlacementOf(static_cast<uint32_t>(own)).nodes, stats))
          r.emplace(s, std::move(*p));
    }
    prof_.IgnorePromises(false);
    if (!r) continue;
    auto [start, placement] = std::move(*r);
    if (start <= in_.now) {
      started[k] = true;
      plan.starts.push_back({job.job_id, placement, true});
    } else {
      plan.pending[k].start_time = start;
      plan.pending[k].planned_nodes = placement.nodes;
    }
    const int64_t end = SatAdd(start, limit);
    prof_.Book(&job.shape, std::move(placement), start,
               end >= kUnlimitedSeconds ? end : RoundUp(end), false);
  }
  // A job backfill did not reach this cycle keeps its promise, booked all along.
  for (size_t k = 0; k < in_.pending.size(); ++k)
    if (!started[k] && !examined[k] && promise_[k] >= 0) {
      const uint32_t id = static_cast<uint32_t>(promise_[k]);
      plan.pending[k].start_time = prof_.StartOf(id);
      plan.pending[k].planned_nodes = prof_.PlacementOf(id).nodes;
    }
}

CyclePlan Planner::Run() {
  const auto t0 = Clock::now();
  CyclePlan plan;
  plan.pending.resize(in_.pending.size());
  for (size_t k = 0; k < in_.pending.size(); ++k) plan.pending[k].job_id = in_.pending[k].job_id;
  std::vector<bool> started(in_.pending.size(), false);
  BuildProfile();
  BookPromises();
  MainPass(started, plan);
  if (in_.params.enabled) Backfill(started, plan, t0);
  size_t out = 0;
  for (size_t k = 0; k < plan.pending.size(); ++k)
    if (!started[k]) {
      if (out != k) plan.pending[out] = std::move(plan.pending[k]);  // never self-move
      ++out;
    }
  plan.pending.resize(out);
  plan.stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return plan;
}

// Calls fn(key, value) for each "key=value" (or bare "key") entry of a comma-separated list;
// stops at, and returns, the first error fn returns.
template <typename Fn>
Status ForEachEntry(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    size_t eq = entry.find('=');
    Status s = fn(entry.substr(0, eq), eq == std::string_view::npos ? "" : entry.substr(eq + 1));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<uint32_t> ParseCount(std::string_view key, std::string_view value) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size())
    return InvalidArgument("Invalid SchedulerParameters value: " + std::string(key) + "=" +
                           std::string(value));
  return v;
}

}  // namespace

std::string_view ReasonName(PendingReason r) {
  switch (r) {
    case PendingReason::kNone:
      return "None";
    case PendingReason::kPriority:
      return "Priority";
    case PendingReason::kResources:
      return "Resources";
  }
  return "None";
}

Result<BackfillParams> ParseSchedulerParameters(std::string_view text, BackfillParams base) {
  Status s = ForEachEntry(text, [&](std::string_view key, std::string_view value) -> Status {
    if (key == "bf_continue") {
      base.bf_continue = true;
      return Status::Ok();
    }
    uint32_t* target = key == "bf_max_job_test" ? &base.max_job_test
                       : key == "bf_window"     ? &base.window_min
                       : key == "bf_resolution" ? &base.resolution_s
                                                : nullptr;
    if (!target && key != "bf_max_time") return Status::Ok();  // another part of the scheduler's
    auto v = ParseCount(key, value);
    if (!v) return v.status();
    if (target)
      *target = *v;
    else
      base.max_time_s = *v;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (base.resolution_s == 0 || base.window_min == 0)
    return InvalidArgument("Invalid SchedulerParameters: bf_window and bf_resolution must be > 0");
  return base;
}

PreviousPlan::PreviousPlan(std::vector<PendingDecision> decisions)
    : decisions_(std::move(decisions)) {
  index_.reserve(decisions_.size());
  for (size_t i = 0; i < decisions_.size(); ++i) index_[decisions_[i].job_id] = i;  // last wins
}

const PendingDecision* PreviousPlan::Find(uint32_t job_id) const {
  auto it = index_.find(job_id);
  return it == index_.end() ? nullptr : &decisions_[it->second];
}

Result<MainSchedParams> ParseMainSchedulerParameters(std::string_view text) {
  MainSchedParams out;
  Status s = ForEachEntry(text, [&](std::string_view key, std::string_view value) -> Status {
    if (key == "defer") {
      out.defer = true;
    } else if (key == "sched_interval" && value == "-1") {
      out.interval_s = -1;
    } else if (key == "default_queue_depth" || key == "partition_job_depth" ||
               key == "sched_interval") {
      auto v = ParseCount(key, value);
      if (!v) return v.status();
      if (key == "default_queue_depth") out.queue_depth = *v;
      if (key == "partition_job_depth") out.partition_depth = *v;
      if (key == "sched_interval") out.interval_s = *v;
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

CyclePlan PlanCycle(const PlanInput& in) { return Planner(in).Run(); }

SingleDecision PlanSingle(const std::vector<NodeView>& nodes, const PendingJob& job,
                          const std::vector<int>& partition_nodes, bool jobs_ahead) {
  SingleDecision d;
  if (jobs_ahead) {
    d.reason = PendingReason::kPriority;
    return d;
  }
  std::optional<Placement> p;
  if (job.shape.allowed.empty()) {
    JobShape shape = job.shape;
    shape.allowed = partition_nodes;
    p = PlaceJob(shape, nodes);
  } else {
    p = PlaceJob(job.shape, nodes);
  }
  if (!p) d.reason = PendingReason::kResources;
  d.placement = std::move(p);
  return d;
}

}  // namespace shoal::sched
