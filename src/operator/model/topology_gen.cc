#include "operator/model/topology_gen.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/hostlist.h"
#include "common/slurm_conf.h"
#include "operator/model/util.h"

namespace shoal::op {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A name topology.conf can carry as written: no hostlist brackets, commas or spaces.
bool TopoName(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

std::string AnnotationOrLabel(const Json& node, const char* field, const std::string& key) {
  const Json* m = Find(node, std::string("metadata.") + field);
  if (m == nullptr || !m->is_object()) return "";
  auto it = m->find(key);
  return it != m->end() && it->is_string() ? it->get<std::string>() : "";
}

// One SwitchName line, static or generated.
struct SwitchRec {
  std::string name;
  std::vector<std::string> nodes, switches;
  std::string extra;  // LinkSpeed=... as written
};

}  // namespace

Result<TopoLine> ParseTopologyLine(std::string_view value) {
  TopoLine out;
  bool any = false;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    std::string_view item = Trim(
        value.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    pos = comma == std::string_view::npos ? value.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      return InvalidArgument("'" + std::string(item) + "' is not <kind>:<name>");
    std::string kind = Lower(Trim(item.substr(0, colon)));
    std::string_view name = Trim(item.substr(colon + 1));
    if (kind.rfind("topo-", 0) == 0) kind = kind.substr(5);  // Slinky: topo-switch, topo-block
    std::string* slot = kind == "switch"  ? &out.switch_name
                        : kind == "block" ? &out.block
                                          : nullptr;
    if (slot == nullptr) return InvalidArgument("unknown kind '" + kind + "' (switch or block)");
    if (!TopoName(name))
      return InvalidArgument("invalid " + kind + " name '" + std::string(name) + "'");
    if (!slot->empty()) return InvalidArgument(kind + " given twice");
    *slot = std::string(name);
    any = true;
  }
  if (!any) return InvalidArgument("empty");
  return out;
}

TopologyConf GenerateTopologyConf(const TopologySpec& spec, const std::vector<TopoMember>& members,
                                  const std::vector<Json>& k8s_nodes, std::string_view origin) {
  TopologyConf out;
  const bool tree = spec.plugin == "topology/tree";
  const char* unit = tree ? "switch" : "block";
  std::set<std::string> problems;

  // Kubernetes node -> switch or block name (only nodes that name one).
  std::map<std::string, std::string> where;
  for (const Json& node : k8s_nodes) {
    std::string k8s = Str(node, "metadata.name");
    if (k8s.empty()) continue;
    std::string key = spec.node_annotation;
    std::string value = AnnotationOrLabel(node, "annotations", key);
    if (value.empty() && key != kAnnotTopologySlinky) {
      key = kAnnotTopologySlinky;
      value = AnnotationOrLabel(node, "annotations", key);
    }
    if (!value.empty()) {
      auto line = ParseTopologyLine(value);
      if (!line) {
        problems.insert("Kubernetes node " + k8s + ": annotation " + key + "='" + value +
                        "': " + line.error() + "; its workers are left out of the topology");
        continue;
      }
      std::string name = tree ? line->switch_name : line->block;
      if (name.empty()) {
        problems.insert("Kubernetes node " + k8s + ": annotation " + key + "='" + value +
                        "' names no " + unit + "; its workers are left out of the topology");
        continue;
      }
      where[k8s] = name;
      continue;
    }
    if (spec.node_label.empty()) continue;
    value = AnnotationOrLabel(node, "labels", spec.node_label);
    if (value.empty()) continue;
    if (!TopoName(value)) {
      problems.insert("Kubernetes node " + k8s + ": label " + spec.node_label + "='" + value +
                      "' is not a valid " + unit + " name; its workers are left out");
      continue;
    }
    where[k8s] = value;
  }

  // Unit name -> Shoal nodes (a set: sorted, no duplicates).
  std::map<std::string, std::set<std::string>> units;
  for (const TopoMember& m : members) {
    auto it = where.find(m.k8s_node);
    if (it == where.end() || m.shoal_node.empty()) continue;
    units[it->second].insert(m.shoal_node);
  }

  // The static lines: SwitchName lines are merged with the generated leaves below; the others
  // (BlockName, BlockSizes) pass as written. A line that does not parse is left out.
  std::vector<SwitchRec> switches;
  std::vector<std::string> other_lines;
  std::set<std::string> static_blocks;
  std::optional<uint32_t> base_size;
  {
    std::istringstream in(spec.static_conf);
    std::string raw;
    int lineno = 0;
    while (std::getline(in, raw)) {
      ++lineno;
      std::string_view l = raw;
      if (size_t h = l.find('#'); h != std::string_view::npos) l = l.substr(0, h);
      l = Trim(l);
      if (l.empty()) continue;
      auto bad = [&](const std::string& why) {
        problems.insert("spec.topology.static line " + std::to_string(lineno) + ": " + why +
                        "; line left out");
      };
      auto kv = SplitConfLine(l);
      if (!kv || kv->empty()) {
        bad(kv ? "empty" : kv.error());
        continue;
      }
      std::string first = Lower(kv->front().first);
      if (first == "switchname") {
        if (!tree) {
          bad("SwitchName needs topology/tree");
          continue;
        }
        SwitchRec s;
        s.name = kv->front().second;
        bool ok = TopoName(s.name);
        for (size_t i = 1; i < kv->size() && ok; ++i) {
          std::string k = Lower((*kv)[i].first);
          if (k == "nodes" || k == "switches") {
            auto names = ExpandHostlist((*kv)[i].second);
            if (!names) {
              bad(names.error());
              ok = false;
              break;
            }
            auto& dst = k == "nodes" ? s.nodes : s.switches;
            dst.insert(dst.end(), names->begin(), names->end());
          } else {
            s.extra += " " + (*kv)[i].first + "=" + (*kv)[i].second;
          }
        }
        if (!TopoName(s.name)) bad("invalid switch name '" + s.name + "'");
        if (!ok || !TopoName(s.name)) continue;
        if (std::any_of(switches.begin(), switches.end(),
                        [&](const SwitchRec& o) { return o.name == s.name; })) {
          bad("duplicate switch '" + s.name + "'");
          continue;
        }
        switches.push_back(std::move(s));
        continue;
      }
      if (tree) {
        bad("only SwitchName lines go with topology/tree");
        continue;
      }
      if (first == "blockname") {
        static_blocks.insert(kv->front().second);
      } else if (first == "blocksizes") {
        std::string_view v = kv->front().second;
        v = v.substr(0, v.find(','));
        uint32_t n = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || p != v.data() + v.size() || n == 0) {
          bad("invalid BlockSizes");
          continue;
        }
        base_size = n;
      } else {
        bad("unknown key '" + kv->front().first + "'");
        continue;
      }
      other_lines.emplace_back(l);
    }
  }

