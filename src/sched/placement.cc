#include "sched/placement.h"

#include <algorithm>

namespace shoal::sched {
namespace {

// One name/type the job needs on a node: fixed + per_task * tasks + the share of a per-job
// request (--gpus) given to this node.
struct GresTerm {
  uint64_t fixed = 0;
  uint64_t per_task = 0;
  int job = -1;  // index into JobGres::per_job, -1 = none
  bool gpu = false;
};

// What a node would give the job.
struct NodeUse {
  uint32_t tasks = 0;
  uint32_t cpus = 0;
  uint64_t mem = 0;
};

// Everything about one PlaceJob call that does not depend on the node, computed once; `need`
// and `job_amount` are scratch space reused for every node, so scanning allocates nothing.
struct Plan {
  const JobShape& job;
  bool ignore = false;  // CouldEverRun: every node idle and up
  int alt = -1;         // matching OR alternative being tried
  bool has_constraint = false;
  uint32_t min_cpus = 1;  // fewest CPUs a node must have free to take part
  uint32_t cpt = 1;
  uint32_t min_nodes = 1;
  uint32_t max_nodes = 0;
  uint32_t tasks = 0;
  std::vector<GresTerm> terms;       // parallel to need
  std::vector<GresRequest> need;     // per node need at the tasks/amounts being tried
  std::vector<uint64_t> job_amount;  // per JobGres::per_job entry: share given to this node
  std::vector<uint64_t> job_left;    // per JobGres::per_job entry: still to place

