// Placement of one job (sched::PlaceJob) on large clusters: the inner step of every scheduling
// pass. Idle clusters of 1,000 and 10,000 nodes; a "nearly full" cluster where only the last
// node has room, so a linear scan pays its worst case; and a multi-node job. GPU and --constraint
// jobs on 10,000 nodes: idle, and with only the last node able to take the job.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "sched/constraint.h"
#include "sched/gres.h"
#include "sched/placement.h"

namespace {

using shoal::sched::FeatureIndex;
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

// GPU nodes (gpu:a100:4 on even nodes, gpu:v100:4 on odd ones), 8 features spread over them.
std::vector<NodeView> GpuNodes(int n, bool nearly_full, FeatureIndex& index) {
  auto nodes = Nodes(n, nearly_full);
  auto a100 = *shoal::sched::ParseNodeGres("gpu:a100:4");
  auto v100 = *shoal::sched::ParseNodeGres("gpu:v100:4");
  const char* feats[] = {"rack0,ib", "rack1", "rack2,ib", "rack3", "rack4,ib", "rack5", "rack6"};
  for (int i = 0; i < n; ++i) {
    nodes[i].gres = i % 2 ? v100 : a100;
    nodes[i].features = *shoal::sched::ParseFeatures(feats[i % 7], index);
  }
  if (nearly_full) {
    // Only the last node can take a job: every other one has its GPUs in use.
    for (auto& v : nodes) {
      v.alloc_cpus = 0;
      for (auto& s : v.gres.slots) {
        s.alloc = s.count;
        s.bits.assign(s.bits.size(), 0xf);
      }
    }
    nodes.back().gres = nodes.back().gres.slots[0].type == "a100" ? a100 : v100;
    nodes.back().features = *shoal::sched::ParseFeatures("rack6,ib,special", index);
  }
  return nodes;
}

void BM_PlaceGpuJob(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  FeatureIndex index;
  auto nodes = GpuNodes(n, state.range(1) != 0, index);
  auto job = Shape(n, 1, 1);
  job.gres.per_node = *shoal::sched::ParseGresRequest("gpu:2");
  job.gres.cpus_per_gpu = 4;
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceGpuJob)->Args({10000, 0})->Args({10000, 1});

void BM_PlaceTypedGpusPerTask(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  FeatureIndex index;
  auto nodes = GpuNodes(n, false, index);
  auto job = Shape(n, 2, 8);
  job.gres.per_task = *shoal::sched::ParseGpuRequest("v100:1");
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceTypedGpusPerTask)->Arg(10000);

void BM_PlaceConstraintJob(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  FeatureIndex index;
  auto nodes = GpuNodes(n, state.range(1) != 0, index);
  auto job = Shape(n, 1, 1);
  // Idle: "rack2&(ib|x)" first matches node 2. Nearly full: only the last node has "special".
  job.constraint =
      *shoal::sched::ParseConstraint(state.range(1) ? "special&ib" : "rack2&(ib|x)", index);
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceConstraintJob)->Args({10000, 0})->Args({10000, 1});

void BM_PlaceMatchingOr(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  FeatureIndex index;
  auto nodes = GpuNodes(n, false, index);
  auto job = Shape(n, 4, 4);
  job.constraint = *shoal::sched::ParseConstraint("[nope|rack3|rack5]", index);
  for (auto _ : state) benchmark::DoNotOptimize(shoal::sched::PlaceJob(job, nodes));
}
BENCHMARK(BM_PlaceMatchingOr)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
