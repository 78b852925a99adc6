// One full scheduling cycle (main pass + backfill with reservations) on a busy cluster of
// 1,000 and 10,000 nodes with 10,000 and 100,000 pending jobs of mixed shapes, and the
// immediate decision for one new job on an idle 10,000-node cluster.
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>
#include <vector>

#include "sched/backfill.h"

namespace {

using namespace shoal::sched;

constexpr uint32_t kCpus = 64;

JobShape ShapeClass(int c) {
  JobShape s;
  switch (c % 6) {
    case 0:  // one CPU
    case 1:
      s.min_nodes = s.max_nodes = 1;
      s.num_tasks = 1 + c % 4;
      break;
    case 2:  // half a node
      s.min_nodes = s.max_nodes = 1;
      s.num_tasks = kCpus / 2;
      break;
    case 3:  // a few whole nodes
      s.min_nodes = s.max_nodes = 2 + c % 7;
      s.ntasks_per_node = kCpus;
      break;
    case 4:  // tasks spread anywhere
      s.num_tasks = 96 + 32 * (c % 3);
      break;
    default:  // wide
      s.min_nodes = s.max_nodes = 32 << (c % 4);
      s.ntasks_per_node = kCpus;
      break;
  }
  return s;
}

PlanInput BusyCluster(int n_nodes, int n_pending) {
  std::mt19937 rng(12345);
  PlanInput in;
  in.now = 1'000'000;
  in.nodes.resize(n_nodes);
  for (auto& v : in.nodes) {
    v.cpus = kCpus;
    v.memory_mb = 256000;
    v.available = true;
  }
  in.partition_nodes.resize(1);
  in.partition_nodes[0].resize(n_nodes);
  std::iota(in.partition_nodes[0].begin(), in.partition_nodes[0].end(), 0);
  // About 97% of the CPUs busy: whole-node jobs and partial ones, ending over the next day.
  std::uniform_int_distribution<int64_t> end(60, 86400);
  uint32_t id = 1;
  for (int i = 0; i < n_nodes; ++i) {
    RunningJob r;
    r.job_id = id++;
    r.shape.min_nodes = r.shape.max_nodes = 1;
    r.shape.num_tasks = i % 5 == 0 ? kCpus - 8 : kCpus;
    r.shape.allowed = {i};
    r.placement = *PlaceJob(r.shape, in.nodes);
    r.end_time = in.now + end(rng);
    Allocate(in.nodes, r.shape, r.placement);
    r.shape.allowed.clear();
    in.running.push_back(std::move(r));
  }
  std::uniform_int_distribution<int> cls(0, 59);
  std::uniform_int_distribution<int64_t> limit(1, 48);
  for (int k = 0; k < n_pending; ++k) {
    PendingJob j;
    j.job_id = id++;
    int c = cls(rng);
    j.shape = ShapeClass(c);
    j.shape_key = static_cast<uint64_t>(c) + 1;
    j.time_limit_s = limit(rng) * 1800;
    in.pending.push_back(std::move(j));
  }
  return in;
}

void BM_FullCycle(benchmark::State& state) {
  PlanInput in = BusyCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  CyclePlan last;
  for (auto _ : state) {
    last = PlanCycle(in);
    benchmark::DoNotOptimize(last);
  }
  state.counters["started"] = static_cast<double>(last.starts.size());
  state.counters["bf_tested"] = last.stats.backfill_tested;
  state.counters["place_calls"] = last.stats.place_calls + last.stats.main_tested;
  state.SetComplexityN(state.range(0) + state.range(1));
}
BENCHMARK(BM_FullCycle)
    ->Args({1000, 10000})
    ->Args({1000, 100000})
    ->Args({10000, 10000})
    ->Args({10000, 100000})
    ->Unit(benchmark::kMillisecond);

// The same cycle given the previous cycle's plan (PlanInput::previous): every reservation is
// booked as a promise first, and jobs the plan knew are placed around them.
void BM_FullCycleWithPrevious(benchmark::State& state) {
  PlanInput in = BusyCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  in.previous = std::make_shared<const PreviousPlan>(PlanCycle(in).pending);
  CyclePlan last;
  for (auto _ : state) {
    last = PlanCycle(in);
    benchmark::DoNotOptimize(last);
  }
  state.counters["started"] = static_cast<double>(last.starts.size());
  state.counters["bf_tested"] = last.stats.backfill_tested;
}
BENCHMARK(BM_FullCycleWithPrevious)
    ->Args({1000, 10000})
    ->Args({10000, 100000})
    ->Unit(benchmark::kMillisecond);

void BM_SingleDecisionIdle(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<NodeView> nodes(n);
  for (auto& v : nodes) {
    v.cpus = kCpus;
    v.memory_mb = 256000;
    v.available = true;
  }
  std::vector<int> part(n);
  std::iota(part.begin(), part.end(), 0);
  PendingJob j;
  j.job_id = 1;
  j.shape.num_tasks = 4;
  j.time_limit_s = 3600;
  for (auto _ : state) benchmark::DoNotOptimize(PlanSingle(nodes, j, part, false));
}
BENCHMARK(BM_SingleDecisionIdle)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