  explicit Plan(const JobShape& j) : job(j) {}
};

int TermFor(Plan& plan, const GresRequest& r) {
  for (size_t i = 0; i < plan.need.size(); ++i)
    if (plan.need[i].name == r.name && plan.need[i].type == r.type) return static_cast<int>(i);
  plan.need.push_back({r.name, r.type, 0});
  plan.terms.push_back({});
  plan.terms.back().gpu = r.name == "gpu";
  return static_cast<int>(plan.need.size() - 1);
}

void BuildGresTerms(Plan& plan) {
  const JobGres& g = plan.job.gres;
  for (const auto& r : g.per_node) plan.terms[TermFor(plan, r)].fixed += r.count;
  for (const auto& r : g.per_task) plan.terms[TermFor(plan, r)].per_task += r.count;
  for (size_t k = 0; k < g.per_job.size(); ++k) {
    plan.terms[TermFor(plan, g.per_job[k])].job = static_cast<int>(k);
    plan.job_left.push_back(g.per_job[k].count);
  }
  plan.job_amount.assign(g.per_job.size(), 0);
}

// Fills plan.need for `tasks` tasks and the current job_amount; returns the GPUs it asks for.
uint64_t SetNeed(Plan& plan, uint32_t tasks) {
  uint64_t gpus = 0;
  for (size_t i = 0; i < plan.terms.size(); ++i) {
    const GresTerm& t = plan.terms[i];
    uint64_t n = t.fixed + t.per_task * tasks + (t.job >= 0 ? plan.job_amount[t.job] : 0);
    plan.need[i].count = n;
    if (t.gpu) gpus += n;
  }
  return gpus;
}

uint32_t ShareCount(const JobShape& job, const NodeView& n) {
  if (n.oversubscribe <= 1 || job.exclusive) return 1;
  return (n.oversubscribe_force || job.oversubscribe) ? n.oversubscribe : 1;
}

uint32_t FreeCpus(const Plan& plan, const NodeView& n) {
  if (plan.ignore) return n.cpus;
  uint64_t slots = static_cast<uint64_t>(n.cpus) * ShareCount(plan.job, n);
  uint64_t free = slots - std::min<uint64_t>(slots, n.alloc_cpus);
  return static_cast<uint32_t>(std::min<uint64_t>(free, n.cpus));  // one job: at most every CPU
}

uint64_t FreeMem(const Plan& plan, const NodeView& n) {
  if (plan.ignore) return n.memory_mb;
  return n.memory_mb - std::min(n.memory_mb, n.alloc_memory_mb);
}

// Whether the node may take part at all, before counting resources.
bool Usable(const Plan& plan, const NodeView& n) {
  const JobShape& job = plan.job;
  // Cheapest tests first: most nodes of a busy cluster fail on the first lines, and a scan of
  // 10,000 nodes pays these for each.
  if (!plan.ignore) {
    if (!n.available || n.exclusive_in_use) return false;
    if (FreeCpus(plan, n) < plan.min_cpus) return false;
  }
  if (plan.has_constraint && !job.constraint.NodeMatches(n.features, plan.alt)) return false;
  if (plan.ignore) return true;
  bool idle = n.alloc_cpus == 0 && n.num_jobs == 0;
  if (job.exclusive && !idle) return false;
  if (n.exclusive_user != kNoUser && n.exclusive_user != job.uid) return false;
  // The view does not say whose jobs run on a node, so --exclusive=user starts only on an idle
  // node or on one its user already holds that way (conservative, never wrong).
  if (job.exclusive_user && n.exclusive_user == kNoUser && !idle) return false;
  if (job.mem_whole_node && n.alloc_memory_mb > 0) return false;
  return true;
}

// Whether `tasks` tasks (and the current per-job GRES amounts) fit on the node; fills `use`.
bool Fits(Plan& plan, const NodeView& n, uint32_t tasks, NodeUse* use) {
  const JobShape& job = plan.job;
  uint64_t gpus = SetNeed(plan, tasks);
  uint64_t cpus = static_cast<uint64_t>(tasks) * plan.cpt;
  if (job.gres.cpus_per_gpu) cpus = std::max<uint64_t>(cpus, gpus * job.gres.cpus_per_gpu);
  if (cpus > FreeCpus(plan, n)) return false;
  if (job.exclusive) cpus = n.cpus;
  uint64_t mem = 0;
  if (job.mem_whole_node) {
    mem = n.memory_mb;
  } else {
    if (job.mem_per_node_mb)
      mem = job.mem_per_node_mb;
    else if (job.mem_per_cpu_mb)
      mem = job.mem_per_cpu_mb * cpus;
    if (job.gres.mem_per_gpu_mb) mem = std::max(mem, job.gres.mem_per_gpu_mb * gpus);
  }
  if (mem > FreeMem(plan, n)) return false;
  if (!plan.need.empty() && !GresFits(n.gres, plan.need, plan.ignore)) return false;
  use->tasks = tasks;
  use->cpus = static_cast<uint32_t>(cpus);
  use->mem = mem;
  return true;
}

// The most tasks, up to `want`, that fit on the node (0 = none), with no per-job GRES yet.
uint32_t ChooseTasks(Plan& plan, const NodeView& n, uint32_t want, NodeUse* use) {
  std::fill(plan.job_amount.begin(), plan.job_amount.end(), 0);
  if (plan.job.ntasks_per_node)
    return Fits(plan, n, plan.job.ntasks_per_node, use) ? use->tasks : 0;
  // CPUs bound the count cheaply; the exact test (memory, GRES) then runs once in the common
  // case, and a binary search (every need grows with the tasks) only when it fails.
  uint64_t per_task = plan.cpt;
  uint64_t gpt = 0;
  for (const auto& t : plan.terms)
    if (t.gpu) gpt += t.per_task;
  if (plan.job.gres.cpus_per_gpu) per_task = std::max(per_task, gpt * plan.job.gres.cpus_per_gpu);
  uint32_t hi = static_cast<uint32_t>(std::min<uint64_t>(want, FreeCpus(plan, n) / per_task));
  if (hi == 0) return 0;
  if (Fits(plan, n, hi, use)) return hi;
  uint32_t lo = 0;  // lo fits (0 trivially), hi does not
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (Fits(plan, n, mid, use))
      lo = mid;
    else
      hi = mid;
  }
  return lo && Fits(plan, n, lo, use) ? lo : 0;
}

// Gives the node as much of each --gpus total as still fits beside `use.tasks` tasks.
// Returns whether it took anything.
bool ChooseJobGres(Plan& plan, const NodeView& n, NodeUse* use) {
  if (plan.job_left.empty()) return false;
  bool took = false;
  for (size_t k = 0; k < plan.job_left.size(); ++k) {
    const GresRequest& r = plan.job.gres.per_job[k];
    uint64_t avail =
        plan.ignore ? GresTotal(n.gres, r.name, r.type) : GresFree(n.gres, r.name, r.type);
    uint64_t hi = std::min(plan.job_left[k], avail);
    uint64_t lo = 0;  // lo fits, hi + 1 does not
    plan.job_amount[k] = hi;
    if (hi && Fits(plan, n, use->tasks, use)) {
      lo = hi;
    } else {
      while (hi > lo) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        plan.job_amount[k] = mid;
        if (Fits(plan, n, use->tasks, use))
          lo = mid;
        else
          hi = mid - 1;
      }
    }
    plan.job_amount[k] = lo;
    took |= lo > 0;
  }
  Fits(plan, n, use->tasks, use);  // refresh `use` and `need` for the final amounts
  return took;
}

