#include "restd/json_nodes.h"

#include <algorithm>
#include <ctime>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal::restd {

json NodeStateArray(const pb::NodeRecord& n) {
  json out = json::array();
  switch (n.base_state()) {
    case pb::NODE_IDLE:
      out.push_back("IDLE");
      break;
    case pb::NODE_ALLOCATED:
      out.push_back("ALLOCATED");
      break;
    case pb::NODE_MIXED:
      out.push_back("MIXED");
      break;
    case pb::NODE_DOWN:
      out.push_back("DOWN");
      break;
    case pb::NODE_FUTURE:
      out.push_back("FUTURE");
      break;
    default:
      out.push_back("UNKNOWN");
      break;
  }
  if (n.drain()) out.push_back("DRAIN");
  if (!n.responding() && n.base_state() != pb::NODE_FUTURE && !n.powered_down())
    out.push_back("NOT_RESPONDING");
  if (n.maint()) out.push_back("MAINTENANCE");
  if (n.reserved()) out.push_back("RESERVED");
  if (n.cloud()) out.push_back("CLOUD");
  if (n.powered_down()) out.push_back("POWERED_DOWN");
  if (n.powering_up()) out.push_back("POWERING_UP");
  if (n.powering_down()) out.push_back("POWERING_DOWN");
  if (n.power_down_requested()) out.push_back("POWER_DOWN");
  if (n.reboot_requested()) out.push_back("REBOOT_REQUESTED");
  if (n.reboot_issued()) out.push_back("REBOOT_ISSUED");
  if (n.dynamic()) out.push_back("DYNAMIC_NORM");
  return out;
}

json NodeToJson(const pb::NodeRecord& n, const std::string& cluster) {
  json features = StringList({n.features().begin(), n.features().end()});
  std::string tres = "cpu=" + std::to_string(n.cpus()) +
                     ",mem=" + std::to_string(n.real_memory_mb()) +
                     "M,billing=" + std::to_string(n.cpus());
  std::string tres_used;
  if (n.alloc_cpus() > 0)
    tres_used = "cpu=" + std::to_string(n.alloc_cpus()) +
                ",mem=" + std::to_string(n.alloc_memory_mb()) + "M";
  json next_state = json::array();
  if (n.reboot_requested() || n.reboot_issued()) {
    if (n.reboot_next_state() == "DOWN")
      next_state.push_back("DOWN");
    else if (n.reboot_next_state() == "RESUME")
      next_state.push_back("RESUME");
    else
      next_state.push_back("IDLE");
  } else {
    next_state.push_back("INVALID");
  }
  return {
      {"architecture", n.arch()},
      {"burstbuffer_network_address", ""},
      {"boards", n.boards() ? n.boards() : 1},
      {"boot_time", NoValTime(n.boot_time())},
      {"tls_cert_last_renewal", NoValUnset()},
      {"cert_flags", json::array()},
      {"cluster_name", cluster},
      {"cores", n.cores_per_socket()},
      {"specialized_cores", 0},
      {"cpu_binding", 0},
      {"cpu_load", n.cpu_load()},
      {"free_mem", n.free_memory_mb() ? NoVal(n.free_memory_mb()) : NoValUnset()},
      {"cpus", n.cpus()},
      {"effective_cpus", n.cpus()},
      {"specialized_cpus", ""},
      {"energy",
       {{"average_watts", 0},
        {"base_consumed_energy", 0},
        {"consumed_energy", 0},
        {"current_watts", NoValUnset()},
        {"previous_consumed_energy", 0},
        {"last_collected", 0}}},
      {"external_sensors", json::object()},
      {"extra", n.extra()},
      {"power", json::object()},
      {"features", features},
      {"active_features", features},
      {"gpu_spec", ""},
      {"gres", n.gres()},
      {"gres_drained", "N/A"},
      {"gres_used", n.gres_used()},
      {"instance_id", ""},
      {"instance_type", ""},
      {"last_busy", NoValTime(n.last_busy())},
      {"mcs_label", ""},
      {"specialized_memory", 0},
      {"name", n.name()},
      {"next_state_after_reboot", next_state},
      {"address", n.addr()},
      {"hostname", n.hostname()},
      {"state", NodeStateArray(n)},
      {"operating_system", n.os()},
      {"owner", ""},
      {"partitions", StringList({n.partitions().begin(), n.partitions().end()})},
      {"port", n.port()},
      {"real_memory", n.real_memory_mb()},
      {"res_cores_per_gpu", 0},
      {"comment", n.comment()},
      {"reason", n.reason()},
      {"reason_changed_at", NoValTime(n.reason_time())},
      {"reason_set_by_user", n.reason().empty() ? "" : std::to_string(n.reason_uid())},
      {"resume_after", NoValUnset()},
      {"reservation", ""},
      {"alloc_memory", n.alloc_memory_mb()},
      {"alloc_cpus", n.alloc_cpus()},
      {"alloc_idle_cpus", n.cpus() >= n.alloc_cpus() ? n.cpus() - n.alloc_cpus() : 0},
      {"tres_used", tres_used},
      {"tres_weighted", static_cast<double>(n.alloc_cpus())},
      {"slurmd_start_time", NoValTime(n.slurmd_start_time())},
      {"sockets", n.sockets()},
      {"threads", n.threads_per_core()},
      {"temporary_disk", n.tmp_disk_mb()},
      {"weight", n.weight()},
      {"topology", ""},
      {"tres", tres},
      {"version", n.version()},
  };
}

