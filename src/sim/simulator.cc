#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>
#include <random>
#include <sstream>
#include <unordered_map>

namespace shoal::sim {
namespace {

constexpr double kBoundedSlowdownTau = 10.0;

int64_t Pick(std::mt19937_64& rng, std::initializer_list<int64_t> values) {
  std::uniform_int_distribution<size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

// One job's shape and durations (its submit time is set afterwards).
SimJob DrawJob(std::mt19937_64& rng, const SyntheticParams& p) {
  std::uniform_real_distribution<double> u(0, 1);
  SimJob j;
  double kind = u(rng);
  double used;        // fraction of the limit actually used: users overestimate a lot
  if (kind < 0.75) {  // small and short: a few CPUs on one node
    j.tasks = static_cast<uint32_t>(Pick(rng, {1, 1, 1, 2, 4, 8}));
    j.nodes = 1;
    j.limit = 60 * Pick(rng, {10, 30, 60, 60, 120});
    used = 0.05 + 0.55 * u(rng);
  } else if (kind < 0.95) {  // medium: a few whole nodes
    j.nodes = static_cast<uint32_t>(Pick(rng, {1, 2, 2, 4, 8}));
    j.whole_nodes = true;
    j.limit = 3600 * Pick(rng, {1, 2, 4});
    used = 0.1 + 0.7 * u(rng);
  } else {  // wide and long
    uint32_t hi = std::max<uint32_t>(p.nodes / 2, 2);
    std::uniform_int_distribution<uint32_t> w(std::min<uint32_t>(16, hi), hi);
    j.nodes = w(rng);
    j.whole_nodes = true;
    j.limit = 3600 * Pick(rng, {4, 8, 12});
    used = 0.2 + 0.7 * u(rng);
  }
  j.nodes = std::min(j.nodes, p.nodes);
  if (j.whole_nodes) j.tasks = j.nodes * p.cpus_per_node;
  j.tasks = std::min(j.tasks, p.cpus_per_node);
  if (j.whole_nodes) j.tasks = j.nodes * p.cpus_per_node;
  j.runtime = std::max<int64_t>(5, static_cast<int64_t>(j.limit * used));
  return j;
}

sched::JobShape ShapeOf(const SimJob& j, uint32_t cpus_per_node) {
  sched::JobShape s;
  s.num_tasks = j.tasks;
  if (j.nodes) s.min_nodes = s.max_nodes = j.nodes;
  if (j.whole_nodes) s.ntasks_per_node = cpus_per_node;
  return s;
}

uint64_t ShapeKey(const SimJob& j) {
  return (uint64_t{j.tasks} << 33) | (uint64_t{j.nodes} << 1) | (j.whole_nodes ? 1 : 0) |
         (1ull << 63);
}

struct Running {
  size_t job = 0;
  sched::JobShape shape;
  sched::Placement placement;
  int64_t end_actual = 0;
  int64_t end_limit = 0;
};

class Sim {
 public:
  Sim(const Workload& w, const SimConfig& cfg) : w_(w), cfg_(cfg) {
    views_.resize(cfg.nodes);
    for (auto& v : views_) {
      v.cpus = cfg.cpus_per_node;
      v.memory_mb = 1;
      v.available = true;
    }
    all_nodes_.resize(cfg.nodes);
    for (uint32_t i = 0; i < cfg.nodes; ++i) all_nodes_[i] = static_cast<int>(i);
    shapes_.reserve(w.jobs.size());
    for (const SimJob& j : w.jobs) shapes_.push_back(ShapeOf(j, cfg.cpus_per_node));
    report_.policy = cfg.policy;
    report_.jobs.resize(w.jobs.size());
    for (size_t k = 0; k < w.jobs.size(); ++k) {
      report_.jobs[k].id = w.jobs[k].id;
      report_.jobs[k].submit = w.jobs[k].submit;
    }
  }

  SimReport Run();

 private:
  void Cycle(int64_t now);
  std::vector<size_t> Ordered(int64_t now) const;

  const Workload& w_;
  const SimConfig& cfg_;
  std::vector<sched::NodeView> views_;
  std::vector<int> all_nodes_;
  std::vector<sched::JobShape> shapes_;
  std::vector<size_t> pending_;  // indexes into w_.jobs
  std::vector<Running> running_;
  SimReport report_;
  double cycle_total_s_ = 0;
  std::vector<sched::PendingDecision> previous_;  // the last cycle's plan
  int64_t wake_ = INT64_MAX;                      // the earliest planned start, if any
};

std::vector<size_t> Sim::Ordered(int64_t now) const {
  std::vector<size_t> order = pending_;
  if (cfg_.policy == Policy::kFifo) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return w_.jobs[a].submit != w_.jobs[b].submit ? w_.jobs[a].submit < w_.jobs[b].submit
                                                    : w_.jobs[a].id < w_.jobs[b].id;
    });
    return order;
  }
  sched::PriorityContext ctx;
  ctx.now = now;
  ctx.total_nodes = cfg_.nodes;
  ctx.total_cpus = uint64_t{cfg_.nodes} * cfg_.cpus_per_node;
  sched::FlatFairShare fs;
  std::vector<std::pair<sched::SchedOrderKey, size_t>> keyed;
  keyed.reserve(order.size());
  for (size_t k : order) {
    const SimJob& j = w_.jobs[k];
    sched::PriorityJob pj;
    pj.job_id = j.id;
    pj.eligible_time = j.submit;
    pj.nodes = std::max<uint32_t>(j.nodes, 1);
    pj.cpus = j.tasks;
    uint32_t prio = sched::MultifactorPriority(cfg_.priority, ctx, pj, fs).priority;
    keyed.push_back({{1, prio, j.id}, k});
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return sched::SchedulesBefore(a.first, b.first); });
  for (size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
  return order;
}

