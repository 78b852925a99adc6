#include "cli/sdiag_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <vector>

namespace shoal::cli {
namespace {

// ctime(3) without its newline: "Mon Nov 23 10:00:00 2026".
std::string CTime(int64_t t) {
  time_t tt = static_cast<time_t>(t);
  char buf[64];
  if (!ctime_r(&tt, buf)) return "";
  std::string s = buf;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

template <typename... Args>
void Add(std::string& out, const char* fmt, Args... args) {
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), fmt, args...);
  if (n > 0) out.append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

uint64_t Ave(const pb::RpcStat& s) { return s.count() ? s.total_usec() / s.count() : 0; }

// Slurm's orders: count (default), total time, average time, all descending; or id ascending.
std::vector<pb::RpcStat> Sorted(const google::protobuf::RepeatedPtrField<pb::RpcStat>& rows,
                                SdiagSort sort) {
  std::vector<pb::RpcStat> v(rows.begin(), rows.end());
  std::stable_sort(v.begin(), v.end(), [sort](const pb::RpcStat& a, const pb::RpcStat& b) {
    switch (sort) {
      case SdiagSort::kId:
        return a.id() < b.id();
      case SdiagSort::kTime:
        if (a.total_usec() != b.total_usec()) return a.total_usec() > b.total_usec();
        break;
      case SdiagSort::kTime2:
        if (Ave(a) != Ave(b)) return Ave(a) > Ave(b);
        break;
      case SdiagSort::kCount:
        if (a.count() != b.count()) return a.count() > b.count();
        break;
    }
    return a.id() < b.id();
  });
  return v;
}

}  // namespace

std::string FormatSdiag(const pb::DiagResponse& d, SdiagSort sort, int gettimeofday_latency_us) {
  std::string o;
  o += "*******************************************************\n";
  Add(o, "sdiag output at %s (%" PRId64 ")\n", CTime(d.now()).c_str(), d.now());
  Add(o, "Data since      %s (%" PRId64 ")\n", CTime(d.since()).c_str(), d.since());
  o += "*******************************************************\n";
  Add(o, "Server thread count:  %u\n", d.server_thread_count());
  Add(o, "Agent queue size:     %u\n", d.agent_queue_size());
  Add(o, "Agent count:          %u\n", d.agent_count());
  Add(o, "Agent thread count:   %u\n", d.agent_thread_count());
  Add(o, "DBD Agent queue size: %u\n\n", d.dbd_agent_queue_size());

  Add(o, "Jobs submitted: %u\n", d.jobs_submitted());
  Add(o, "Jobs started:   %u\n", d.jobs_started());
  Add(o, "Jobs completed: %u\n", d.jobs_completed());
  Add(o, "Jobs canceled:  %u\n", d.jobs_canceled());
  Add(o, "Jobs failed:    %u\n\n", d.jobs_failed());

  Add(o, "Job states ts:  %s (%" PRId64 ")\n", CTime(d.job_states_ts()).c_str(), d.job_states_ts());
  Add(o, "Jobs pending:   %u\n", d.jobs_pending());
  Add(o, "Jobs running:   %u\n", d.jobs_running());

  o += "\nMain schedule statistics (microseconds):\n";
  Add(o, "\tLast cycle:   %" PRIu64 "\n", d.schedule_cycle_last());
  Add(o, "\tMax cycle:    %" PRIu64 "\n", d.schedule_cycle_max());
  Add(o, "\tTotal cycles: %u\n", d.schedule_cycle_counter());
  if (d.schedule_cycle_counter() > 0) {
    Add(o, "\tMean cycle:   %" PRIu64 "\n", d.schedule_cycle_sum() / d.schedule_cycle_counter());
    Add(o, "\tMean depth cycle:  %" PRIu64 "\n",
        d.schedule_cycle_depth() / d.schedule_cycle_counter());
  }
  int64_t elapsed = d.now() - d.since();
  if (elapsed > 60)
    Add(o, "\tCycles per minute: %" PRIu64 "\n",
        static_cast<uint64_t>(d.schedule_cycle_counter()) / static_cast<uint64_t>(elapsed / 60));
  Add(o, "\tLast queue length: %u\n", d.schedule_queue_len());

  if (d.bf_active())
    o += "\nBackfilling stats (WARNING: data obtained in the middle of backfilling execution.)\n";
  else
    o += "\nBackfilling stats\n";
  Add(o, "\tTotal backfilled jobs (since last slurm start): %" PRIu64 "\n", d.bf_backfilled_jobs());
  Add(o, "\tTotal backfilled jobs (since last stats cycle start): %" PRIu64 "\n",
      d.bf_last_backfilled_jobs());
  Add(o, "\tTotal backfilled heterogeneous job components: %" PRIu64 "\n",
      d.bf_backfilled_het_jobs());
  Add(o, "\tTotal cycles: %u\n", d.bf_cycle_counter());
  if (d.bf_when_last_cycle() > 0)
    Add(o, "\tLast cycle when: %s (%" PRId64 ")\n", CTime(d.bf_when_last_cycle()).c_str(),
        d.bf_when_last_cycle());
  else
    o += "\tLast cycle when: N/A\n";
  Add(o, "\tLast cycle: %" PRIu64 "\n", d.bf_cycle_last());
  Add(o, "\tMax cycle:  %" PRIu64 "\n", d.bf_cycle_max());
  uint32_t n = d.bf_cycle_counter();
  if (n > 0) Add(o, "\tMean cycle: %" PRIu64 "\n", d.bf_cycle_sum() / n);
  Add(o, "\tLast depth cycle: %u\n", d.bf_last_depth());
  Add(o, "\tLast depth cycle (try sched): %u\n", d.bf_last_depth_try());
  if (n > 0) {
    Add(o, "\tDepth Mean: %" PRIu64 "\n", d.bf_depth_sum() / n);
    // Slurm prints "(try depth)" here, though its manual says "(try sched)".
    Add(o, "\tDepth Mean (try depth): %" PRIu64 "\n", d.bf_depth_try_sum() / n);
  }
  Add(o, "\tLast queue length: %u\n", d.bf_queue_len());
  if (n > 0) Add(o, "\tQueue length mean: %" PRIu64 "\n", d.bf_queue_len_sum() / n);
  Add(o, "\tLast table size: %u\n", d.bf_table_size());
  if (n > 0) Add(o, "\tMean table size: %" PRIu64 "\n", d.bf_table_size_sum() / n);

  Add(o, "\nLatency for 1000 calls to gettimeofday(): %d microseconds\n", gettimeofday_latency_us);

  o += "\nRemote Procedure Call statistics by message type\n";
  for (const auto& s : Sorted(d.rpc_by_type(), sort))
    Add(o, "\t%-40s(%5u) count:%-6" PRIu64 " ave_time:%-6" PRIu64 " total_time:%" PRIu64 "\n",
        s.name().c_str(), s.id(), s.count(), Ave(s), s.total_usec());

  o += "\nRemote Procedure Call statistics by user\n";
  for (const auto& s : Sorted(d.rpc_by_user(), sort))
    Add(o, "\t%-16s(%8u) count:%-6" PRIu64 " ave_time:%-6" PRIu64 " total_time:%" PRIu64 "\n",
        s.name().c_str(), s.id(), s.count(), Ave(s), s.total_usec());

  o += "\nPending RPC statistics\n";
  o += "\tNo pending RPCs\n";
  return o;
}

}  // namespace shoal::cli
