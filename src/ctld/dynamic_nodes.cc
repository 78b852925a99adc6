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

}  // namespace shoal::ctld
