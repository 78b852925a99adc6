#include "ctld/acct_record.h"

#include <sys/wait.h>

#include <numeric>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal::ctld {
namespace {

uint64_t GpuCount(const pb::JobRecord& job) {
  uint64_t n = 0;
  for (const auto& g : job.gres_devices()) {
    if (g.name() == "gpu") n += g.count();
  }
  return n;
}

pb::AcctStep ToAcctStep(const pb::StepRecord& step) {
  pb::AcctStep out;
  out.set_step_id(step.step_id());
  out.set_name(step.name());
  out.set_state(step.state());
  out.set_exit_status(step.exit_status());
  out.set_start_time(step.start_time());
  out.set_end_time(step.end_time());
  out.set_nodelist(CompressHostlist({step.nodes().begin(), step.nodes().end()}));
  out.set_nnodes(static_cast<uint32_t>(step.nodes_size()));
  out.set_ntasks(step.num_tasks());
  uint32_t cpus = std::accumulate(step.cpus_per_node().begin(), step.cpus_per_node().end(), 0u);
  out.set_ncpus(cpus);
  out.set_tres_alloc(
      TresString(cpus, step.mem_per_node_mb() * step.nodes_size(), step.nodes_size(), 0));
  out.set_user_cpu_usec(step.user_cpu_usec());
  out.set_sys_cpu_usec(step.sys_cpu_usec());
  out.set_max_rss_kb(step.max_rss_kb());
  out.set_max_rss_node(step.max_rss_node());
  out.set_max_rss_task(step.max_rss_task());
  out.set_ave_rss_kb(step.max_rss_kb());  // tasks are not sampled separately yet
  std::string line;
  for (const auto& a : step.argv()) line += (line.empty() ? "" : " ") + a;
  out.set_submit_line(step.step_id() == kBatchStepId ? "" : "srun " + line);
  out.set_requid(step.has_cancel_uid() ? step.cancel_uid() : kNoUid);
  return out;
}

}  // namespace

std::string TresString(uint64_t cpus, uint64_t mem_mb, uint64_t nodes, uint64_t gpus) {
  std::string out = "billing=" + std::to_string(cpus) + ",cpu=" + std::to_string(cpus);
  if (gpus > 0) out += ",gres/gpu=" + std::to_string(gpus);
  if (mem_mb > 0) out += ",mem=" + FormatMemoryCompact(mem_mb);
  out += ",node=" + std::to_string(nodes);
  return out;
}

pb::AcctJob ToAcctJob(const pb::JobRecord& job, const std::string& cluster,
                      const std::string& group) {
  const pb::JobSpec& spec = job.spec();
  pb::AcctJob out;
  out.set_cluster(cluster);
  out.set_job_id(job.job_id());
  out.set_submit_time(job.submit_time());
  out.set_array_job_id(job.array_task_id() == kNoArrayTask ? 0 : job.array_job_id());
  out.set_array_task_id(job.array_task_id() == kNoArrayTask ? kNoArrayTask : job.array_task_id());
  out.set_name(spec.name());
  out.set_uid(spec.uid());
  out.set_user(spec.user_name());
  out.set_gid(spec.gid());
  out.set_group(group);
  out.set_account(spec.account());
  out.set_partition(job.partition().empty() ? spec.partition() : job.partition());
  out.set_qos(spec.qos());
  out.set_wckey(spec.wckey());
  out.set_state(job.state());
  // Slurm records a job it ended itself (scancel, time limit) with ExitCode 0:0; the batch step
  // keeps the signal and reads CANCELLED (0:15).
  bool ended_by_us = job.state() == pb::JOB_CANCELLED || job.state() == pb::JOB_TIMEOUT ||
                     job.state() == pb::JOB_PREEMPTED;
  out.set_exit_status(ended_by_us && WIFSIGNALED(job.exit_status()) ? 0 : job.exit_status());
  out.set_derived_exit_status(job.derived_exit_status());
  out.set_eligible_time(job.eligible_time());
  out.set_start_time(job.start_time());
  out.set_end_time(job.state() == pb::JOB_PENDING || job.state() == pb::JOB_RUNNING ||
                           job.state() == pb::JOB_SUSPENDED
                       ? 0
                       : job.end_time());
  out.set_suspended_s(job.suspended_secs());
  out.set_time_limit(job.time_limit());
  bool started = job.start_time() > 0 && job.nodes_size() > 0;
  uint64_t mem_total = 0;
  for (uint64_t m : job.mem_alloc_mb()) mem_total += m;
  if (mem_total == 0) mem_total = job.mem_per_node_mb() * job.nodes_size();
  if (started) {
    uint32_t cpus = std::accumulate(job.cpus_per_node().begin(), job.cpus_per_node().end(), 0u);
    out.set_alloc_cpus(cpus);
    out.set_alloc_nodes(static_cast<uint32_t>(job.nodes_size()));
    out.set_nodelist(CompressHostlist({job.nodes().begin(), job.nodes().end()}));
    out.set_tres_alloc(TresString(cpus, mem_total, job.nodes_size(), GpuCount(job)));
  }
  out.set_req_cpus(job.num_cpus());
  out.set_req_nodes(job.num_nodes());
  if (spec.mem_per_cpu_mb() > 0) {
    out.set_req_mem_mb(spec.mem_per_cpu_mb());
    out.set_req_mem_per_cpu(true);
  } else {
    out.set_req_mem_mb(spec.mem_per_node_mb() > 0 ? spec.mem_per_node_mb() : job.mem_per_node_mb());
  }
  uint64_t req_mem = out.req_mem_per_cpu() ? out.req_mem_mb() * job.num_cpus()
                                           : out.req_mem_mb() * std::max(job.num_nodes(), 1u);
  out.set_tres_req(TresString(job.num_cpus(), req_mem, std::max(job.num_nodes(), 1u), 0));
  out.set_work_dir(spec.work_dir());
  out.set_reason(job.reason().empty() ? "None" : job.reason());
  out.set_priority(job.priority());
  out.set_constraints(spec.constraint());
  out.set_reservation(job.reservation());
  out.set_comment(spec.comment());
  std::string line = spec.command().empty() ? "sbatch" : "sbatch " + spec.command();
  for (const auto& a : spec.argv()) line += " " + a;
  out.set_submit_line(spec.interactive() ? "" : line);
  out.set_restart_count(job.restart_count());
  out.set_batch_host(job.batch_host());
  out.set_requid(job.has_cancel_uid() ? job.cancel_uid() : kNoUid);
  for (const auto& step : job.steps()) {
    pb::AcctStep* s = out.add_steps();
    *s = ToAcctStep(step);
    if (ended_by_us && WIFSIGNALED(step.exit_status()) && s->state() == pb::JOB_FAILED)
      s->set_state(pb::JOB_CANCELLED);
  }
  return out;
}

}  // namespace shoal::ctld
