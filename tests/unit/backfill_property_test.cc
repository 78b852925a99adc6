// Properties of the backfill planner on many random workloads (seeded, deterministic):
// (a) no node is ever given more CPUs or memory than it has;
// (b) backfill never delays the reserved start of a higher-priority job, checked three ways:
//     the plan is feasible at every reservation start, reservations are the same with and
//     without the jobs backfilled in the cycle, and in simulated runs that keep reservations
//     across cycles where jobs use exactly their limit, no reserved job ever starts later
//     than the first reservation it was given (+ bf_resolution).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "sched/backfill.h"
#include "sim/simulator.h"

namespace shoal::sched {
namespace {

bool WithinCapacity(const std::vector<NodeView>& nodes) {
  return std::all_of(nodes.begin(), nodes.end(), [](const NodeView& v) {
    return v.alloc_cpus <= v.cpus && v.alloc_memory_mb <= v.memory_mb;
  });
}

// Shapes whose placement on given nodes is unambiguous: one node with a few tasks, or whole
// nodes, so the checker can rebuild a reservation on its planned nodes.
JobShape RandomShape(std::mt19937& rng, uint32_t cpus, uint32_t n_nodes) {
  JobShape s;
  std::uniform_int_distribution<int> kind(0, 3);
  if (kind(rng) < 3) {
    s.min_nodes = s.max_nodes = 1;
    s.num_tasks = std::uniform_int_distribution<uint32_t>(1, cpus)(rng);
    s.mem_per_cpu_mb = std::uniform_int_distribution<uint32_t>(0, 3)(rng) * 100;
  } else {
    s.min_nodes = s.max_nodes = std::uniform_int_distribution<uint32_t>(2, n_nodes)(rng);
    s.ntasks_per_node = cpus;
  }
  return s;
}

PlanInput RandomInput(uint32_t seed) {
  std::mt19937 rng(seed);
  PlanInput in;
  in.now = 100000 + seed;
  uint32_t n = std::uniform_int_distribution<uint32_t>(2, 24)(rng);
  uint32_t cpus = std::uniform_int_distribution<uint32_t>(1, 4)(rng) * 4;
  in.nodes.resize(n);
  for (auto& v : in.nodes) {
    v.cpus = cpus;
    v.memory_mb = cpus * 200;
    v.available = true;
  }
  in.partition_nodes.resize(1);
  for (uint32_t i = 0; i < n; ++i) in.partition_nodes[0].push_back(static_cast<int>(i));
  in.params.resolution_s = std::uniform_int_distribution<uint32_t>(1, 120)(rng);
  in.params.window_min = std::uniform_int_distribution<uint32_t>(30, 600)(rng);
  in.params.max_job_test = std::uniform_int_distribution<uint32_t>(5, 100)(rng);
  // Fill the cluster with running jobs first.
  uint32_t id = 1;
  for (int tries = 0; tries < 40; ++tries) {
    RunningJob r;
    r.job_id = id++;
    r.shape = RandomShape(rng, cpus, n);
    r.shape.allowed = in.partition_nodes[0];
    auto p = PlaceJob(r.shape, in.nodes);
    if (!p) continue;
    r.placement = *p;
    r.end_time = in.now + std::uniform_int_distribution<int64_t>(-30, 20000)(rng);
    Allocate(in.nodes, r.shape, r.placement);
    in.running.push_back(std::move(r));
  }
  uint32_t pending = std::uniform_int_distribution<uint32_t>(1, 60)(rng);
  for (uint32_t k = 0; k < pending; ++k) {
    PendingJob j;
    j.job_id = id++;
    j.shape = RandomShape(rng, cpus, n);
    j.time_limit_s = std::uniform_int_distribution<int64_t>(1, 300)(rng) * 60;
    in.pending.push_back(std::move(j));
  }
  return in;
}

int64_t LimitOf(const PendingJob& j) { return j.time_limit_s; }

// (b), independently of the planner: at `now` and at every reservation's start, everything
// that is then running or reserved fits on the cluster at once, each on its planned nodes.
void ExpectFeasible(const PlanInput& in, const CyclePlan& plan) {
  std::map<uint32_t, const PendingJob*> by_id;
  for (const auto& j : in.pending) by_id[j.job_id] = &j;
  std::set<int64_t> times = {in.now};
  for (const auto& d : plan.pending)
    if (d.start_time) times.insert(*d.start_time);
  for (int64_t t : times) {
    std::vector<NodeView> v = in.nodes;
    // The planner expects an overdue job to end at its next step, not to be still running.
    for (const auto& r : in.running)
      if (std::max(r.end_time, in.now + 1) <= t) Release(v, r.shape, r.placement);
    for (const auto& s : plan.starts)
      if (in.now + LimitOf(*by_id[s.job_id]) > t) Allocate(v, by_id[s.job_id]->shape, s.placement);
    ASSERT_TRUE(WithinCapacity(v)) << "at " << t;
    for (const auto& d : plan.pending) {
      if (!d.start_time || *d.start_time > t || *d.start_time + LimitOf(*by_id[d.job_id]) <= t)
        continue;
      JobShape s = by_id[d.job_id]->shape;
      s.allowed = d.planned_nodes;
      auto p = PlaceJob(s, v);
      ASSERT_TRUE(p) << "job " << d.job_id << " reserved at " << *d.start_time
                     << " does not fit at " << t;
      EXPECT_EQ(p->nodes, d.planned_nodes);
      Allocate(v, s, *p);
    }
  }
}

TEST(BackfillProperty, RandomCyclesAreFeasibleAndNeverDelayReservations) {
  int backfilled = 0, reserved = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    PlanInput in = RandomInput(seed);
    CyclePlan plan = PlanCycle(in);

    // (a) starting everything the plan starts never overcommits a node.
    std::vector<NodeView> after = in.nodes;
    std::map<uint32_t, const PendingJob*> by_id;
    for (const auto& j : in.pending) by_id[j.job_id] = &j;
    for (const auto& s : plan.starts) Allocate(after, by_id[s.job_id]->shape, s.placement);
    ASSERT_TRUE(WithinCapacity(after));

    ExpectFeasible(in, plan);

    // (b) without the jobs backfilled this cycle, every job above all of them gets the same
    // reservation: backfilled jobs took nothing a higher-priority job was promised.
    std::set<uint32_t> bf;
    for (const auto& s : plan.starts)
      if (s.backfilled) bf.insert(s.job_id);
    backfilled += static_cast<int>(bf.size());
    if (bf.empty()) continue;
    PlanInput without = in;
    std::erase_if(without.pending, [&](const PendingJob& j) { return bf.count(j.job_id) > 0; });
    CyclePlan ref = PlanCycle(without);
    std::map<uint32_t, std::optional<int64_t>> ref_start;
    for (const auto& d : ref.pending) ref_start[d.job_id] = d.start_time;
    for (const auto& j : in.pending) {
      if (bf.count(j.job_id)) break;  // jobs below a backfilled one may legitimately move
      auto it = std::find_if(plan.pending.begin(), plan.pending.end(),
                             [&](const PendingDecision& d) { return d.job_id == j.job_id; });
      if (it == plan.pending.end() || !it->start_time) continue;
      ++reserved;
      ASSERT_TRUE(ref_start[j.job_id]);
      EXPECT_LE(*it->start_time, *ref_start[j.job_id]) << "job " << j.job_id;
    }
  }
  // The workloads exercise what they are meant to.
  EXPECT_GT(backfilled, 50);
  EXPECT_GT(reserved, 50);
}

// Reservations persist across cycles (PlanInput::previous, which the simulator passes): in a
// run where jobs use exactly their limits and no job arrives after the first reservation,
// nothing happens that the plan did not foresee, so every reservation holds. Checked for
// every reserved job, not only the one its partition is blocked on: each cycle's expected
// start never moves later, and the job starts no later than the first reservation it was
// given (+ bf_resolution, the rounding the planner applies to expected ends; with limits in
// whole minutes and bf_resolution=60 nothing is rounded, and the bound holds exactly).
void RunWholeLimit(uint64_t seed, uint32_t jobs, uint32_t nodes, uint32_t cpus,
                   uint32_t resolution) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " resolution " + std::to_string(resolution));
  sim::Workload w = sim::Synthetic({jobs, seed, nodes, cpus, 1.5});
  for (auto& j : w.jobs) {
    j.runtime = j.limit;  // limits are whole minutes
    j.submit = 0;         // one queue, fixed order: no newcomer may overtake
  }
  sim::SimConfig cfg;
  cfg.nodes = nodes;
  cfg.cpus_per_node = cpus;
  cfg.backfill.resolution_s = resolution;
  cfg.backfill.window_min = 7 * 1440;
  cfg.backfill.max_job_test = 1000;
  cfg.priority.weight_age = 0;   // ages grow alike but round unevenly: keep the order fixed
  cfg.keep_reservations = true;  // the simulator passes each cycle the previous plan
  bool overcommitted = false;
  std::map<uint32_t, int64_t> first, last;
  int moved_later = 0;
  cfg.on_cycle = [&](const PlanInput& in, const CyclePlan& plan) {
    std::vector<NodeView> v = in.nodes;
    std::map<uint32_t, const PendingJob*> by_id;
    for (const auto& j : in.pending) by_id[j.job_id] = &j;
    for (const auto& s : plan.starts) Allocate(v, by_id[s.job_id]->shape, s.placement);
    overcommitted |= !WithinCapacity(v);
    for (const auto& d : plan.pending) {
      if (!d.start_time) continue;
      first.try_emplace(d.job_id, *d.start_time);
      auto [it, fresh] = last.try_emplace(d.job_id, *d.start_time);
      if (!fresh && *d.start_time > it->second) {
        ++moved_later;
        ADD_FAILURE() << "job " << d.job_id << " moved from " << it->second << " to "
                      << *d.start_time << " at " << in.now;
      }
      it->second = *d.start_time;
    }
  };
  sim::SimReport r = sim::Simulate(w, cfg);
  EXPECT_FALSE(overcommitted);
  EXPECT_EQ(moved_later, 0);
  ASSERT_EQ(r.jobs_completed, jobs);
  int reserved = 0;
  for (const auto& o : r.jobs) {
    if (!o.first_reservation) continue;
    ++reserved;
    ASSERT_EQ(first.at(o.id), *o.first_reservation);
    EXPECT_LE(o.start, *o.first_reservation + resolution) << "job " << o.id;
    if (resolution == 60) {
      EXPECT_LE(o.start, *o.first_reservation) << "job " << o.id;
    }
  }
  EXPECT_GT(reserved, static_cast<int>(jobs) / 2);  // the workload exercises reservations
}

TEST(BackfillProperty, JobsUsingTheirWholeLimitStartNoLaterThanReserved) {
  for (uint64_t seed = 1; seed <= 6; ++seed) RunWholeLimit(seed, 300, 16, 8, 60);
}

// Coarser and finer resolutions than the limits' minutes (expected ends are rounded up, so a
// job may wait for the rounded time), a wider cluster, and partial nodes mixed with whole ones.
TEST(BackfillProperty, ReservationsHoldAtOtherResolutionsAndSizes) {
  for (uint64_t seed = 11; seed <= 13; ++seed) {
    RunWholeLimit(seed, 250, 16, 8, 300);
    RunWholeLimit(seed, 250, 12, 4, 7);
    RunWholeLimit(seed, 250, 40, 16, 60);
  }
}

}  // namespace
}  // namespace shoal::sched
