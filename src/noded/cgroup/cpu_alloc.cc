#include "noded/cgroup/cpu_alloc.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "common/strings.h"

namespace shoal::noded {

std::vector<int> PickCpuIds(uint32_t node_cpus, uint32_t count,
                            const std::vector<std::vector<int>>& taken) {
  if (node_cpus == 0 || count == 0) return {};
  count = std::min(count, node_cpus);
  std::map<int, int> use;  // id -> holders
  for (uint32_t i = 0; i < node_cpus; ++i) use[static_cast<int>(i)] = 0;
  for (const auto& ids : taken)
    for (int id : ids)
      if (use.count(id)) ++use[id];
  std::vector<int> picked;
  // Least used first, lowest id among equals: free ids first, in order.
  std::vector<std::pair<int, int>> order;
  for (const auto& [id, n] : use) order.push_back({n, id});
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < count && i < order.size(); ++i) picked.push_back(order[i].second);
  std::sort(picked.begin(), picked.end());
  return picked;
}

std::vector<int> HostCpus(const std::vector<int>& ids, int online_cpus) {
  std::set<int> out;
  for (int id : ids) out.insert(online_cpus > 0 ? id % online_cpus : id);
  return {out.begin(), out.end()};
}

std::string FormatCpuIds(const std::vector<int>& ids) { return JoinNumbers(ids); }

std::vector<int> ParseCpuIds(std::string_view text) {
  std::vector<int> ids;
  std::string s(text);
  const char* p = s.c_str();
  while (*p) {
    if (*p == ',' || *p == '\n' || *p == ' ') {
      ++p;
      continue;
    }
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p || v < 0) return {};
    ids.push_back(static_cast<int>(v));
    p = end;
  }
  return ids;
}

}  // namespace shoal::noded