void Sim::Cycle(int64_t now) {
  sched::PlanInput in;
  in.now = now;
  in.nodes = views_;
  in.partition_nodes = {all_nodes_};
  in.params = cfg_.backfill;
  in.params.enabled = cfg_.policy == Policy::kBackfill;
  for (const Running& r : running_)
    in.running.push_back({w_.jobs[r.job].id, r.shape, r.placement, r.end_limit});
  std::vector<size_t> order = Ordered(now);
  in.pending.reserve(order.size());
  for (size_t k : order) {
    const SimJob& j = w_.jobs[k];
    in.pending.push_back({j.id, shapes_[k], j.limit, 0, ShapeKey(j)});
  }
  if (cfg_.keep_reservations)
    in.previous = std::make_shared<const sched::PreviousPlan>(std::move(previous_));
  sched::CyclePlan plan = sched::PlanCycle(in);
  ++report_.cycles;
  cycle_total_s_ += plan.stats.seconds;
  report_.max_cycle_s = std::max(report_.max_cycle_s, plan.stats.seconds);
  if (cfg_.on_cycle) cfg_.on_cycle(in, plan);

  // SWF job numbers need not be dense, so plans are mapped back to jobs by id.
  std::unordered_map<uint32_t, size_t> by_id;
  for (size_t k : order) by_id[w_.jobs[k].id] = k;
  for (const sched::PendingDecision& d : plan.pending) {
    JobOutcome& o = report_.jobs[by_id[d.job_id]];
    if (d.start_time && !o.first_reservation) o.first_reservation = d.start_time;
  }
  for (const sched::JobStart& s : plan.starts) {
    size_t k = by_id[s.job_id];
    sched::Allocate(views_, shapes_[k], s.placement);
    running_.push_back(
        {k, shapes_[k], s.placement, now + w_.jobs[k].runtime, now + w_.jobs[k].limit});
    report_.jobs[k].start = now;
    pending_.erase(std::find(pending_.begin(), pending_.end(), k));
  }
  wake_ = INT64_MAX;
  if (cfg_.keep_reservations) {
    for (const sched::PendingDecision& d : plan.pending)
      if (d.start_time && *d.start_time > now) wake_ = std::min(wake_, *d.start_time);
    previous_ = std::move(plan.pending);
  }
}

SimReport Sim::Run() {
  size_t next = 0;
  const size_t n = w_.jobs.size();
  int64_t first_submit = n ? w_.jobs.front().submit : 0;
  int64_t last_end = first_submit;
  double used_cpu_s = 0, wait_sum = 0, bsld_sum = 0;
  while (next < n || !running_.empty()) {
    int64_t now = INT64_MAX;
    if (next < n) now = w_.jobs[next].submit;
    for (const Running& r : running_) now = std::min(now, r.end_actual);
    if (!pending_.empty()) now = std::min(now, wake_);
    // Completions first, then arrivals, then one scheduling cycle for all of them.
    for (size_t i = 0; i < running_.size();) {
      if (running_[i].end_actual > now) {
        ++i;
        continue;
      }
      const Running& r = running_[i];
      sched::Release(views_, r.shape, r.placement);
      JobOutcome& o = report_.jobs[r.job];
      o.end = now;
      const SimJob& j = w_.jobs[r.job];
      double wait = static_cast<double>(o.start - o.submit);
      double run = static_cast<double>(o.end - o.start);
      used_cpu_s += run * j.tasks;
      wait_sum += wait;
      bsld_sum += std::max(1.0, (wait + run) / std::max(run, kBoundedSlowdownTau));
      ++report_.jobs_completed;
      last_end = std::max(last_end, now);
      running_[i] = std::move(running_.back());
      running_.pop_back();
    }
    for (; next < n && w_.jobs[next].submit <= now; ++next) pending_.push_back(next);
    if (!pending_.empty()) Cycle(now);
    if (running_.empty() && next >= n) break;  // what is left can never run
  }
  double capacity = double(cfg_.nodes) * cfg_.cpus_per_node * double(last_end - first_submit);
  report_.makespan_s = last_end - first_submit;
  report_.utilization = capacity > 0 ? used_cpu_s / capacity : 0;
  if (report_.jobs_completed) {
    report_.mean_wait_s = wait_sum / report_.jobs_completed;
    report_.mean_bounded_slowdown = bsld_sum / report_.jobs_completed;
  }
  if (report_.cycles) report_.mean_cycle_s = cycle_total_s_ / double(report_.cycles);
  return std::move(report_);
}

}  // namespace