Result<pb::UpdateNodeRequest> NodeUpdateToRequest(const json& body, const std::string& names,
                                                  std::vector<std::string>* warnings) {
  if (!body.is_object()) return InvalidArgument("node update must be an object");
  pb::UpdateNodeRequest req;
  bool bad = false;
  std::string target = names;
  if (target.empty()) {
    auto n = ReadStringOrList(body, "name", &bad);
    if (bad) return InvalidArgument("Invalid value for field \"name\"");
    if (n) target = *n;
  }
  if (target.empty()) return InvalidArgument("No node name given (field \"name\")");
  req.set_node_names(target);
  if (body.contains("state") && !body["state"].is_null()) {
    const json& st = body["state"];
    std::vector<std::string> states;
    if (st.is_string()) {
      states.push_back(st.get<std::string>());
    } else if (st.is_array()) {
      for (const auto& s : st) {
        if (!s.is_string()) return InvalidArgument("Invalid value for field \"state\"");
        states.push_back(s.get<std::string>());
      }
    } else {
      return InvalidArgument("Invalid value for field \"state\"");
    }
    // One state change per request, as scontrol update; the most specific word wins
    // (["DOWN", "DRAIN"] drains, ["IDLE", "RESUME"] resumes).
    static const std::vector<std::string> kOrder = {
        "DRAIN",    "FAIL",        "UNDRAIN",         "RESUME",
        "DOWN",     "IDLE",        "FUTURE",          "POWER_DOWN",
        "POWER_UP", "POWER_DRAIN", "REBOOT_CANCELED", "NOT_RESPONDING"};
    std::string chosen;
    for (const auto& want : kOrder) {
      for (auto s : states) {
        for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (s == want && chosen.empty()) chosen = s;
      }
    }
    if (chosen.empty() && !states.empty())
      return InvalidArgument("Invalid node state specified: " + states.front());
    if (chosen == "POWER_DRAIN") chosen = "POWER_DOWN_ASAP";
    if (chosen == "REBOOT_CANCELED") chosen = "CANCEL_REBOOT";
    if (chosen == "NOT_RESPONDING") chosen = "NORESP";
    req.set_state(chosen);
  }
  if (auto v = ReadString(body, "reason", &bad)) req.set_reason(*v);
  if (bad) return InvalidArgument("Invalid value for field \"reason\"");
  if (auto v = ReadStringOrList(body, "features", &bad)) (*req.mutable_fields())["Features"] = *v;
  if (bad) return InvalidArgument("Invalid value for field \"features\"");
  if (auto v = ReadStringOrList(body, "features_act", &bad))
    (*req.mutable_fields())["ActiveFeatures"] = *v;
  if (bad) return InvalidArgument("Invalid value for field \"features_act\"");
  if (auto v = ReadInt(body, "weight", &bad))
    (*req.mutable_fields())["Weight"] = std::to_string(*v);
  if (bad) return InvalidArgument("Invalid value for field \"weight\"");
  if (auto v = ReadString(body, "comment", &bad)) (*req.mutable_fields())["Comment"] = *v;
  if (bad) return InvalidArgument("Invalid value for field \"comment\"");
  if (auto v = ReadString(body, "extra", &bad)) (*req.mutable_fields())["Extra"] = *v;
  if (bad) return InvalidArgument("Invalid value for field \"extra\"");
  for (const char* unsupported :
       {"gres", "address", "hostname", "resume_after", "topology_str", "cpu_bind"}) {
    if (body.contains(unsupported) && !body[unsupported].is_null())
      warnings->push_back(std::string("field \"") + unsupported +
                          "\" cannot be updated and was ignored");
  }
  return req;
}

