// HTTP on the controller port: health probes (always on) and, with
// MetricsType=metrics/openmetrics, Slurm 25.11's OpenMetrics endpoints plus Shoal's own series.
// Everything runs on the event loop; one pass over jobs, nodes or partitions per endpoint, and a
// text is reused for a second so many scrapers cost one pass.
#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>

#include "common/states.h"
#include "ctld/controller.h"
#include "ctld/metrics_access.h"

namespace shoal::ctld {
namespace {

constexpr int64_t kMetricsCacheMs = 1000;
constexpr uint64_t kMiB = 1024 * 1024;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

HttpResponse TextAnswer(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

// Counts of jobs by state, as Slurm's jobs_stats_t keeps them (a pending job that is held is
// both pending and held; a COMPLETING job is counted under its state and as completing).
struct JobCounts {
  uint64_t jobs = 0, pending = 0, running = 0, suspended = 0, completing = 0, configuring = 0,
           hold = 0, completed = 0, cancelled = 0, failed = 0, timeout = 0, node_failed = 0,
           preempted = 0, bootfail = 0, deadline = 0, oom = 0, finished = 0, started = 0,
           cpus_alloc = 0, memory_alloc = 0, nodes_alloc = 0;
  uint32_t max_job_nodes = 0, min_job_nodes = 0, max_job_nodes_nohold = 0, min_job_nodes_nohold = 0;

  void Add(const pb::JobRecord& job) {
    ++jobs;
    switch (job.state()) {
      case pb::JOB_PENDING: {
        ++pending;
        if (job.held()) ++hold;
        uint32_t max_n = job.spec().max_nodes() ? job.spec().max_nodes() : job.num_nodes();
        uint32_t min_n = job.spec().min_nodes() ? job.spec().min_nodes() : job.num_nodes();
        max_job_nodes = std::max(max_job_nodes, max_n);
        min_job_nodes = std::max(min_job_nodes, min_n);
        if (!job.held()) {
          max_job_nodes_nohold = std::max(max_job_nodes_nohold, max_n);
          min_job_nodes_nohold = std::max(min_job_nodes_nohold, min_n);
        }
        break;
      }
      case pb::JOB_RUNNING:
        if (!job.completing()) ++running;
        if (job.prolog_pending_nodes_size() > 0) ++configuring;
        break;
      case pb::JOB_SUSPENDED:
        ++suspended;
        break;
      case pb::JOB_COMPLETED:
        ++completed;
        break;
      case pb::JOB_CANCELLED:
        ++cancelled;
        break;
      case pb::JOB_FAILED:
        ++failed;
        break;
      case pb::JOB_TIMEOUT:
        ++timeout;
        break;
      case pb::JOB_NODE_FAIL:
        ++node_failed;
        break;
      case pb::JOB_PREEMPTED:
        ++preempted;
        break;
      case pb::JOB_BOOT_FAIL:
        ++bootfail;
        break;
      case pb::JOB_DEADLINE:
        ++deadline;
        break;
      case pb::JOB_OUT_OF_MEMORY:
        ++oom;
        break;
      default:
        break;
    }
    if (job.completing()) ++completing;
    if (job.state() != pb::JOB_PENDING) ++started;
    if (IsFinished(job.state())) ++finished;
    if (HoldsNodes(job)) {
      cpus_alloc += job.num_cpus();
      nodes_alloc += static_cast<uint64_t>(job.nodes_size());
      uint64_t mem_mb = 0;
      for (uint64_t m : job.mem_alloc_mb()) mem_mb += m;
      if (job.mem_alloc_mb_size() == 0) mem_mb = job.mem_per_node_mb() * job.nodes_size();
      memory_alloc += mem_mb * kMiB;
    }
  }

  // Slurm's series names; `prefix` is "slurm_" or e.g. "slurm_partition_", labels as given.
  void Write(OpenMetricsWriter& w, const std::string& prefix, const MetricLabels& labels,
             bool with_totals_name) const {
    auto g = [&](const char* suffix, const char* help, uint64_t v) {
      std::string name = prefix + suffix;
      w.Family(name, "gauge", help);
      w.Sample(name, labels, v);
    };
    g("jobs_bootfail", "Number of jobs in BootFail state", bootfail);
    g("jobs_cancelled", "Number of jobs in Cancelled state", cancelled);
    g("jobs_completed", "Number of jobs in Completed state", completed);
    g("jobs_completing", "Number of jobs in Completing state", completing);
    g("jobs_configuring", "Number of jobs in Configuring state", configuring);
    g("jobs_cpus_alloc", "Total number of Cpus allocated by jobs", cpus_alloc);
    g("jobs_deadline", "Number of jobs in Deadline state", deadline);
    g("jobs_failed", "Number of jobs in Failed state", failed);
    g("jobs_finished", "Number of finished jobs", finished);
    g("jobs_hold", "Number of jobs in Hold state", hold);
    if (with_totals_name) g("jobs", "Total number of jobs", jobs);
    g("jobs_memory_alloc", "Total memory bytes allocated by jobs", memory_alloc);
    g("jobs_node_failed", "Number of jobs in Node Failed state", node_failed);
    g("jobs_nodes_alloc", "Total number of nodes allocated by jobs", nodes_alloc);
    g("jobs_outofmemory", "Number of jobs in Out of Memory state", oom);
    g("jobs_pending", "Number of jobs in Pending state", pending);
    g("jobs_preempted", "Number of jobs in Preempted state", preempted);
    g("jobs_running", "Number of jobs in Running state", running);
    g("jobs_started", "Number of started jobs", started);
    g("jobs_suspended", "Number of jobs in Suspended state", suspended);
    g("jobs_timeout", "Number of jobs in Timeout state", timeout);
  }
};

// Node counts by Slurm's base state and flags (one node counts once per flag it carries).
struct NodeCounts {
  uint64_t nodes = 0, alloc = 0, idle = 0, mixed = 0, down = 0, future = 0, unknown = 0, drain = 0,
           drained = 0, draining = 0, noresp = 0, maint = 0, resv = 0, cloud = 0, dyn_normal = 0,
           reboot_requested = 0, reboot_issued = 0, powered_down = 0, powering_up = 0,
           powering_down = 0, power_down = 0, cpus = 0, cpus_alloc = 0, cpus_idle = 0,
           mem_total = 0, mem_alloc = 0, mem_free = 0;

  void Add(const pb::NodeRecord& r) {
    ++nodes;
    bool busy = false;
    switch (r.base_state()) {
      case pb::NODE_IDLE:
        ++idle;
        break;
      case pb::NODE_ALLOCATED:
        ++alloc;
        busy = true;
        break;
      case pb::NODE_MIXED:
        ++mixed;
        busy = true;
        break;
      case pb::NODE_DOWN:
        ++down;
        break;
      case pb::NODE_FUTURE:
        ++future;
        break;
      default:
        ++unknown;
        break;
    }
    if (r.drain()) {
      ++drain;
      if (busy)
        ++draining;
      else
        ++drained;
    }
    if (!r.responding()) ++noresp;
    if (r.maint()) ++maint;
    if (r.reserved()) ++resv;
    if (r.cloud()) ++cloud;
    if (r.dynamic()) ++dyn_normal;
    if (r.reboot_requested()) ++reboot_requested;
    if (r.reboot_issued()) ++reboot_issued;
    if (r.powered_down()) ++powered_down;
    if (r.powering_up()) ++powering_up;
    if (r.powering_down()) ++powering_down;
    if (r.power_down_requested()) ++power_down;
    cpus += r.cpus();
    cpus_alloc += r.alloc_cpus();
    cpus_idle += r.cpus() > r.alloc_cpus() ? r.cpus() - r.alloc_cpus() : 0;
    mem_total += r.real_memory_mb() * kMiB;
    mem_alloc += r.alloc_memory_mb() * kMiB;
    mem_free += r.free_memory_mb() * kMiB;
  }
};

void NodeSeries(OpenMetricsWriter& w, const std::vector<pb::NodeRecord>& nodes, const char* name,
                const char* help, uint64_t (*value)(const pb::NodeRecord&)) {
  w.Family(name, "gauge", help);
  for (const auto& r : nodes) w.Sample(name, {{"node", r.name()}}, value(r));
}

}  // namespace

HttpResponse Controller::HandleHttp(const HttpRequest& req) {
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  bool ready = serving_ && !journal_failed_ && !shutting_down_;
  if (path == "/livez") return TextAnswer(200, "ok\n");
  if (path == "/readyz") return ready ? TextAnswer(200, "ok\n") : TextAnswer(503, "not ready\n");
  if (path == "/healthz") {
    if (!ready) return TextAnswer(503, "unhealthy: controller cannot save state\n");
    return TextAnswer(200, "ok\n");
  }
  if (path != "/metrics" && path.rfind("/metrics/", 0) != 0) return HttpError(404);
  // Slurm serves metrics only with a metrics plugin configured; who may read them:
  // metrics_access.h (PrivateData, MetricsParameters, MetricsAuthUsers, auth/jwt tokens).
  if (conf_.Get("MetricsType") != "metrics/openmetrics") return HttpError(404);
  if (int denied = CheckMetricsAccess(MetricsAccessPolicyFrom(conf_), req, jwt_.key, Now())) {
    HttpResponse r = HttpError(denied);
    if (denied == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }
  static constexpr std::string_view kPaths[] = {"/metrics",           "/metrics/jobs",
                                                "/metrics/nodes",     "/metrics/partitions",
                                                "/metrics/scheduler", "/metrics/jobs-users-accts",
                                                "/metrics/shoal"};
  bool known = false;
  for (auto p : kPaths) known = known || p == path;
  if (!known) return HttpError(404);
  HttpResponse r;
  r.content_type = kOpenMetricsContentType;
  r.body = MetricsText(path);
  return r;
}

std::string Controller::MetricsText(const std::string& path) {
  int64_t now_ms = SteadyMs();
  MetricsCache& cached = metrics_cache_[path];
  if (!cached.body.empty() && now_ms - cached.at_ms < kMetricsCacheMs) return cached.body;
  OpenMetricsWriter w;
  bool all = path == "/metrics";
  if (all || path == "/metrics/jobs") WriteJobMetrics(w);
  if (all || path == "/metrics/nodes") WriteNodeMetrics(w);
  if (all || path == "/metrics/partitions") WritePartitionMetrics(w);
  if (all || path == "/metrics/scheduler") WriteSchedulerMetrics(w);
  if (all || path == "/metrics/jobs-users-accts") WriteUserAccountMetrics(w);
  if (all || path == "/metrics/shoal") WriteShoalMetrics(w);
  cached.body = w.Finish();
  cached.at_ms = now_ms;
  return cached.body;
}

void Controller::WriteJobMetrics(OpenMetricsWriter& w) {
  JobCounts c;
  ForEachJob([&](uint32_t, const pb::JobRecord& job) { c.Add(job); });
  c.Write(w, "slurm_", {}, true);
}

void Controller::WriteNodeMetrics(OpenMetricsWriter& w) {
  std::vector<pb::NodeRecord> views;
  views.reserve(nodes_.size());
  NodeCounts c;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].deleted) continue;  // scontrol delete's tombstone
    views.push_back(NodeView(nodes_[i]));
    views.back().set_maint(NodeInMaint(static_cast<int>(i)));
    views.back().set_reserved(NodeReserved(static_cast<int>(i)));
    c.Add(views.back());
  }
  NodeSeries(w, views, "slurm_node_cpus", "Total number of cpus in the node",
             [](const pb::NodeRecord& r) -> uint64_t { return r.cpus(); });
  NodeSeries(w, views, "slurm_node_cpus_alloc", "Allocated cpus in the node",
             [](const pb::NodeRecord& r) -> uint64_t { return r.alloc_cpus(); });
  NodeSeries(w, views, "slurm_node_cpus_effective",
             "CPUs allocatable to jobs not reserved for system usage",
             [](const pb::NodeRecord& r) -> uint64_t { return r.cpus(); });
  NodeSeries(w, views, "slurm_node_cpus_idle", "Idle cpus in the node",
             [](const pb::NodeRecord& r) -> uint64_t {
               return r.cpus() > r.alloc_cpus() ? r.cpus() - r.alloc_cpus() : 0;
             });
  NodeSeries(w, views, "slurm_node_memory_alloc_bytes", "Bytes allocated to jobs in the node",
             [](const pb::NodeRecord& r) -> uint64_t { return r.alloc_memory_mb() * kMiB; });
  NodeSeries(w, views, "slurm_node_memory_effective_bytes",
             "Memory allocatable to jobs not reserved for system usage",
             [](const pb::NodeRecord& r) -> uint64_t { return r.real_memory_mb() * kMiB; });
  NodeSeries(w, views, "slurm_node_memory_free_bytes", "Free memory in bytes of the node",
             [](const pb::NodeRecord& r) -> uint64_t { return r.free_memory_mb() * kMiB; });
  NodeSeries(w, views, "slurm_node_memory_bytes", "Total memory in bytes of the node",
             [](const pb::NodeRecord& r) -> uint64_t { return r.real_memory_mb() * kMiB; });
  w.Gauge("slurm_nodes", "Total number of nodes", c.nodes);
  w.Gauge("slurm_nodes_alloc", "Number of nodes in Allocated state", c.alloc);
  w.Gauge("slurm_nodes_cloud", "Number of Cloud nodes", c.cloud);
  w.Gauge("slurm_nodes_down", "Number of nodes in Down state", c.down);
  w.Gauge("slurm_nodes_drain", "Number of nodes with Drain flag", c.drain);
  w.Gauge("slurm_nodes_drained", "Number of drained nodes", c.drained);
  w.Gauge("slurm_nodes_draining",
          "Number of nodes in draining condition (Drain state with active jobs)", c.draining);
  w.Gauge("slurm_nodes_dyn_normal", "Number of dynamic nodes", c.dyn_normal);
  w.Gauge("slurm_nodes_future", "Number of nodes in Future state", c.future);
  w.Gauge("slurm_nodes_idle", "Number of nodes in Idle state", c.idle);
  w.Gauge("slurm_nodes_maint", "Number of nodes with Maintenance flag", c.maint);
  w.Gauge("slurm_nodes_mixed", "Number of nodes in Mixed state", c.mixed);
  w.Gauge("slurm_nodes_noresp", "Number of nodes with Not Responding flag", c.noresp);
  w.Gauge("slurm_nodes_power_down", "Number of nodes marked to be powered down", c.power_down);
  w.Gauge("slurm_nodes_powered_down", "Number of nodes powered down", c.powered_down);
  w.Gauge("slurm_nodes_powering_up", "Number of nodes powering up", c.powering_up);
  w.Gauge("slurm_nodes_reboot_issued", "Number of nodes with Reboot Issued flag", c.reboot_issued);
  w.Gauge("slurm_nodes_reboot_req", "Number of nodes with Reboot Requested flag",
          c.reboot_requested);
  w.Gauge("slurm_nodes_resv", "Number of nodes with Reserved flag", c.resv);
  w.Gauge("slurm_nodes_unknown", "Number of nodes in Unknown state", c.unknown);
}

