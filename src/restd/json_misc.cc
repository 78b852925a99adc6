#include "restd/json_misc.h"

#include <map>

#include "common/units.h"

namespace shoal::restd {

json PingToJson(const pb::PingResponse& ping, int64_t latency_us) {
  return json::array({{{"hostname", ping.controller()},
                       {"pinged", "UP"},
                       {"responding", true},
                       {"latency", latency_us},
                       {"mode", "primary"},
                       {"primary", true}}});
}

json DiagToJson(const pb::DiagResponse& d) {
  auto mean = [](uint64_t sum, uint64_t n) -> int64_t { return n ? int64_t(sum / n) : 0; };
  json by_type = json::array();
  for (const auto& r : d.rpc_by_type())
    by_type.push_back({{"type_id", r.id()},
                       {"message_type", r.name()},
                       {"count", r.count()},
                       {"queued", 0},
                       {"dropped", 0},
                       {"cycle_last", 0},
                       {"cycle_max", 0},
                       {"total_time", r.total_usec()},
                       {"average_time", NoVal(mean(r.total_usec(), r.count()))}});
  json by_user = json::array();
  for (const auto& r : d.rpc_by_user())
    by_user.push_back({{"user_id", r.id()},
                       {"user", r.name()},
                       {"count", r.count()},
                       {"total_time", r.total_usec()},
                       {"average_time", NoVal(mean(r.total_usec(), r.count()))}});
  int64_t elapsed_min = d.now() > d.since() ? (d.now() - d.since()) / 60 : 0;
  return {
      {"parts_packed", 1},
      {"req_time", NoVal(d.now())},
      {"req_time_start", NoVal(d.since())},
      {"server_thread_count", d.server_thread_count()},
      {"agent_queue_size", d.agent_queue_size()},
      {"agent_count", d.agent_count()},
      {"agent_thread_count", d.agent_thread_count()},
      {"dbd_agent_queue_size", d.dbd_agent_queue_size()},
      {"gettimeofday_latency", 0},
      {"schedule_cycle_max", d.schedule_cycle_max()},
      {"schedule_cycle_last", d.schedule_cycle_last()},
      {"schedule_cycle_sum", d.schedule_cycle_sum()},
      {"schedule_cycle_total", d.schedule_cycle_counter()},
      {"schedule_cycle_mean", mean(d.schedule_cycle_sum(), d.schedule_cycle_counter())},
      {"schedule_cycle_mean_depth", mean(d.schedule_cycle_depth(), d.schedule_cycle_counter())},
      {"schedule_cycle_per_minute",
       elapsed_min ? int64_t(d.schedule_cycle_counter() / elapsed_min) : 0},
      {"schedule_cycle_depth", d.schedule_cycle_depth()},
      {"schedule_queue_length", d.schedule_queue_len()},
      {"jobs_submitted", d.jobs_submitted()},
      {"jobs_started", d.jobs_started()},
      {"jobs_completed", d.jobs_completed()},
      {"jobs_canceled", d.jobs_canceled()},
      {"jobs_failed", d.jobs_failed()},
      {"jobs_pending", d.jobs_pending()},
      {"jobs_running", d.jobs_running()},
      {"job_states_ts", NoValTime(d.job_states_ts())},
      {"bf_backfilled_jobs", d.bf_backfilled_jobs()},
      {"bf_last_backfilled_jobs", d.bf_last_backfilled_jobs()},
      {"bf_backfilled_het_jobs", d.bf_backfilled_het_jobs()},
      {"bf_cycle_counter", d.bf_cycle_counter()},
      {"bf_cycle_mean", mean(d.bf_cycle_sum(), d.bf_cycle_counter())},
      {"bf_depth_mean", mean(d.bf_depth_sum(), d.bf_cycle_counter())},
      {"bf_depth_mean_try", mean(d.bf_depth_try_sum(), d.bf_cycle_counter())},
      {"bf_cycle_sum", d.bf_cycle_sum()},
      {"bf_cycle_last", d.bf_cycle_last()},
      {"bf_cycle_max", d.bf_cycle_max()},
      {"bf_last_depth", d.bf_last_depth()},
      {"bf_last_depth_try", d.bf_last_depth_try()},
      {"bf_depth_sum", d.bf_depth_sum()},
      {"bf_depth_try_sum", d.bf_depth_try_sum()},
      {"bf_queue_len", d.bf_queue_len()},
      {"bf_queue_len_mean", mean(d.bf_queue_len_sum(), d.bf_cycle_counter())},
      {"bf_queue_len_sum", d.bf_queue_len_sum()},
      {"bf_table_size", d.bf_table_size()},
      {"bf_table_size_sum", d.bf_table_size_sum()},
      {"bf_table_size_mean", mean(d.bf_table_size_sum(), d.bf_cycle_counter())},
      {"bf_when_last_cycle", NoValTime(d.bf_when_last_cycle())},
      {"bf_active", d.bf_active()},
      {"rpcs_by_message_type", by_type},
      {"rpcs_by_user", by_user},
      {"pending_rpcs", json::array()},
      {"pending_rpcs_by_hostlist", json::array()},
  };
}

json SharesToJson(const pb::ShareQueryResponse& s, const std::string& cluster) {
  json list = json::array();
  int id = 0;
  uint64_t total = 0;
  std::map<uint32_t, std::string> parent_at_depth;  // the last account seen at each depth
  for (const auto& r : s.records()) {
    bool user = !r.user().empty();
    std::string parent = r.depth() > 0 ? parent_at_depth[r.depth() - 1] : "";
    if (!user) parent_at_depth[r.depth()] = r.account();
    if (r.raw_shares() != kSharesParent) total += r.raw_shares();
    list.push_back(
        {{"id", id++},
         {"cluster", cluster},
         {"name", user ? r.user() : r.account()},
         {"parent", user ? r.account() : parent},
         {"partition", r.partition()},
         {"shares_normalized", NoValDouble(r.norm_shares())},
         {"shares", r.raw_shares() == kSharesParent ? NoValInfinite() : NoVal(r.raw_shares())},
         {"tres",
          {{"run_seconds", json::array()},
           {"group_minutes", json::array()},
           {"usage", json::array()}}},
         {"effective_usage", NoValDouble(r.effective_usage())},
         {"usage_normalized", NoValDouble(r.norm_usage())},
         {"usage", r.raw_usage()},
         {"fairshare",
          {{"factor", NoValDouble(r.fairshare())}, {"level", NoValDouble(r.level_fs())}}},
         {"type", json::array({user ? "USER" : "ASSOCIATION"})}});
  }
  return {{"shares", list}, {"total_shares", total}};
}

json LicensesToJson(const std::string& configured, const std::vector<pb::JobRecord>& jobs) {
  // name -> total, in configuration order.
  std::vector<std::pair<std::string, int64_t>> totals;
  auto parse = [](const std::string& item) -> std::pair<std::string, int64_t> {
    auto sep = item.find_first_of(":*");
    if (sep == std::string::npos) return {item, 1};
    return {item.substr(0, sep), std::atoll(item.c_str() + sep + 1)};
  };
  for (const auto& item : CsvList(configured)) totals.push_back(parse(item.get<std::string>()));
  std::map<std::string, int64_t> used;
  for (const auto& job : jobs) {
    if (job.state() != pb::JOB_RUNNING && job.state() != pb::JOB_SUSPENDED) continue;
    for (const auto& item : CsvList(job.spec().licenses())) {
      auto [name, n] = parse(item.get<std::string>());
      used[name] += n;
    }
  }
  json out = json::array();
  for (const auto& [name, total] : totals) {
    int64_t u = used.count(name) ? used[name] : 0;
    out.push_back({{"LicenseName", name},
                   {"Total", total},
                   {"Used", u},
                   {"Free", total > u ? total - u : 0},
                   {"Remote", false},
                   {"Reserved", 0},
                   {"LastConsumed", 0},
                   {"LastDeficit", 0},
                   {"LastUpdate", 0},
                   {"Nodes", ""}});
  }
  return out;
}

json ResourceLayoutToJson(const pb::JobRecord& job) {
  json out = json::array();
  for (int i = 0; i < job.nodes_size(); ++i) {
    uint64_t mem = i < job.mem_alloc_mb_size() ? job.mem_alloc_mb(i) : job.mem_per_node_mb();
    json gres = json::array();
    for (const auto& g : job.gres_devices()) {
      if (static_cast<int>(g.node_pos()) != i) continue;
      std::string idx;
      for (uint32_t x : g.indexes()) idx += (idx.empty() ? "" : ",") + std::to_string(x);
      gres.push_back(
          {{"name", g.name()}, {"type", g.type()}, {"index", idx}, {"count", g.count()}});
    }
    out.push_back({{"node", job.nodes(i)},
                   {"sockets_per_node", 0},
                   {"cores_per_socket", 0},
                   {"mem_alloc", mem},
                   {"core_bitmap", ""},
                   {"channel", NoValUnset()},
                   {"gres", gres}});
  }
  return out;
}

}  // namespace shoal::restd
