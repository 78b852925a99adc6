#include "ctld/reconfigure_plan.h"

#include <algorithm>
#include <cctype>

namespace shoal::ctld {

pb::NodeRecord NodeRecordFromConf(const NodeConf& nc, const SlurmConf& conf) {
  pb::NodeRecord r;
  r.set_name(nc.name);
  r.set_addr(nc.addr.empty() ? nc.name : nc.addr);
  r.set_hostname(nc.hostname.empty() ? nc.name : nc.hostname);
  r.set_port(nc.port ? nc.port : conf.SlurmdPort());
  r.set_cpus(nc.cpus ? nc.cpus : 1);
  r.set_boards(nc.boards);
  r.set_sockets(nc.sockets ? nc.sockets : r.cpus());
  r.set_cores_per_socket(nc.cores_per_socket ? nc.cores_per_socket : 1);
  r.set_threads_per_core(nc.threads_per_core ? nc.threads_per_core : 1);
  r.set_real_memory_mb(nc.real_memory_mb);
  r.set_tmp_disk_mb(nc.tmp_disk_mb);
  r.set_gres(nc.gres);
  for (const auto& f : nc.features) r.add_features(f);
  r.set_weight(nc.weight);
  const std::string& st = nc.state;
  r.set_base_state(pb::NODE_UNKNOWN);
  if (st.rfind("DOWN", 0) == 0) {
    r.set_base_state(pb::NODE_DOWN);
    r.set_configured_down(true);
    r.set_reason(nc.reason);
  } else if (st.rfind("DRAIN", 0) == 0) {
    r.set_drain(true);
    r.set_reason(nc.reason);
  } else if (st == "FUTURE") {
    r.set_base_state(pb::NODE_FUTURE);
  } else if (st == "CLOUD") {
    r.set_cloud(true);  // powered down until needed (LoadPowerConfig)
  }
  r.set_responding(false);
  return r;
}

pb::PartitionRecord PartitionRecordFromConf(const PartitionConf& pc, const SlurmConf& conf) {
  pb::PartitionRecord r;
  r.set_name(pc.name);
  r.set_nodes_expr(pc.nodes_expr);
  for (const auto& n : pc.nodes) r.add_nodes(n);
  r.set_is_default(pc.is_default);
  r.set_max_time(pc.max_time);
  r.set_default_time(pc.default_time);
  r.set_state(pc.state);
  r.set_min_nodes(pc.min_nodes);
  r.set_max_nodes(pc.max_nodes);
  r.set_priority_tier(pc.priority_tier);
  r.set_priority_job_factor(pc.priority_job_factor);
  r.set_allow_accounts(pc.allow_accounts);
  r.set_allow_groups(pc.allow_groups);
  r.set_allow_qos(pc.allow_qos);
  r.set_deny_accounts(pc.deny_accounts);
  r.set_over_subscribe(pc.over_subscribe);
  r.set_hidden(pc.hidden);
  r.set_root_only(pc.root_only);
  r.set_def_mem_per_cpu_mb(pc.def_mem_per_cpu_mb);
  r.set_max_mem_per_cpu_mb(pc.max_mem_per_cpu_mb);
  r.set_exclusive_user(pc.exclusive_user);
  r.set_grace_time_s(pc.grace_time_s);
  r.set_preempt_mode(pc.preempt_mode.empty() ? conf.Get("PreemptMode", "OFF") : pc.preempt_mode);
  return r;
}

namespace {

bool SameHardware(const pb::NodeRecord& a, const pb::NodeRecord& b) {
  return a.cpus() == b.cpus() && a.boards() == b.boards() && a.sockets() == b.sockets() &&
         a.cores_per_socket() == b.cores_per_socket() &&
         a.threads_per_core() == b.threads_per_core() && a.real_memory_mb() == b.real_memory_mb() &&
         a.tmp_disk_mb() == b.tmp_disk_mb() && a.weight() == b.weight() && a.gres() == b.gres() &&
         std::equal(a.features().begin(), a.features().end(), b.features().begin(),
                    b.features().end()) &&
         a.addr() == b.addr() && a.hostname() == b.hostname() && a.port() == b.port();
}

}  // namespace

NodeChangePlan PlanNodeChanges(const SlurmConf& old_conf, const SlurmConf& new_conf) {
  NodeChangePlan plan;
  for (size_t i = 0; i < new_conf.nodes.size(); ++i) {
    const NodeConf& n = new_conf.nodes[i];
    const NodeConf* before = old_conf.FindNode(n.name);
    if (before == nullptr) {
      plan.added.push_back(i);
    } else if (!SameHardware(NodeRecordFromConf(*before, old_conf),
                             NodeRecordFromConf(n, new_conf))) {
      plan.changed.push_back(i);
    }
  }
  for (const NodeConf& n : old_conf.nodes)
    if (new_conf.FindNode(n.name) == nullptr) plan.removed.push_back(n.name);
  return plan;
}

void ApplyNodeConfig(const pb::NodeRecord& from, pb::NodeRecord* live) {
  live->set_addr(from.addr());
  live->set_hostname(from.hostname());
  live->set_port(from.port());
  live->set_cpus(from.cpus());
  live->set_boards(from.boards());
  live->set_sockets(from.sockets());
  live->set_cores_per_socket(from.cores_per_socket());
  live->set_threads_per_core(from.threads_per_core());
  live->set_real_memory_mb(from.real_memory_mb());
  live->set_tmp_disk_mb(from.tmp_disk_mb());
  live->set_gres(from.gres());
  live->clear_features();
  for (const auto& f : from.features()) live->add_features(f);
  live->set_weight(from.weight());
}

bool HasCtldParameter(const SlurmConf& conf, std::string_view flag) {
  std::string params = conf.Get("SlurmctldParameters");
  size_t pos = 0;
  while (pos <= params.size()) {
    size_t comma = params.find(',', pos);
    if (comma == std::string::npos) comma = params.size();
    std::string_view item(params.data() + pos, comma - pos);
    if (item.size() == flag.size() &&
        std::equal(item.begin(), item.end(), flag.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
    pos = comma + 1;
  }
  return false;
}

}  // namespace shoal::ctld
