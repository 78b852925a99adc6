// Placement of one job on nodes: which nodes, how many CPUs on each, how much memory, which
// GRES devices. Pure logic (select/cons_tres-like consumable CPUs, memory and GRES), no I/O; the
// controller gives it a view of the nodes and the job's request.
//
// Every field added after the first version defaults to "not requested"/"not configured", so a
// caller that fills only the original fields gets exactly the original behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/constraint.h"
#include "sched/gres.h"

namespace shoal::sched {

inline constexpr uint32_t kNoUser = 0xffffffffu;  // NodeView::exclusive_user when not held

struct NodeView {
  uint32_t cpus = 0;
  uint32_t alloc_cpus = 0;
  uint64_t memory_mb = 0;
  uint64_t alloc_memory_mb = 0;
  bool available = false;         // up, responding, not drained
  bool exclusive_in_use = false;  // an --exclusive job holds it

  // Topology from slurm.conf (0 = not given). Informational: `cpus` stays authoritative; the
  // controller sets it to sockets*cores*threads when CPUs= is not given (see TopologyCpus).
  uint16_t sockets = 0;
  uint16_t cores_per_socket = 0;
  uint16_t threads_per_core = 0;
  FeatureSet features;  // Features=, bits from the cluster's FeatureIndex
  NodeGres gres;        // Gres=, with the allocation bitmaps
  // OverSubscribe: how many jobs may share one CPU. 1 (or 0) = NO. With N > 1 the node offers
  // cpus*N CPU slots and alloc_cpus counts slots in use; one job still gets at most `cpus` of
  // them. YES:N shares only with jobs that ask for it (-s/--oversubscribe); FORCE:N with all.
  // Memory and GRES are never shared.
  uint32_t oversubscribe = 1;
  bool oversubscribe_force = false;
  uint32_t exclusive_user = kNoUser;  // uid holding it through --exclusive=user jobs
  uint32_t exclusive_user_jobs = 0;   // how many such jobs (the hold ends with the last)
  uint32_t num_jobs = 0;              // jobs allocated on it (through Allocate)
};

// sockets*cores*threads when all three are given, else cpus.
uint32_t TopologyCpus(const NodeView& n);

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

  // GRES: --gres/--gpus-per-node (per node), --gpus-per-task (times the tasks on a node),
  // --gpus (total, spread over the nodes), --cpus-per-gpu (a node gets at least gpus*N CPUs;
  // with -c too, the larger wins), --mem-per-gpu (a node gets gpus*M memory, or the larger of
  // that and --mem/--mem-per-cpu when both are given).
  JobGres gres;
  Constraint constraint;        // -C, bound to the cluster's FeatureIndex
  bool exclusive_user = false;  // --exclusive=user: share nodes only with `uid`'s jobs
  uint32_t uid = 0;             // the job's user (for exclusive_user)
  bool oversubscribe = false;   // -s/--oversubscribe
  bool mem_whole_node = false;  // --mem=0: all the memory of each node (it must be unused)
};

struct Placement {
  std::vector<int> nodes;        // node indexes, ascending
  std::vector<uint32_t> cpus;    // CPUs allocated on each, parallel to nodes
  std::vector<uint32_t> tasks;   // tasks placed on each
  uint64_t mem_per_node_mb = 0;  // memory allocated on each (the largest when they differ)
  std::vector<uint64_t> mem_mb;  // memory allocated on each, parallel to nodes (may be empty in
                                 // hand-made placements: then mem_per_node_mb applies to all)
  std::vector<std::vector<GresAlloc>> gres;  // devices on each, parallel to nodes (empty = none)
};

// Where the job can start now, given current allocations; nullopt when it must wait.
// Candidates are tried in order: -w nodes, then nodes picked for constraint counts ("a*2"),
// then `allowed` in preference order; the scan stops as soon as the job is satisfied. A matching
// OR ("[a|b]") tries each alternative in turn and takes the first that fits.
std::optional<Placement> PlaceJob(const JobShape& job, const std::vector<NodeView>& nodes);

// Books a placement's resources on the views (the job starts), or gives them back (it ends).
// Every consumer of placements (controller, backfill planner, simulator) goes through these,
// so a resource added to the model is accounted for in one place.
void Allocate(std::vector<NodeView>& nodes, const JobShape& job, const Placement& p);
void Release(std::vector<NodeView>& nodes, const JobShape& job, const Placement& p);

// Whether the job could ever run on these nodes if they were all idle and up (used to reject
// impossible submissions with "Requested node configuration is not available"). A constraint
// naming a feature no node has is caught earlier by UnknownFeatures (constraint.h).
bool CouldEverRun(const JobShape& job, const std::vector<NodeView>& nodes);

}  // namespace shoal::sched
