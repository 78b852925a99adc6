// Network topology in the controller: topology.conf for topology/tree and topology/block, the
// topology-aware node order handed to the planner, --switches, and scontrol show topology. The
// choice itself is pure logic in sched/topology; this file adapts it to the controller's state.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/hostlist.h"
#include "common/log.h"
#include "ctld/controller.h"

namespace shoal::ctld {

using sched::Topology;

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// SchedulerParameters=...,max_switch_wait=N,...: seconds, or nullopt when absent.
Result<std::optional<int64_t>> MaxSwitchWait(const std::string& params) {
  size_t pos = 0;
  while (pos <= params.size()) {
    size_t comma = params.find(',', pos);
    std::string item =
        params.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? params.size() + 1 : comma + 1;
    constexpr std::string_view kKey = "max_switch_wait=";
    if (Lower(item.substr(0, kKey.size())) != kKey) continue;
    std::string_view v(item);
    v.remove_prefix(kKey.size());
    int64_t s = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || s < 0)
      return InvalidArgument("invalid max_switch_wait '" + std::string(v) + "'");
    return std::optional<int64_t>(s);
  }
  return std::optional<int64_t>();
}

}  // namespace

Status Controller::LoadTopology() {
  if (auto w = MaxSwitchWait(conf_.Get("SchedulerParameters")); !w) {
    LogError("SchedulerParameters: %s; using 300", w.error().c_str());
  } else if (*w) {
    max_switch_wait_ = **w;
  }

  std::string plugin = Lower(conf_.Get("TopologyPlugin"));
  Topology::Kind want = Topology::Kind::kNone;
  if (plugin == "topology/tree") {
    want = Topology::Kind::kTree;
  } else if (plugin == "topology/block") {
    want = Topology::Kind::kBlock;
  } else if (!plugin.empty() && plugin != "topology/none" && plugin != "topology/default") {
    // topology/3d_torus, hypercube...: no allocation preference, as if none were configured.
    LogError("TopologyPlugin=%s is not supported; using topology/none", plugin.c_str());
  }
  topology_text_.clear();
  topology_path_.clear();
  if (want == Topology::Kind::kNone) return Status::Ok();
  topology_plugin_ = plugin;

  // "The file will always be located in the same directory as the slurm.conf file."
  const std::string& conf_path = options_.conf_path;
  size_t slash = conf_path.rfind('/');
  std::string path = slash == std::string::npos ? std::string("topology.conf")
                                                : conf_path.substr(0, slash + 1) + "topology.conf";
  std::ifstream in(path);
  if (!in) return InvalidArgument(path + ": cannot read: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  topology_text_ = text.str();
  topology_path_ = path;
  return ParseTopology(true);
}

Status Controller::ParseTopology(bool log) {
  Topology::Kind want =
      topology_plugin_ == "topology/tree" ? Topology::Kind::kTree : Topology::Kind::kBlock;
  const std::string& path = topology_path_;
  std::vector<std::string> names;
  names.reserve(nodes_.size());
  for (const Node& n : nodes_) names.push_back(n.deleted ? std::string() : n.rec.name());
  // Dynamic nodes (shoald -Z, the Kubernetes operator's workers) are named in topology.conf
  // before they register and may be gone: not an error, they join when they come.
  sched::TopoParseOptions options;
  options.allow_unknown_nodes = true;
  auto topo = sched::ParseTopologyConf(topology_text_, names, path, options);
  if (!topo) return topo.status();
  // The file must describe what the plugin reads: switches for tree, blocks for block.
  if (topo->kind != Topology::Kind::kNone && topo->kind != want) {
    int line = want == Topology::Kind::kTree
                   ? (topo->blocks.empty() ? 1 : topo->blocks.front().line)
                   : (topo->switches.empty() ? 1 : topo->switches.front().line);
    return InvalidArgument(path + ":" + std::to_string(line) + ": " +
                           (want == Topology::Kind::kTree ? "BlockName" : "SwitchName") +
                           " is not valid with TopologyPlugin=" + topology_plugin_);
  }
  if (log) {
    if (topo->kind == Topology::Kind::kNone)
      LogError("%s defines no %s; jobs are placed without topology", path.c_str(),
               want == Topology::Kind::kTree ? "switches" : "blocks");
    for (const auto& w : topo->warnings) LogError("warning: %s", w.c_str());
    if (!topo->unknown_nodes.empty())
      LogInfo("%s: nodes %s are not defined yet; they join the topology when they register",
              path.c_str(), CompressHostlist(topo->unknown_nodes).c_str());
  }
  topology_ = std::move(*topo);
  if (log)
    LogInfo("%s: %zu switches, %zu blocks", topology_plugin_.c_str(), topology_.switches.size(),
            topology_.blocks.size());
  return Status::Ok();
}

void Controller::TopologyNodeChanged(int idx, bool added) {
  if (topology_plugin_.empty() || idx < 0 || static_cast<size_t>(idx) >= nodes_.size()) return;
  bool named;
  if (added) {
    named = std::binary_search(topology_.unknown_nodes.begin(), topology_.unknown_nodes.end(),
                               nodes_[static_cast<size_t>(idx)].rec.name());
  } else {
    size_t i = static_cast<size_t>(idx);
    named = (i < topology_.node_leaf.size() && topology_.node_leaf[i] >= 0) ||
            (i < topology_.node_block.size() && topology_.node_block[i] >= 0);
  }
  if (!named) return;
  // The same text parsed before with one node more or less: it cannot fail, but keep the
  // topology in force if it somehow does.
  if (Status s = ParseTopology(false); !s.ok())
    LogError("topology: %s; keeping the previous topology", s.message().c_str());
}

std::vector<int> Controller::TopologyOrder(const pb::JobRecord& job,
                                           const std::vector<int>& candidates) {
  if (topology_.kind == Topology::Kind::kNone) return {};
  uint32_t needed = job.spec().min_nodes();
  if (needed <= 1) return {};
  const sched::JobShape& shape = ShapeOfJob(job);
  // A lower bound of what the job needs on each node; PlaceJob still has the last word, this
  // only keeps the topology from choosing nodes that are plainly full.
  uint32_t per_node =
      std::max<uint32_t>(shape.cpus_per_task, 1) * std::max<uint32_t>(shape.ntasks_per_node, 1);
  std::vector<int> room, full;
  for (int idx : candidates) {
    if (idx < 0 || static_cast<size_t>(idx) >= views_.size()) continue;
    const sched::NodeView& v = views_[static_cast<size_t>(idx)];
    bool fits = v.available && !v.exclusive_in_use && v.alloc_cpus < v.cpus &&
                v.cpus - v.alloc_cpus >= std::min(per_node, v.cpus) &&
                (!shape.exclusive || v.num_jobs == 0);
    (fits ? room : full).push_back(idx);
  }
  if (!sched::SelectNodes(topology_, room, needed)) return {};
  std::vector<int> order = sched::OrderCandidates(topology_, room, needed);
  // Busy nodes last, so the backfill planner can still reserve them for a later start.
  order.insert(order.end(), full.begin(), full.end());
  return order;
}

bool Controller::SwitchesAllowStart(const pb::JobRecord& job,
                                    const std::vector<int>& placement_nodes, int64_t now) const {
  // --switches counts leaf switches: meaningful for topology/tree only.
  if (job.spec().switches() == 0 || topology_.kind != Topology::Kind::kTree) return true;
  std::vector<int> leaves;
  for (int idx : placement_nodes) {
    if (idx < 0 || static_cast<size_t>(idx) >= topology_.node_leaf.size()) continue;
    int leaf = topology_.node_leaf[static_cast<size_t>(idx)];
    if (leaf >= 0) leaves.push_back(leaf);
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  sched::SwitchRequest req;
  req.max_switches = job.spec().switches();
  // sbatch stores the wait in seconds plus one, and 0 when no time was given: then the
  // cluster's max_switch_wait applies. A longer wait is capped by it, as Slurm documents.
  uint32_t wait = job.spec().switches_wait_s();
  req.max_wait_s = wait == 0 ? -1 : static_cast<int64_t>(wait) - 1;
  int64_t since = job.eligible_time() ? job.eligible_time() : job.submit_time();
  return sched::SwitchLimitAllowsStart(req, static_cast<uint32_t>(leaves.size()), since, now,
                                       max_switch_wait_);
}

pb::Response Controller::QueryTopology() const {
  pb::Response resp;
  auto* out = resp.mutable_topology_query();
  if (topology_.kind == Topology::Kind::kNone) return resp;
  out->set_plugin(topology_plugin_);
  auto node_list = [this](const std::vector<int>& idx) {
    std::vector<std::string> names;
    for (int i : idx)
      if (i >= 0 && static_cast<size_t>(i) < nodes_.size())
        names.push_back(nodes_[static_cast<size_t>(i)].rec.name());
    return CompressHostlist(names);
  };
  for (const auto& s : topology_.switches) {
    auto* r = out->add_switches();
    r->set_name(s.name);
    r->set_level(static_cast<uint32_t>(s.level));
    r->set_link_speed(s.link_speed);
    // A leaf lists its nodes as written; a higher switch every node below it, in node order.
    r->set_nodes(node_list(s.children.empty() ? s.nodes : s.subtree));
    std::vector<std::string> children;
    for (int c : s.children) children.push_back(topology_.switches[static_cast<size_t>(c)].name);
    r->set_switches(CompressHostlist(children));
  }
  for (const auto& b : topology_.blocks) {
    auto* r = out->add_blocks();
    r->set_name(b.name);
    r->set_nodes(node_list(b.nodes));
  }
  for (uint32_t size : topology_.block_sizes) out->add_block_sizes(size);
  return resp;
}

}  // namespace shoal::ctld