void Controller::WritePartitionMetrics(OpenMetricsWriter& w) {
  // Node views once; each partition then sums its own nodes and jobs.
  std::vector<pb::NodeRecord> views;
  views.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    views.push_back(NodeView(nodes_[i]));
    views.back().set_maint(NodeInMaint(static_cast<int>(i)));
    views.back().set_reserved(NodeReserved(static_cast<int>(i)));
  }
  std::vector<JobCounts> jobs(partitions_.size());
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < partitions_.size(); ++i) index[partitions_[i].rec.name()] = i;
  ForEachJob([&](uint32_t, const pb::JobRecord& job) {
    const std::string& list = job.partition();
    if (list.find(',') == std::string::npos) {
      if (auto it = index.find(list); it != index.end()) jobs[it->second].Add(job);
      return;
    }
    for (size_t i = 0; i < partitions_.size(); ++i)
      if (InPartitionList(list, partitions_[i].rec.name())) jobs[i].Add(job);
  });
  std::vector<NodeCounts> nodes(partitions_.size());
  for (size_t i = 0; i < partitions_.size(); ++i)
    for (int idx : partitions_[i].node_index) nodes[i].Add(views[idx]);

  w.Gauge("slurm_partitions", "Total number of partitions", uint64_t{partitions_.size()});
  // One family at a time, every partition in it (OpenMetrics keeps a family's samples together).
  auto job_family = [&](const char* name, const char* help, auto value) {
    w.Family(name, "gauge", help);
    for (size_t i = 0; i < partitions_.size(); ++i)
      w.Sample(name, {{"partition", partitions_[i].rec.name()}}, uint64_t{value(jobs[i])});
  };
  auto node_family = [&](const char* name, const char* help, auto value) {
    w.Family(name, "gauge", help);
    for (size_t i = 0; i < partitions_.size(); ++i)
      w.Sample(name, {{"partition", partitions_[i].rec.name()}}, uint64_t{value(nodes[i])});
  };
  using J = const JobCounts&;
  using N = const NodeCounts&;
  job_family("slurm_partition_jobs", "Number of jobs in this partition",
             [](J c) { return c.jobs; });
  job_family("slurm_partition_jobs_bootfail", "Number of jobs in BootFail state",
             [](J c) { return c.bootfail; });
  job_family("slurm_partition_jobs_cancelled", "Number of jobs in Cancelled state",
             [](J c) { return c.cancelled; });
  job_family("slurm_partition_jobs_completed", "Number of jobs in Completed state",
             [](J c) { return c.completed; });
  job_family("slurm_partition_jobs_completing", "Number of jobs in Completing state",
             [](J c) { return c.completing; });
  job_family("slurm_partition_jobs_configuring", "Number of jobs in Configuring state",
             [](J c) { return c.configuring; });
  job_family("slurm_partition_jobs_cpus_alloc", "Total number of Cpus allocated by jobs",
             [](J c) { return c.cpus_alloc; });
  job_family("slurm_partition_jobs_deadline", "Number of jobs in Deadline state",
             [](J c) { return c.deadline; });
  job_family("slurm_partition_jobs_failed", "Number of jobs in Failed state",
             [](J c) { return c.failed; });
  job_family("slurm_partition_jobs_finished", "Number of jobs in Finished",
             [](J c) { return c.finished; });
  job_family("slurm_partition_jobs_hold", "Number of jobs in Hold state",
             [](J c) { return c.hold; });
  job_family("slurm_partition_jobs_max_job_nodes",
             "Max of the max_nodes required of all pending jobs in that partition",
             [](J c) { return uint64_t{c.max_job_nodes}; });
  job_family("slurm_partition_jobs_max_job_nodes_nohold",
             "Max of the max_nodes required of all pending jobs in that partition excluding "
             "Held jobs",
             [](J c) { return uint64_t{c.max_job_nodes_nohold}; });
  job_family("slurm_partition_jobs_memory_alloc", "Total memory bytes allocated by jobs",
             [](J c) { return c.memory_alloc; });
  job_family("slurm_partition_jobs_min_job_nodes",
             "Max of the min_nodes required of all pending jobs in that partition",
             [](J c) { return uint64_t{c.min_job_nodes}; });
  job_family("slurm_partition_jobs_min_job_nodes_nohold",
             "Max of the min_nodes required of all pending jobs in that partition excluding "
             "Held jobs",
             [](J c) { return uint64_t{c.min_job_nodes_nohold}; });
  job_family("slurm_partition_jobs_node_failed", "Number of jobs in Node Failed state",
             [](J c) { return c.node_failed; });
  job_family("slurm_partition_jobs_outofmemory", "Number of jobs in Out of Memory state",
             [](J c) { return c.oom; });
  job_family("slurm_partition_jobs_pending", "Number of jobs in Pending state",
             [](J c) { return c.pending; });
  job_family("slurm_partition_jobs_preempted", "Number of jobs in Preempted state",
             [](J c) { return c.preempted; });
  job_family("slurm_partition_jobs_running", "Number of jobs in Running state",
             [](J c) { return c.running; });
  job_family("slurm_partition_jobs_started", "Number of jobs started",
             [](J c) { return c.started; });
  job_family("slurm_partition_jobs_suspended", "Number of jobs in Suspended state",
             [](J c) { return c.suspended; });
  job_family("slurm_partition_jobs_timeout", "Number of jobs in Timeout state",
             [](J c) { return c.timeout; });
  node_family("slurm_partition_nodes", "Partition total nodes", [](N c) { return c.nodes; });
  node_family("slurm_partition_nodes_alloc", "Nodes allocated", [](N c) { return c.alloc; });
  node_family("slurm_partition_nodes_cloud", "Cloud nodes", [](N c) { return c.cloud; });
  node_family("slurm_partition_nodes_cpus_alloc", "Number of allocated cpus",
              [](N c) { return c.cpus_alloc; });
  node_family("slurm_partition_nodes_cpus_efctv",
              "Number of effective CPUs on all nodes, excludes CoreSpec",
              [](N c) { return c.cpus; });
  node_family("slurm_partition_nodes_cpus_idle", "Number of idle CPUs on all nodes",
              [](N c) { return c.cpus_idle; });
  node_family("slurm_partition_nodes_down", "Nodes in Down state", [](N c) { return c.down; });
  node_family("slurm_partition_nodes_drain", "Nodes in Drain state", [](N c) { return c.drain; });
  node_family("slurm_partition_nodes_drained", "Nodes in Drained state",
              [](N c) { return c.drained; });
  node_family("slurm_partition_nodes_draining",
              "Number of nodes in draining condition (Drain state with active jobs)",
              [](N c) { return c.draining; });
  node_family("slurm_partition_nodes_future", "Nodes in Future state",
              [](N c) { return c.future; });
  node_family("slurm_partition_nodes_idle", "Nodes in Idle state", [](N c) { return c.idle; });
  node_family("slurm_partition_nodes_maint", "Nodes in maintenance state",
              [](N c) { return c.maint; });
  node_family("slurm_partition_nodes_mem_alloc", "Amount of allocated memory of all nodes",
              [](N c) { return c.mem_alloc; });
  node_family("slurm_partition_nodes_mem_avail", "Amount of available memory of all nodes",
              [](N c) { return c.mem_total - std::min(c.mem_total, c.mem_alloc); });
  node_family("slurm_partition_nodes_mem_free", "Amount of free memory in all nodes",
              [](N c) { return c.mem_free; });
  node_family("slurm_partition_nodes_mem_tot", "Total amount of memory of all nodes",
              [](N c) { return c.mem_total; });
  node_family("slurm_partition_nodes_mixed", "Nodes in Mixed state", [](N c) { return c.mixed; });
  node_family("slurm_partition_nodes_no_resp", "Nodes in Not Responding state",
              [](N c) { return c.noresp; });
  node_family("slurm_partition_nodes_resv", "Nodes with Reserved flag", [](N c) { return c.resv; });
  node_family("slurm_partition_nodes_unknown", "Nodes in Unknown state",
              [](N c) { return c.unknown; });
  node_family("slurm_partition_cpus", "Partition total cpus", [](N c) { return c.cpus; });
}