bool AllJobGresPlaced(const Plan& plan) {
  return std::all_of(plan.job_left.begin(), plan.job_left.end(), [](uint64_t x) { return x == 0; });
}

// Whether some --gpus total would still be owed after this node takes job_amount.
bool GresOwedAfter(const Plan& plan) {
  for (size_t k = 0; k < plan.job_left.size(); ++k)
    if (plan.job_left[k] > plan.job_amount[k]) return true;
  return false;
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Sorts a placement by node index, keeping the parallel vectors aligned.
Placement SortedByNode(Placement p) {
  std::vector<size_t> perm(p.nodes.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return p.nodes[a] < p.nodes[b]; });
  Placement sorted;
  sorted.mem_per_node_mb = p.mem_per_node_mb;
  for (size_t i : perm) {
    sorted.nodes.push_back(p.nodes[i]);
    sorted.cpus.push_back(p.cpus[i]);
    sorted.tasks.push_back(p.tasks[i]);
    sorted.mem_mb.push_back(p.mem_mb[i]);
    if (!p.gres.empty()) sorted.gres.push_back(std::move(p.gres[i]));
  }
  return sorted;
}

// Calls fn(index, forced) for the forced nodes, then for `allowed` minus the forced ones, until
// fn returns false.
template <typename Fn>
void ForEachCandidate(const std::vector<int>& forced, const std::vector<int>& allowed, Fn fn) {
  for (int idx : forced)
    if (!fn(idx, true)) return;
  // Forced lists are short (-w, counts); a sorted copy keeps long ones cheap to look up.
  std::vector<int> sorted;
  if (forced.size() > 16) {
    sorted = forced;
    std::sort(sorted.begin(), sorted.end());
  }
  for (int idx : allowed) {
    bool dup = forced.size() > 16 ? std::binary_search(sorted.begin(), sorted.end(), idx)
                                  : Contains(forced, idx);
    if (!dup && !fn(idx, false)) return;
  }
}

// Picks nodes for the constraint's counts ("[a*2&b*1]"): for each term, the first `count`
// usable candidates matching it that can take a task, distinct across terms. Appends them to
// `forced`; false when some term cannot be met.
bool PickCountedNodes(Plan& plan, const std::vector<NodeView>& nodes, std::vector<int>* forced) {
  const std::vector<int> required = *forced;
  std::vector<int> claimed;  // nodes already counted for a term
  for (const auto& term : plan.job.constraint.counts) {
    uint32_t got = 0;
    // Nodes named by -w come first, so they count towards the terms they match.
    ForEachCandidate(required, plan.job.allowed, [&](int idx, bool) {
      const NodeView& n = nodes[idx];
      if (Contains(claimed, idx) || !term.expr.Eval(n.features)) return true;
      NodeUse use;
      if (!Usable(plan, n) || !ChooseTasks(plan, n, 1, &use)) return true;
      claimed.push_back(idx);
      if (!Contains(*forced, idx)) forced->push_back(idx);
      return ++got < term.count;
    });
    if (got < term.count) return false;
  }
  return true;
}

