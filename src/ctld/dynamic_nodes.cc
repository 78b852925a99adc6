#include "ctld/dynamic_nodes.h"

#include <cctype>
#include <string>

namespace shoal::ctld {
namespace {

constexpr const char* kSource = "create_node";

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

Result<std::vector<NodeConf>> ParseCreateNodeSpec(std::string_view spec) {
  if (spec.find('\n') != std::string_view::npos)
    return InvalidArgument("Node configuration must be one line");
  auto pairs = SplitConfLine(spec);
  if (!pairs.ok()) return pairs.status();
  if (pairs->empty() || !IEquals(pairs->front().first, "NodeName"))
    return InvalidArgument("Invalid node configuration: expected NodeName=<name> ...");
  if (IEquals(pairs->front().second, "DEFAULT"))
    return InvalidArgument("Invalid node name specified: DEFAULT");
  // No Include on a node line: the reader is never asked for a file.
  auto no_files = [](const std::string& path) -> Result<std::string> {
    return InvalidArgument("cannot read " + path);
  };
  auto no_glob = [](const std::string& p) { return std::vector<std::string>{p}; };
  auto conf = ParseSlurmConf(std::string(spec) + "\n", kSource, no_files, no_glob);
  if (!conf.ok()) {
    // "create_node:1: what" -> "what": the spec is not a file.
    std::string msg = conf.status().message();
    std::string prefix = std::string(kSource) + ":1: ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    return InvalidArgument(msg);
  }
  if (conf->nodes.empty()) return InvalidArgument("Invalid node configuration: no node named");
  return std::move(conf->nodes);
}

bool DynamicNodeInPartition(std::string_view nodes_expr, const std::vector<NodeSetConf>& nodesets,
                            const std::vector<std::string>& features) {
  // The expression's top-level names: commas inside a hostlist's brackets do not split.
  std::vector<std::string_view> names;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= nodes_expr.size(); ++i) {
    if (i == nodes_expr.size() || (nodes_expr[i] == ',' && depth == 0)) {
      names.push_back(nodes_expr.substr(start, i - start));
      start = i + 1;
    } else if (nodes_expr[i] == '[') {
      ++depth;
    } else if (nodes_expr[i] == ']' && depth > 0) {
      --depth;
    }
  }
  for (std::string_view name : names) {
    if (IEquals(name, "ALL")) return true;
    for (const NodeSetConf& set : nodesets) {
      if (set.name != name || set.feature.empty()) continue;
      for (const auto& f : features)
        if (f == set.feature) return true;
    }
  }
  return false;
}

}  // namespace shoal::ctld