void Controller::WriteSchedulerMetrics(OpenMetricsWriter& w) {
  const auto& s = diag_.sched();
  const auto& b = diag_.bf();
  auto mean = [](uint64_t sum, uint64_t n) -> uint64_t { return n ? sum / n : 0; };
  w.Gauge("slurm_agent_cnt", "Number of agent threads", uint64_t{0});
  w.Gauge("slurm_agent_queue_size", "Outgoing RPC retry queue length", uint64_t{0});
  w.Gauge("slurm_agent_thread_cnt", "Total active agent-created threads", uint64_t{0});
  w.Gauge("slurm_bf_depth_mean", "Mean backfill cycle depth", mean(b.depth_sum, b.cycle_counter));
  w.Gauge("slurm_bf_mean_cycle", "Mean backfill cycle time", mean(b.cycle_sum, b.cycle_counter));
  w.Gauge("slurm_bf_mean_table_sz", "Mean backfill table size",
          mean(b.table_size_sum, b.cycle_counter));
  w.Gauge("slurm_bf_queue_len_mean", "Mean backfill queue length",
          mean(b.queue_len_sum, b.cycle_counter));
  w.Gauge("slurm_bf_try_depth_mean", "Mean depth attempts in backfill",
          mean(b.depth_try_sum, b.cycle_counter));
  w.Gauge("slurm_backfilled_het_jobs", "Heterogeneous components backfilled", uint64_t{0});
  w.Gauge("slurm_backfilled_jobs", "Total backfilled jobs since reset", b.backfilled_jobs);
  w.Gauge("slurm_bf_active", "Backfill scheduler active jobs", uint64_t{0});
  w.Gauge("slurm_bf_cycle_cnt", "Backfill cycle count", uint64_t{b.cycle_counter});
  w.Gauge("slurm_bf_cycle_last", "Last backfill cycle time", b.cycle_last);
  w.Gauge("slurm_bf_cycle_max", "Max backfill cycle time", b.cycle_max);
  w.Gauge("slurm_bf_cycle_tot", "Sum of backfill cycle times", b.cycle_sum);
  w.Gauge("slurm_bf_depth_tot", "Sum of backfill job depths", b.depth_sum);
  w.Gauge("slurm_bf_depth_try_tot", "Sum of backfill depth attempts", b.depth_try_sum);
  w.Gauge("slurm_bf_last_depth", "Last backfill depth", uint64_t{b.last_depth});
  w.Gauge("slurm_bf_last_depth_try", "Last backfill depth attempts", uint64_t{b.last_depth_try});
  w.Gauge("slurm_bf_queue_len", "Backfill queue length", uint64_t{b.queue_len});
  w.Gauge("slurm_bf_queue_len_tot", "Sum of backfill queue lengths", b.queue_len_sum);
  w.Gauge("slurm_bf_table_size", "Backfill table size", uint64_t{b.table_size});
  w.Gauge("slurm_bf_table_size_tot", "Sum of backfill table sizes", b.table_size_sum);
  w.Gauge("slurm_bf_when_last_cycle", "Timestamp of last backfill cycle",
          static_cast<uint64_t>(b.when_last_cycle));
  w.Gauge("slurm_sdiag_jobs_canceled", "Jobs canceled since reset",
          uint64_t{diag_.jobs_canceled()});
  w.Gauge("slurm_sdiag_jobs_completed", "Jobs completed since reset",
          uint64_t{diag_.jobs_completed()});
  w.Gauge("slurm_sdiag_jobs_failed", "Jobs failed since reset", uint64_t{diag_.jobs_failed()});
  uint64_t pending = 0, running = 0;
  for (const auto& [id, job] : jobs_) {
    if (job.state() == pb::JOB_PENDING) ++pending;
    if (job.state() == pb::JOB_RUNNING && !job.completing()) ++running;
  }
  pending += packed_.size();  // packed jobs are pending
  w.Gauge("slurm_sdiag_jobs_pending", "Jobs pending at timestamp", pending);
  w.Gauge("slurm_sdiag_jobs_running", "Jobs running at timestamp", running);
  w.Gauge("slurm_sdiag_jobs_started", "Jobs started since reset", uint64_t{diag_.jobs_started()});
  w.Gauge("slurm_sdiag_jobs_submitted", "Jobs submitted since reset",
          uint64_t{diag_.jobs_submitted()});
  w.Gauge("slurm_sdiag_job_states_ts", "Job states timestamp", static_cast<uint64_t>(Now()));
  w.Gauge("slurm_last_backfilled_jobs", "Backfilled jobs since last cycle", b.last_backfilled_jobs);
  w.Gauge("slurm_schedule_cycle_cnt", "Scheduling cycle count", uint64_t{s.cycle_counter});
  w.Gauge("slurm_schedule_cycle_depth", "Processed jobs depth total", s.depth_sum);
  w.Gauge("slurm_schedule_cycle_last", "Last scheduling cycle time", s.cycle_last);
  w.Gauge("slurm_schedule_cycle_max", "Max scheduling cycle time", s.cycle_max);
  w.Gauge("slurm_schedule_cycle_tot", "Sum of scheduling cycle times", s.cycle_sum);
  w.Gauge("slurm_schedule_queue_len", "Jobs pending queue length", uint64_t{s.queue_len});
  w.Gauge("slurm_sched_mean_cycle", "Mean scheduling cycle time",
          mean(s.cycle_sum, s.cycle_counter));
  w.Gauge("slurm_sched_mean_depth_cycle", "Mean depth of scheduling cycles",
          mean(s.depth_sum, s.cycle_counter));
  w.Gauge("slurm_server_thread_cnt", "Active slurmctld threads count", uint64_t{1});
  w.Gauge("slurm_slurmdbd_queue_size", "Queued messages to SlurmDBD",
          uint64_t{acct_dirty_.size() + acct_events_.size() + acct_resvs_.size()});
  w.Gauge("slurm_sched_stats_timestamp", "Statistics snapshot timestamp",
          static_cast<uint64_t>(Now()));
}