json PartitionToJson(const pb::PartitionRecord& p, const std::string& cluster) {
  std::string state = p.state().empty() ? "UP" : p.state();
  uint64_t def_mem = p.def_mem_per_cpu_mb(), max_mem = p.max_mem_per_cpu_mb();
  json oversub_flags = json::array();
  int oversub_jobs = 1;
  const std::string& os = p.over_subscribe();
  if (os.rfind("FORCE", 0) == 0) oversub_flags.push_back("force");
  if (auto colon = os.find(':'); colon != std::string::npos)
    oversub_jobs = std::atoi(os.c_str() + colon + 1);
  else if (os.rfind("YES", 0) == 0 || os.rfind("FORCE", 0) == 0)
    oversub_jobs = 4;
  return {
      {"nodes",
       {{"allowed_allocation", ""}, {"configured", p.nodes_expr()}, {"total", p.nodes_size()}}},
      {"accounts", {{"allowed", p.allow_accounts()}, {"deny", p.deny_accounts()}}},
      {"groups", {{"allowed", p.allow_groups()}}},
      {"qos", {{"allowed", p.allow_qos()}, {"deny", ""}, {"assigned", ""}}},
      {"alternate", ""},
      {"tres",
       {{"billing_weights", ""},
        {"configured", "cpu=" + std::to_string(p.total_cpus()) +
                           ",node=" + std::to_string(p.nodes_size()) +
                           ",billing=" + std::to_string(p.total_cpus())}}},
      {"cluster", cluster},
      {"select_type", json::array()},
      {"cpus", {{"task_binding", 0}, {"total", p.total_cpus()}}},
      {"defaults",
       {{"memory_per_cpu", def_mem},
        {"partition_memory_per_cpu", def_mem ? NoVal(def_mem) : NoValUnset()},
        {"partition_memory_per_node", NoValUnset()},
        {"time", NoValU32(p.default_time())},
        {"job", ""}}},
      {"grace_time", p.grace_time_s()},
      {"maximums",
       {{"cpus_per_node", NoValInfinite()},
        {"cpus_per_socket", NoValInfinite()},
        {"memory_per_cpu", max_mem},
        {"partition_memory_per_cpu", max_mem ? NoVal(max_mem) : NoValUnset()},
        {"partition_memory_per_node", max_mem ? NoValUnset() : NoValInfinite()},
        {"nodes", NoValU32(p.max_nodes())},
        {"shares", oversub_jobs},
        {"oversubscribe", {{"jobs", oversub_jobs}, {"flags", oversub_flags}}},
        {"time", NoValU32(p.max_time())},
        {"over_time_limit", NoValUnset()}}},
      {"minimums", {{"nodes", p.min_nodes()}}},
      {"name", p.name()},
      {"node_sets", ""},
      {"priority", {{"job_factor", p.priority_job_factor()}, {"tier", p.priority_tier()}}},
      {"timeouts", {{"resume", NoValUnset()}, {"suspend", NoValUnset()}}},
      {"topology", ""},
      {"partition", {{"state", json::array({state})}}},
      {"suspend_time", NoValUnset()},
  };
}