  std::ostringstream o;
  o << "# Generated by shoal-operator from " << origin
    << ": spec.topology and the Kubernetes nodes' " << spec.node_annotation << " annotations.\n";
  if (tree) {
    bool have_static = !switches.empty();
    std::vector<std::string> leaves;
    for (auto& [name, nodes] : units) {
      auto it = std::find_if(switches.begin(), switches.end(),
                             [&](const SwitchRec& s) { return s.name == name; });
      if (it == switches.end()) {
        switches.push_back(SwitchRec{name, {}, {}, ""});
        it = switches.end() - 1;
      }
      it->nodes.insert(it->nodes.end(), nodes.begin(), nodes.end());
      out.placed += static_cast<int>(nodes.size());
      leaves.push_back(name);
    }
    // Static upper switches may name leaves no worker sits under yet: drop those names, and
    // switches left with nothing, until every Switches= names a defined switch.
    for (bool changed = true; changed;) {
      changed = false;
      std::set<std::string> defined;
      for (const SwitchRec& s : switches) defined.insert(s.name);
      for (SwitchRec& s : switches) {
        size_t before = s.switches.size();
        s.switches.erase(std::remove_if(s.switches.begin(), s.switches.end(),
                                        [&](const std::string& c) { return !defined.count(c); }),
                         s.switches.end());
        changed |= s.switches.size() != before;
      }
      size_t before = switches.size();
      switches.erase(
          std::remove_if(switches.begin(), switches.end(),
                         [](const SwitchRec& s) { return s.nodes.empty() && s.switches.empty(); }),
          switches.end());
      changed |= switches.size() != before;
    }
    if (!have_static && leaves.size() >= 2) {
      std::string top = "shoal-top";
      for (int i = 1; units.count(top); ++i) top = "shoal-top-" + std::to_string(i);
      switches.push_back(SwitchRec{top, {}, leaves, ""});
    }
    for (const SwitchRec& s : switches) {
      o << "SwitchName=" << s.name;
      if (!s.nodes.empty()) o << " Nodes=" << CompressHostlist(s.nodes);
      if (!s.switches.empty()) o << " Switches=" << CompressHostlist(s.switches);
      o << s.extra << "\n";
    }
  } else {
    for (const std::string& l : other_lines) o << l << "\n";
    if (!base_size) {
      for (const auto& [name, nodes] : units)
        if (!static_blocks.count(name) && (!base_size || nodes.size() < *base_size))
          base_size = static_cast<uint32_t>(nodes.size());
    }
    for (const auto& [name, nodes] : units) {
      if (static_blocks.count(name)) {
        problems.insert("block " + name + " is defined in spec.topology.static; its workers " +
                        CompressHostlist({nodes.begin(), nodes.end()}) + " are left out");
        continue;
      }
      if (nodes.size() != *base_size) {
        problems.insert("block " + name + " has " + std::to_string(nodes.size()) +
                        " workers, the base block size is " + std::to_string(*base_size) +
                        "; left out");
        continue;
      }
      o << "BlockName=" << name << " Nodes=" << CompressHostlist({nodes.begin(), nodes.end()})
        << "\n";
      out.placed += static_cast<int>(nodes.size());
    }
  }
  out.text = o.str();
  out.problems.assign(problems.begin(), problems.end());
  return out;
}

}  // namespace shoal::op