std::optional<Placement> PlaceWith(Plan& plan, const std::vector<NodeView>& nodes) {
  const JobShape& job = plan.job;
  std::vector<int> counted;
  const std::vector<int>* forced = &job.required;
  if (!job.constraint.counts.empty()) {
    counted = job.required;
    if (!PickCountedNodes(plan, nodes, &counted)) return std::nullopt;
    forced = &counted;
  }
  uint32_t max_nodes = plan.max_nodes;
  if (job.max_nodes == 0 && job.min_nodes == 0)
    max_nodes = std::max<uint32_t>(max_nodes, static_cast<uint32_t>(forced->size()));
  for (size_t k = 0; k < plan.job_left.size(); ++k) plan.job_left[k] = job.gres.per_job[k].count;

  Placement p;
  uint32_t placed = 0;
  size_t seen_forced = 0;
  bool failed = false;
  ForEachCandidate(*forced, job.allowed, [&](int idx, bool is_forced) {
    if (is_forced) ++seen_forced;
    bool forced_left = seen_forced < forced->size();
    const NodeView& n = nodes[idx];
    // Spread the tasks evenly over the nodes still needed to reach min_nodes, the first ones
    // taking the remainder (Slurm: -N2 -n3 is 2,1 and -N2 -n4 is 2,2); without -N, fill.
    uint32_t nodes_left = plan.min_nodes > p.nodes.size()
                              ? plan.min_nodes - static_cast<uint32_t>(p.nodes.size())
                              : 1;
    uint32_t remaining = plan.tasks > placed ? plan.tasks - placed : 0;
    uint32_t want = std::max<uint32_t>((remaining + nodes_left - 1) / nodes_left, 1);
    NodeUse use;
    bool fit = Usable(plan, n) && ChooseTasks(plan, n, want, &use) > 0;
    bool took_gres = fit && ChooseJobGres(plan, n, &use);
    // While --gpus is owed, a node without any to give is taken only when the tasks or the
    // node count need it (without -n, leaving room for at least one node that has some).
    if (fit && !is_forced && !took_gres && !AllJobGresPlaced(plan)) {
      bool needed = (job.num_tasks || job.ntasks_per_node) ? placed < plan.tasks
                                                           : p.nodes.size() + 1 < plan.min_nodes;
      if (!needed) fit = false;
    }
    // The last node the count allows must finish the job; one that cannot is passed over for
    // a later, larger one (otherwise a small node early in the order dooms the placement).
    if (fit && !is_forced && p.nodes.size() + 1 >= max_nodes && !forced_left &&
        (placed + use.tasks < plan.tasks || GresOwedAfter(plan)))
      fit = false;
    if (!fit) {
      failed = is_forced;
      return !failed;
    }
    std::vector<GresAlloc> devices;
    if (!plan.need.empty() && !plan.ignore && !PickGres(n.gres, plan.need, &devices)) {
      failed = is_forced;
      return !failed;
    }
    for (size_t k = 0; k < plan.job_left.size(); ++k) plan.job_left[k] -= plan.job_amount[k];
    p.nodes.push_back(idx);
    p.cpus.push_back(use.cpus);
    p.tasks.push_back(use.tasks);
    p.mem_mb.push_back(use.mem);
    p.mem_per_node_mb = std::max(p.mem_per_node_mb, use.mem);
    if (!plan.need.empty()) p.gres.push_back(std::move(devices));
    placed += use.tasks;
    bool enough_nodes = p.nodes.size() >= plan.min_nodes && !forced_left;
    if (placed >= plan.tasks && enough_nodes && AllJobGresPlaced(plan)) return false;
    if (p.nodes.size() >= max_nodes && !forced_left) return false;
    return true;
  });
  if (failed || placed < plan.tasks || p.nodes.size() < plan.min_nodes ||
      p.nodes.size() > max_nodes || !AllJobGresPlaced(plan))
    return std::nullopt;
  return SortedByNode(std::move(p));
}