json ReservationToJson(const pb::ReservationRecord& r) {
  static const std::vector<std::string> kFlags = {
      "MAINT",       "DAILY",        "WEEKLY",
      "IGNORE_JOBS", "ANY_NODES",    "STATIC",
      "PART_NODES",  "OVERLAP",      "SPEC_NODES",
      "TIME_FLOAT",  "REPLACE",      "ALL_NODES",
      "PURGE_COMP",  "WEEKDAY",      "WEEKEND",
      "FLEX",        "MAGNETIC",     "HOURLY",
      "USER_DELETE", "REPLACE_DOWN", "NO_HOLD_JOBS_AFTER_END"};
  json flags = json::array();
  for (const auto& f : r.flags()) {
    std::string u;
    for (char c : f) u.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    if (u == "NO_HOLD_JOBS_AFTER") u = "NO_HOLD_JOBS_AFTER_END";
    if (std::find(kFlags.begin(), kFlags.end(), u) != kFlags.end()) flags.push_back(u);
  }
  std::vector<std::string> nodes(r.nodes().begin(), r.nodes().end());
  return {
      {"accounts", r.accounts()},
      {"burst_buffer", ""},
      {"core_count", r.core_cnt()},
      {"core_specializations", json::array()},
      {"end_time", NoValTime(r.end_time())},
      {"features", r.features()},
      {"flags", flags},
      {"groups", r.groups()},
      {"licenses", r.licenses()},
      {"max_start_delay", 0},
      {"name", r.name()},
      {"node_count", r.node_cnt()},
      {"node_list", CompressHostlist(nodes)},
      {"partition", r.partition()},
      {"purge_completed",
       {{"time", r.purge_comp_seconds() ? NoVal(r.purge_comp_seconds()) : NoValUnset()}}},
      {"start_time", NoValTime(r.start_time())},
      {"watts", NoValUnset()},
      {"tres", ""},
      {"users", r.users()},
  };
}

namespace {
std::string IsoTime(int64_t t) {
  time_t tt = static_cast<time_t>(t);
  struct tm tm;
  localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}
}  // namespace

Result<std::vector<std::string>> ReservationDescToArgs(const json& d) {
  if (!d.is_object()) return InvalidArgument("reservation description must be an object");
  std::vector<std::string> args;
  bool bad = false;
  auto name = ReadString(d, "name", &bad);
  if (bad) return InvalidArgument("Invalid value for field \"name\"");
  if (name && !name->empty()) args.push_back("ReservationName=" + *name);
  struct Str {
    const char* key;
    const char* arg;
  };
  for (const Str& s : {Str{"accounts", "Accounts"}, Str{"users", "Users"}, Str{"groups", "Groups"},
                       Str{"licenses", "Licenses"}, Str{"node_list", "Nodes"}}) {
    if (auto v = ReadStringOrList(d, s.key, &bad)) args.push_back(std::string(s.arg) + "=" + *v);
    if (bad) return InvalidArgument(std::string("Invalid value for field \"") + s.key + "\"");
  }
  for (const Str& s : {Str{"partition", "PartitionName"}, Str{"features", "Features"}}) {
    if (auto v = ReadString(d, s.key, &bad); v && !v->empty())
      args.push_back(std::string(s.arg) + "=" + *v);
    if (bad) return InvalidArgument(std::string("Invalid value for field \"") + s.key + "\"");
  }
  if (auto v = ReadInt(d, "start_time", &bad)) args.push_back("StartTime=" + IsoTime(*v));
  if (auto v = ReadInt(d, "end_time", &bad)) args.push_back("EndTime=" + IsoTime(*v));
  if (auto v = ReadInt(d, "duration", &bad, -1))
    args.push_back("Duration=" + (*v < 0 ? std::string("UNLIMITED") : std::to_string(*v)));
  if (auto v = ReadInt(d, "node_count", &bad)) args.push_back("NodeCnt=" + std::to_string(*v));
  if (auto v = ReadInt(d, "core_count", &bad)) args.push_back("CoreCnt=" + std::to_string(*v));
  if (bad) return InvalidArgument("Invalid time or count field in reservation");
  if (d.contains("flags") && d["flags"].is_array()) {
    std::string flags;
    for (const auto& f : d["flags"]) {
      if (!f.is_string()) return InvalidArgument("Invalid value for field \"flags\"");
      if (!flags.empty()) flags.push_back(',');
      flags += f.get<std::string>();
    }
    if (!flags.empty()) args.push_back("Flags=" + flags);
  }
  return args;
}

}  // namespace shoal::restd