void Controller::WriteUserAccountMetrics(OpenMetricsWriter& w) {
  std::map<std::string, JobCounts> users, accounts;
  ForEachJob([&](uint32_t, const pb::JobRecord& job) {
    std::string user = job.spec().user_name();
    if (user.empty()) user = std::to_string(job.spec().uid());
    users[user].Add(job);
    if (!job.spec().account().empty()) accounts[job.spec().account()].Add(job);
  });
  struct Series {
    const char* suffix;
    const char* help;
    uint64_t JobCounts::*value;
  };
  static constexpr Series kSeries[] = {
      {"jobs_bootfail", "Number of jobs in BootFail state", &JobCounts::bootfail},
      {"jobs_cancelled", "Number of jobs in Cancelled state", &JobCounts::cancelled},
      {"jobs_completed", "Number of jobs in Completed state", &JobCounts::completed},
      {"jobs_completing", "Number of jobs in Completing state", &JobCounts::completing},
      {"jobs_configuring", "Number of jobs in Configuring state", &JobCounts::configuring},
      {"jobs_cpus_alloc", "Total number of Cpus allocated by jobs", &JobCounts::cpus_alloc},
      {"jobs_deadline", "Number of jobs in Deadline state", &JobCounts::deadline},
      {"jobs_failed", "Number of jobs in Failed state", &JobCounts::failed},
      {"jobs_finished", "Number of finished jobs", &JobCounts::finished},
      {"jobs_hold", "Number of jobs in Hold state", &JobCounts::hold},
      {"jobs", "Total number of jobs", &JobCounts::jobs},
      {"jobs_memory_alloc", "Total memory bytes allocated by jobs", &JobCounts::memory_alloc},
      {"jobs_node_failed", "Number of jobs in Node Failed state", &JobCounts::node_failed},
      {"jobs_nodes_alloc", "Total number of nodes allocated by jobs", &JobCounts::nodes_alloc},
      {"jobs_outofmemory", "Number of jobs in Out of Memory state", &JobCounts::oom},
      {"jobs_pending", "Number of jobs in Pending state", &JobCounts::pending},
      {"jobs_preempted", "Number of jobs in Preempted state", &JobCounts::preempted},
      {"jobs_running", "Number of jobs in Running state", &JobCounts::running},
      {"jobs_started", "Number of started jobs", &JobCounts::started},
      {"jobs_suspended", "Number of jobs in Suspended state", &JobCounts::suspended},
      {"jobs_timeout", "Number of jobs in Timeout state", &JobCounts::timeout},
  };
  // Family by family, every user (then account) in each: OpenMetrics keeps a family together.
  auto write = [&](const std::map<std::string, JobCounts>& by, const char* prefix,
                   const char* key) {
    if (by.empty()) return;
    for (const Series& series : kSeries) {
      std::string name = std::string("slurm_") + prefix + "_" + series.suffix;
      w.Family(name, "gauge", series.help);
      for (const auto& [entity, c] : by) w.Sample(name, {{key, entity}}, c.*series.value);
    }
  };
  write(users, "user", "username");
  write(accounts, "account", "account");
}

