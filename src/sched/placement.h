// Placement of one job on nodes: which nodes, how many CPUs on each, how much memory.
// Pure logic (select/cons_tres-like consumable CPUs and memory), no I/O; the controller gives
// it a view of the nodes and the job's request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shoal::sched {

struct NodeView {
  uint32_t cpus = 0;
  uint32_t alloc_cpus = 0;
  uint64_t memory_mb = 0;
  uint64_t alloc_memory_mb = 0;
  bool available = false;         // up, responding, not drained
  bool exclusive_in_use = false;  // an --exclusive job holds it
};

struct JobShape {
  uint32_t min_nodes = 0;  // 0 = not given
  uint32_t max_nodes = 0;  // 0 = not given
  uint32_t num_tasks = 0;  // 0 = not given
  uint32_t cpus_per_task = 1;
  uint32_t ntasks_per_node = 0;  // 0 = not given
  uint64_t mem_per_node_mb = 0;  // 0 = not given
  uint64_t mem_per_cpu_mb = 0;   // 0 = not given
  bool exclusive = false;
  std::vector<int> allowed;   // candidate node indexes, in preference order
  std::vector<int> required;  // nodes that must be included (-w)
};

struct Placement {
  std::vector<int> nodes;        // node indexes, ascending
  std::vector<uint32_t> cpus;    // CPUs allocated on each, parallel to nodes
  std::vector<uint32_t> tasks;   // tasks placed on each
  uint64_t mem_per_node_mb = 0;  // memory allocated on each
};

// Where the job can start now, given current allocations; nullopt when it must wait.
std::optional<Placement> PlaceJob(const JobShape& job, const std::vector<NodeView>& nodes);

// Whether the job could ever run on these nodes if they were all idle and up (used to reject
// impossible submissions with "Requested node configuration is not available").
bool CouldEverRun(const JobShape& job, const std::vector<NodeView>& nodes);

}  // namespace shoal::sched
