// Placement of one job (sched::PlaceJob) on large clusters: the inner step of every scheduling
// pass. Idle clusters of 1,000 and 10,000 nodes; a "nearly full" cluster where only the last
// node has room, so a linear scan pays its worst case; and a multi-node job.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "sched/placement.h"

namespace {

using shoal::sched::JobShape;
using shoal::sched::NodeView;

std::vector<NodeView> Nodes(int n, bool nearly_full) {
  std::vector<NodeView> nodes(static_cast<size_t>(n));
  for (auto& v : nodes) {
    v.cpus = 64;
    v.memory_mb = 256000;
    v.available = true;
    if (nearly_full) v.alloc_cpus = 64;
  }
  if (nearly_full) nodes.back().alloc_cpus = 0;
  return nodes;
}

JobShape Shape(int n, uint32_t min_nodes, uint32_t tasks) {
  JobShape job;
  job.min_nodes = min_nodes;
  job.num_tasks = tasks;
  job.allowed.resize(static_cast<size_t>(n));
  std::iota(job.allowed.begin(), job.allowed.end(), 0);
  return job;
}

void BM_PlaceOneCpuIdle(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  auto nodes = Nodes(n, false);
  auto job = Shape(n, 1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceOneCpuIdle)->Arg(1000)->Arg(10000);

void BM_PlaceOneCpuNearlyFull(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  auto nodes = Nodes(n, true);
  auto job = Shape(n, 1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceOneCpuNearlyFull)->Arg(1000)->Arg(10000);

void BM_Place64NodesIdle(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  auto nodes = Nodes(n, false);
  auto job = Shape(n, 64, 64 * 64);
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_Place64NodesIdle)->Arg(1000)->Arg(10000);

// A job that cannot start (the whole cluster is busy): what a pending job costs every pass.
void BM_PlaceBlocked(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  auto nodes = Nodes(n, true);
  nodes.back().alloc_cpus = 64;
  auto job = Shape(n, 1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceBlocked)->Arg(1000)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
