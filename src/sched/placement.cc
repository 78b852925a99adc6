#include "sched/placement.h"

#include <algorithm>

namespace shoal::sched {
namespace {

uint64_t MemoryFor(const JobShape& job, uint32_t cpus) {
  if (job.mem_per_node_mb) return job.mem_per_node_mb;
  if (job.mem_per_cpu_mb) return job.mem_per_cpu_mb * cpus;
  return 0;
}

// How many tasks fit on a node with `free` CPUs and `free_mem` memory.
uint32_t TasksThatFit(const JobShape& job, uint32_t free, uint64_t free_mem) {
  uint32_t cpt = std::max<uint32_t>(job.cpus_per_task, 1);
  uint32_t n = free / cpt;
  if (job.mem_per_cpu_mb && !job.mem_per_node_mb) {
    uint64_t by_mem = free_mem / (job.mem_per_cpu_mb * cpt);
    n = static_cast<uint32_t>(std::min<uint64_t>(n, by_mem));
  }
  return n;
}

std::optional<Placement> Place(const JobShape& job, const std::vector<NodeView>& nodes,
                               bool ignore_allocations) {
  const uint32_t cpt = std::max<uint32_t>(job.cpus_per_task, 1);
  const uint32_t min_nodes = std::max<uint32_t>(job.min_nodes, 1);
  uint32_t max_nodes = job.max_nodes ? job.max_nodes : (job.min_nodes ? job.min_nodes : 0);
  uint32_t tasks = job.num_tasks;
  if (!tasks) tasks = job.ntasks_per_node ? job.ntasks_per_node * min_nodes : min_nodes;
  if (!max_nodes) max_nodes = std::max(tasks, min_nodes);  // -n alone may spread over nodes
  if (job.ntasks_per_node && !job.num_tasks) max_nodes = min_nodes;

  // Candidates: required nodes first, then the others in preference order.
  std::vector<int> order = job.required;
  for (int idx : job.allowed)
    if (std::find(job.required.begin(), job.required.end(), idx) == job.required.end())
      order.push_back(idx);

  Placement p;
  uint32_t placed = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    int idx = order[i];
    const NodeView& n = nodes[idx];
    bool required = i < job.required.size();
    bool usable = ignore_allocations || (n.available && !n.exclusive_in_use);
    if (!ignore_allocations && job.exclusive && n.alloc_cpus > 0) usable = false;
    uint32_t free = ignore_allocations ? n.cpus : n.cpus - std::min(n.cpus, n.alloc_cpus);
    uint64_t free_mem =
        ignore_allocations ? n.memory_mb : n.memory_mb - std::min(n.memory_mb, n.alloc_memory_mb);
    uint32_t fit = usable ? TasksThatFit(job, free, free_mem) : 0;
    if (job.ntasks_per_node) fit = fit >= job.ntasks_per_node ? job.ntasks_per_node : 0;
    if (fit == 0) {
      if (required) return std::nullopt;
      continue;
    }
    // Leave at least one task for each node still needed to reach min_nodes.
    uint32_t nodes_after = p.nodes.size() + 1 < min_nodes ? min_nodes - (p.nodes.size() + 1) : 0;
    uint32_t remaining = tasks > placed ? tasks - placed : 0;
    uint32_t want = remaining > nodes_after ? remaining - nodes_after : 1;
    uint32_t here = std::min(fit, want);
    if (job.ntasks_per_node) here = job.ntasks_per_node;
    uint32_t cpus = job.exclusive ? n.cpus : here * cpt;
    uint64_t mem = MemoryFor(job, cpus);
    if (mem > free_mem) {
      if (required) return std::nullopt;
      continue;
    }
    p.nodes.push_back(idx);
    p.cpus.push_back(cpus);
    p.tasks.push_back(here);
    p.mem_per_node_mb = std::max(p.mem_per_node_mb, mem);
    placed += here;
    bool enough_nodes = p.nodes.size() >= min_nodes && p.nodes.size() >= job.required.size();
    if (placed >= tasks && enough_nodes) break;
    if (p.nodes.size() >= max_nodes && !(i + 1 < job.required.size())) break;
  }
  if (placed < tasks || p.nodes.size() < min_nodes || p.nodes.size() > max_nodes)
    return std::nullopt;
  // Sort by node index, keeping the parallel vectors aligned.
  std::vector<size_t> perm(p.nodes.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return p.nodes[a] < p.nodes[b]; });
  Placement sorted;
  sorted.mem_per_node_mb = p.mem_per_node_mb;
  for (size_t i : perm) {
    sorted.nodes.push_back(p.nodes[i]);
    sorted.cpus.push_back(p.cpus[i]);
    sorted.tasks.push_back(p.tasks[i]);
  }
  return sorted;
}

}  // namespace

std::optional<Placement> PlaceJob(const JobShape& job, const std::vector<NodeView>& nodes) {
  return Place(job, nodes, false);
}

bool CouldEverRun(const JobShape& job, const std::vector<NodeView>& nodes) {
  return Place(job, nodes, true).has_value();
}

}  // namespace shoal::sched