sched::PriorityConfig SimConfig::DefaultPriority() {
  sched::PriorityConfig p;
  p.type = sched::PriorityType::kMultifactor;
  p.max_age_s = 86400;
  p.weight_age = 1000;
  p.weight_job_size = 1000;  // Slurm's default favours large jobs
  return p;
}

Workload Synthetic(const SyntheticParams& p) {
  std::mt19937_64 rng(p.seed);
  Workload w;
  w.jobs.reserve(p.jobs);
  double work = 0;
  for (uint32_t i = 0; i < p.jobs; ++i) {
    w.jobs.push_back(DrawJob(rng, p));
    w.jobs.back().id = i + 1;
    work += double(w.jobs.back().runtime) * w.jobs.back().tasks;
  }
  // Arrivals: exponential gaps sized for the offered load, and now and then a burst of jobs
  // submitted within seconds of each other (a user's script or an array).
  double capacity = double(p.nodes) * p.cpus_per_node;
  double mean_gap = p.jobs ? work / capacity / std::max(p.load, 0.01) / p.jobs : 1;
  std::exponential_distribution<double> gap(1.0 / std::max(mean_gap, 1e-3));
  std::uniform_real_distribution<double> u(0, 1);
  double t = 0;
  uint32_t burst = 0;
  for (SimJob& j : w.jobs) {
    if (burst > 0) {
      --burst;
      t += u(rng) * 2;
    } else {
      t += gap(rng);
      if (u(rng) < 0.05) burst = 5 + static_cast<uint32_t>(u(rng) * 25), t += gap(rng) * burst;
    }
    j.submit = static_cast<int64_t>(t);
  }
  return w;
}

Result<Workload> ReadSwf(std::string_view text, uint32_t nodes, uint32_t cpus_per_node) {
  Workload w;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string line(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == ';') continue;
    std::istringstream in(line);
    std::vector<double> f;
    double v;
    while (in >> v) f.push_back(v);
    if (f.size() < 9)
      return InvalidArgument("SWF line " + std::to_string(line_no) + ": expected 18 fields");
    double run = f[3], procs = f[7] > 0 ? f[7] : f[4], req_time = f[8];
    if (run < 0 || procs <= 0) continue;  // cancelled before it ran, or unknown size
    SimJob j;
    j.id = static_cast<uint32_t>(f[0]);
    j.submit = static_cast<int64_t>(f[1]);
    j.runtime = std::max<int64_t>(1, static_cast<int64_t>(run));
    j.limit =
        req_time > 0 ? std::max<int64_t>(static_cast<int64_t>(req_time), j.runtime) : j.runtime;
    uint64_t cap = uint64_t{nodes} * cpus_per_node;
    j.tasks = static_cast<uint32_t>(std::min<uint64_t>(static_cast<uint64_t>(procs), cap));
    j.nodes = (j.tasks + cpus_per_node - 1) / cpus_per_node;
    w.jobs.push_back(j);
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.submit < b.submit; });
  return w;
}

Result<Policy> ParsePolicy(std::string_view name) {
  if (name == "fifo") return Policy::kFifo;
  if (name == "priority") return Policy::kPriority;
  if (name == "backfill") return Policy::kBackfill;
  return InvalidArgument("unknown policy: " + std::string(name));
}

std::string_view PolicyName(Policy p) {
  switch (p) {
    case Policy::kFifo:
      return "fifo";
    case Policy::kPriority:
      return "priority";
    case Policy::kBackfill:
      return "backfill";
  }
  return "?";
}

SimReport Simulate(const Workload& w, const SimConfig& cfg) { return Sim(w, cfg).Run(); }

std::string FormatReports(const std::vector<SimReport>& reports) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-9s %9s %7s %12s %10s %8s %14s %13s\n", "POLICY", "COMPLETED",
                "UTIL%", "MEAN_WAIT_S", "MEAN_BSLD", "CYCLES", "CYCLE_MEAN_MS", "CYCLE_MAX_MS");
  out += buf;
  for (const SimReport& r : reports) {
    std::snprintf(buf, sizeof buf, "%-9s %9u %7.2f %12.1f %10.2f %8llu %14.3f %13.3f\n",
                  std::string(PolicyName(r.policy)).c_str(), r.jobs_completed, r.utilization * 100,
                  r.mean_wait_s, r.mean_bounded_slowdown, static_cast<unsigned long long>(r.cycles),
                  r.mean_cycle_s * 1e3, r.max_cycle_s * 1e3);
    out += buf;
  }
  return out;
}

}  // namespace shoal::sim