std::optional<Placement> Place(const JobShape& job, const std::vector<NodeView>& nodes,
                               bool ignore_allocations) {
  Plan plan(job);
  plan.ignore = ignore_allocations;
  plan.cpt = std::max<uint32_t>(job.cpus_per_task, 1);
  plan.min_nodes = std::max<uint32_t>({job.min_nodes, 1, job.constraint.counted_nodes()});
  uint32_t max_nodes = job.max_nodes ? job.max_nodes : (job.min_nodes ? job.min_nodes : 0);
  uint32_t tasks = job.num_tasks;
  if (!tasks) tasks = job.ntasks_per_node ? job.ntasks_per_node * plan.min_nodes : plan.min_nodes;
  if (!max_nodes) {
    max_nodes = std::max(tasks, plan.min_nodes);  // -n alone may spread over nodes
    // --gpus without -n may need more nodes than tasks: each extra node carries one task.
    if (!job.num_tasks)
      for (const auto& r : job.gres.per_job)
        max_nodes = static_cast<uint32_t>(std::max<uint64_t>(max_nodes, r.count));
  }
  if (job.ntasks_per_node && !job.num_tasks) max_nodes = plan.min_nodes;
  plan.max_nodes = max_nodes;
  plan.tasks = tasks;
  plan.has_constraint = !job.constraint.empty();
  plan.min_cpus = plan.cpt * std::max<uint32_t>(job.ntasks_per_node, 1);
  BuildGresTerms(plan);

  if (job.constraint.one_of.empty()) return PlaceWith(plan, nodes);
  for (size_t alt = 0; alt < job.constraint.one_of.size(); ++alt) {
    plan.alt = static_cast<int>(alt);
    if (auto p = PlaceWith(plan, nodes)) return p;
  }
  return std::nullopt;
}

uint64_t MemAt(const Placement& p, size_t k) {
  return k < p.mem_mb.size() ? p.mem_mb[k] : p.mem_per_node_mb;
}

}  // namespace

uint32_t TopologyCpus(const NodeView& n) {
  if (n.sockets && n.cores_per_socket && n.threads_per_core)
    return static_cast<uint32_t>(n.sockets) * n.cores_per_socket * n.threads_per_core;
  return n.cpus;
}

std::optional<Placement> PlaceJob(const JobShape& job, const std::vector<NodeView>& nodes) {
  return Place(job, nodes, false);
}

void Allocate(std::vector<NodeView>& nodes, const JobShape& job, const Placement& p) {
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    NodeView& v = nodes[p.nodes[k]];
    v.alloc_cpus += p.cpus[k];
    v.alloc_memory_mb += MemAt(p, k);
    if (job.exclusive) v.exclusive_in_use = true;
    if (job.exclusive_user) {
      v.exclusive_user = job.uid;
      ++v.exclusive_user_jobs;
    }
    ++v.num_jobs;
    if (k < p.gres.size()) BookGres(v.gres, p.gres[k]);
  }
}

void Release(std::vector<NodeView>& nodes, const JobShape& job, const Placement& p) {
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    NodeView& v = nodes[p.nodes[k]];
    v.alloc_cpus -= std::min(v.alloc_cpus, p.cpus[k]);
    v.alloc_memory_mb -= std::min(v.alloc_memory_mb, MemAt(p, k));
    if (job.exclusive) v.exclusive_in_use = false;
    if (job.exclusive_user && v.exclusive_user_jobs > 0 && --v.exclusive_user_jobs == 0)
      v.exclusive_user = kNoUser;
    if (v.num_jobs > 0) --v.num_jobs;
    if (k < p.gres.size()) ReleaseGres(v.gres, p.gres[k]);
  }
}

bool CouldEverRun(const JobShape& job, const std::vector<NodeView>& nodes) {
  return Place(job, nodes, true).has_value();
}

}  // namespace shoal::sched
