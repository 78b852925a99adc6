#include "sched/step_layout.h"

#include <algorithm>
#include <set>

namespace shoal::sched {
namespace {

Status Invalid(const std::string& why) { return Error(ErrorCode::kInvalidStep, why); }

// Even block spread: every node gets tasks/n, the first tasks%n nodes one more.
std::vector<uint32_t> EvenSpread(uint32_t tasks, uint32_t nodes) {
  std::vector<uint32_t> out(nodes, tasks / nodes);
  for (uint32_t i = 0; i < tasks % nodes; ++i) ++out[i];
  return out;
}

}  // namespace

Result<StepLayout> LayoutStep(const StepJobNodes& job, const StepRequest& req) {
  const uint32_t job_nodes = static_cast<uint32_t>(job.names.size());
  if (job_nodes == 0) return Invalid("Job has no nodes");
  const uint32_t cpt = std::max<uint32_t>(req.cpus_per_task, 1);

  // Candidate nodes: the job's, from -r on, minus -x; -w nodes must all be the job's.
  std::set<std::string> excluded(req.exclude.begin(), req.exclude.end());
  if (req.relative_given && req.relative >= job_nodes)
    return Invalid("Invalid relative node index (" + std::to_string(req.relative) + " of " +
                   std::to_string(job_nodes) + " nodes)");
  std::vector<uint32_t> candidates;
  for (uint32_t i = req.relative_given ? req.relative : 0; i < job_nodes; ++i)
    if (!excluded.count(job.names[i])) candidates.push_back(i);
  std::vector<uint32_t> required;
  for (const auto& name : req.nodelist) {
    auto it = std::find(job.names.begin(), job.names.end(), name);
    if (it == job.names.end() || excluded.count(name))
      return Invalid("Requested node configuration is not available");
    uint32_t idx = static_cast<uint32_t>(it - job.names.begin());
    if (std::find(required.begin(), required.end(), idx) == required.end()) required.push_back(idx);
  }
  // Required nodes first, then the rest in allocation order.
  std::vector<uint32_t> order = required;
  for (uint32_t idx : candidates)
    if (std::find(required.begin(), required.end(), idx) == required.end()) order.push_back(idx);

  // Node count.
  uint32_t available = static_cast<uint32_t>(order.size());
  uint32_t nodes = 0;
  if (req.min_nodes) {
    nodes = req.min_nodes;
  } else if (!required.empty()) {
    nodes = static_cast<uint32_t>(required.size());
  } else if (req.num_tasks) {
    nodes = req.ntasks_per_node ? (req.num_tasks + req.ntasks_per_node - 1) / req.ntasks_per_node
                                : req.num_tasks;
    nodes = std::min(nodes, available);
  } else {
    nodes = available;
  }
  nodes = std::max<uint32_t>(nodes, static_cast<uint32_t>(required.size()));
  if (nodes == 0 || nodes > available)
    return Invalid("Requested node configuration is not available");

  // Task count.
  uint32_t tasks = req.num_tasks         ? req.num_tasks
                   : req.ntasks_per_node ? req.ntasks_per_node * nodes
                                         : nodes;
  if (tasks < nodes) nodes = tasks;  // Slurm: "can't run 1 processes on 2 nodes, setting nnodes"

  // Capacity check (independent of what other steps hold): could this ever fit?
  if (!req.overcommit) {
    std::vector<uint32_t> caps;
    for (uint32_t idx : order) caps.push_back(job.cpus[idx] / cpt);
    std::sort(caps.rbegin(), caps.rend());
    uint64_t best = 0;
    for (uint32_t i = 0; i < nodes; ++i) best += caps[i];
    if (best < tasks) return Invalid("More processors requested than permitted");
  }

  // Pick nodes with room now, required ones first.
  auto free_cpus = [&](uint32_t idx) {
    if (req.overlap) return job.cpus[idx];
    uint32_t used = idx < job.cpus_in_use.size() ? job.cpus_in_use[idx] : 0;
    return used >= job.cpus[idx] ? 0u : job.cpus[idx] - used;
  };
  auto usable = [&](uint32_t idx, uint32_t want_tasks) {
    uint32_t free = free_cpus(idx);
    if (!req.overlap && !req.exact && free < job.cpus[idx]) return false;  // whole node share
    return req.overcommit ? free > 0 || req.overlap : free >= want_tasks * cpt;
  };
  std::vector<uint32_t> share = EvenSpread(tasks, nodes);
  if (req.ntasks_per_node) {
    uint32_t left = tasks;
    for (auto& s : share) {
      s = std::min(req.ntasks_per_node, left);
      left -= s;
    }
    if (left) return Invalid("More processors requested than permitted");
  }
  StepLayout out;
  std::vector<bool> taken(job_nodes, false);
  for (uint32_t i = 0; i < nodes; ++i) {
    bool found = false;
    for (uint32_t idx : order) {
      if (taken[idx] || !usable(idx, 1)) continue;
      taken[idx] = true;
      out.node_index.push_back(idx);
      found = true;
      break;
    }
    if (!found) return Error(ErrorCode::kStepBusy, "Requested nodes are busy");
    if (i < required.size() && out.node_index.back() != required[i])
      return Error(ErrorCode::kStepBusy, "Requested nodes are busy");
  }
  // Tasks: the even share, moved off nodes without the CPUs for it (block fill).
  out.tasks.assign(nodes, 0);
  uint32_t left = tasks;
  if (req.overcommit || req.ntasks_per_node) {
    out.tasks = share;
    left = 0;
  } else {
    for (uint32_t i = 0; i < nodes; ++i) {
      uint32_t room = free_cpus(out.node_index[i]) / cpt;
      out.tasks[i] = std::min(share[i], room);
      left -= out.tasks[i];
    }
    for (uint32_t i = 0; i < nodes && left; ++i) {
      uint32_t room = free_cpus(out.node_index[i]) / cpt - out.tasks[i];
      uint32_t add = std::min(room, left);
      out.tasks[i] += add;
      left -= add;
    }
  }
  if (left) return Error(ErrorCode::kStepBusy, "Requested nodes are busy");
  for (uint32_t i = 0; i < nodes; ++i) {
    if (out.tasks[i] == 0) return Error(ErrorCode::kStepBusy, "Requested nodes are busy");
    uint32_t idx = out.node_index[i];
    uint32_t hold = req.overlap ? 0 : req.exact ? out.tasks[i] * cpt : job.cpus[idx];
    out.cpus.push_back(std::min(hold, job.cpus[idx]));
  }
  out.num_tasks = tasks;
  return out;
}

}  // namespace shoal::sched