void Controller::WriteShoalMetrics(OpenMetricsWriter& w) {
  // Lifetime counters (sdiag --reset does not touch them: OpenMetrics counters never go down).
  w.Family("shoal_rpc_requests", "counter",
           "RPCs answered by the controller, by Slurm message type");
  std::vector<std::pair<std::string, const RpcTypeStats*>> types;
  for (const auto& [id, t] : diag_.by_type()) types.emplace_back(t.name, &t);
  std::sort(types.begin(), types.end());
  for (const auto& [name, t] : types)
    w.Sample("shoal_rpc_requests_total", {{"type", name}}, t->lifetime.count);
  w.Family("shoal_rpc_duration_seconds", "histogram",
           "Time from a request's arrival to its answer (after the journal commit when one is "
           "needed)");
  for (const auto& [name, t] : types)
    w.Histogram("shoal_rpc_duration_seconds", {{"type", name}}, kRpcLatencyBounds.data(),
                kRpcLatencyBounds.size(), t->lifetime.buckets.data(),
                static_cast<double>(t->lifetime.sum_usec) / 1e6);
  std::vector<std::pair<std::string, const RpcUserStats*>> users;
  for (const auto& [uid, u] : diag_.by_user()) users.emplace_back(UserNameOf(uid), &u);
  std::sort(users.begin(), users.end());
  w.Family("shoal_rpc_user_requests", "counter", "RPCs answered by the controller, by user");
  for (const auto& [name, u] : users)
    w.Sample("shoal_rpc_user_requests_total", {{"user", name}}, u->lifetime_count);
  w.Family("shoal_rpc_user_seconds", "counter", "Time spent answering RPCs, by user");
  for (const auto& [name, u] : users)
    w.Sample("shoal_rpc_user_seconds_total", {{"user", name}},
             static_cast<double>(u->lifetime_usec) / 1e6);
  const auto& c = diag_.commits();
  w.Family("shoal_journal_commit_seconds", "histogram",
           "State-store group commits (journal write + fdatasync)");
  w.Histogram("shoal_journal_commit_seconds", {}, kCommitLatencyBounds.data(),
              kCommitLatencyBounds.size(), c.buckets.data(), static_cast<double>(c.sum_usec) / 1e6);
  uint64_t packed_runnable = 0;
  for (const auto& [id, packed] : packed_) packed_runnable += packed.runnable ? 1 : 0;
  w.Gauge("shoal_jobs_packed", "Queued jobs the controller keeps serialized in memory",
          uint64_t{packed_.size()});
  w.Gauge("shoal_jobs_packed_runnable",
          "Of those, jobs that wait for resources or their turn (not held)", packed_runnable);
  w.Gauge("shoal_jobs_finished_packed", "Finished jobs kept until MinJobAge, serialized in memory",
          uint64_t{packed_finished_.size()});
  w.Family("shoal_priority_recalcs", "counter",
           "Multifactor priority recalculations (every PriorityCalcPeriod and on reconfigure)");
  w.Sample("shoal_priority_recalcs_total", priority_recalc_.count);
  w.Family("shoal_priority_recalc_seconds", "counter", "Time spent in those recalculations");
  w.Sample("shoal_priority_recalc_seconds_total", {},
           static_cast<double>(priority_recalc_.total_usec) / 1e6);
  w.Gauge("shoal_priority_recalc_last_seconds",
          "How long the last recalculation took, its batches together",
          static_cast<double>(priority_recalc_.last_usec) / 1e6);
  w.Gauge("shoal_priority_recalc_last_jobs", "Pending jobs the last recalculation went over",
          priority_recalc_.last_jobs);
  w.Gauge("shoal_priority_recalc_last_batches",
          "Turns of the main loop the last recalculation was spread over (requests are answered "
          "between them)",
          priority_recalc_.last_batches);
  w.Gauge("shoal_priority_recalc_last_longest_batch_seconds",
          "The longest of those batches: the longest the recalculation kept requests waiting",
          static_cast<double>(priority_recalc_.last_longest_batch_usec) / 1e6);
  w.Family("shoal_jobs_submitted", "counter", "Jobs submitted since the controller started");
  w.Sample("shoal_jobs_submitted_total", diag_.lifetime_submitted());
  w.Family("shoal_jobs_started", "counter", "Jobs started since the controller started");
  w.Sample("shoal_jobs_started_total", diag_.lifetime_started());
  w.Family("shoal_jobs_completed", "counter", "Jobs completed since the controller started");
  w.Sample("shoal_jobs_completed_total", diag_.lifetime_completed());
  w.Family("shoal_jobs_canceled", "counter", "Jobs canceled since the controller started");
  w.Sample("shoal_jobs_canceled_total", diag_.lifetime_canceled());
  w.Family("shoal_jobs_failed", "counter", "Jobs failed since the controller started");
  w.Sample("shoal_jobs_failed_total", diag_.lifetime_failed());
  w.Gauge("shoal_controller_start_time_seconds", "When the controller started (Unix time)",
          static_cast<uint64_t>(start_time_));
}

}  // namespace shoal::ctld
