#include "sched/topology.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <set>

#include "common/hostlist.h"
#include "common/slurm_conf.h"
#include "common/units.h"

namespace shoal::sched {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct RawSwitch {
  std::string name, nodes, switches, link_speed;
  int line = 0;
};

Status LineError(std::string_view path, int line, const std::string& what) {
  return InvalidArgument(std::string(path) + ":" + std::to_string(line) + ": " + what);
}

bool IsPow2(uint32_t v) { return v && !(v & (v - 1)); }

}  // namespace

Result<Topology> ParseTopologyConf(std::string_view text,
                                   const std::vector<std::string>& node_names,
                                   std::string_view path, const TopoParseOptions& options) {
  Topology topo;
  std::map<std::string, int, std::less<>> node_idx;
  for (size_t i = 0; i < node_names.size(); ++i)
    if (!node_names[i].empty()) node_idx[node_names[i]] = static_cast<int>(i);
  std::set<std::string> unknown;
  std::map<std::string, size_t> block_written;  // block name -> names written
  topo.node_leaf.assign(node_names.size(), -1);
  topo.node_block.assign(node_names.size(), -1);

  std::vector<RawSwitch> raw;
  std::string block_sizes_text;
  int block_sizes_line = 0;
  auto resolve_nodes = [&](const std::string& expr, int line) -> Result<std::vector<int>> {
    auto names = ExpandHostlist(expr);
    if (!names) return LineError(path, line, names.error());
    std::vector<int> out;
    for (const auto& n : *names) {
      auto it = node_idx.find(n);
      if (it == node_idx.end()) {
        if (!options.allow_unknown_nodes) return LineError(path, line, "unknown node '" + n + "'");
        unknown.insert(n);
        continue;
      }
      out.push_back(it->second);
    }
    return out;
  };

  // Logical lines: '#' comments, '\' continuations.
  std::vector<std::pair<int, std::string>> lines;
  {
    int lineno = 0;
    std::string pending;
    int pending_line = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view l =
          text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
      ++lineno;
      if (size_t h = l.find('#'); h != std::string_view::npos) l = l.substr(0, h);
      while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.remove_suffix(1);
      if (pending.empty()) pending_line = lineno;
      if (!l.empty() && l.back() == '\\') {
        l.remove_suffix(1);
        pending += std::string(l) + " ";
      } else {
        pending += std::string(l);
        lines.emplace_back(pending_line, pending);
        pending.clear();
      }
      if (nl == std::string_view::npos) break;
      pos = nl + 1;
    }
  }

  for (auto& [lineno, l] : lines) {
    bool blank = std::all_of(l.begin(), l.end(),
                             [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
    if (blank) continue;
    auto kv = SplitConfLine(l);
    if (!kv) return LineError(path, lineno, kv.error());
    if (kv->empty()) continue;
    std::string first = Lower(kv->front().first);
    if (first == "switchname") {
      if (topo.kind == Topology::Kind::kBlock)
        return LineError(path, lineno, "SwitchName cannot be mixed with BlockName");
      topo.kind = Topology::Kind::kTree;
      RawSwitch s;
      s.name = kv->front().second;
      s.line = lineno;
      for (size_t i = 1; i < kv->size(); ++i) {
        std::string k = Lower((*kv)[i].first);
        if (k == "nodes") {
          s.nodes = (*kv)[i].second;
        } else if (k == "switches") {
          s.switches = (*kv)[i].second;
        } else if (k == "linkspeed") {
          s.link_speed = (*kv)[i].second;
        } else {
          return LineError(path, lineno, "unknown key '" + (*kv)[i].first + "'");
        }
      }
      if (s.name.empty()) return LineError(path, lineno, "SwitchName is empty");
      if (s.nodes.empty() && s.switches.empty())
        return LineError(path, lineno, "switch '" + s.name + "' needs Nodes= or Switches=");
      raw.push_back(std::move(s));
    } else if (first == "blockname") {
      if (topo.kind == Topology::Kind::kTree)
        return LineError(path, lineno, "BlockName cannot be mixed with SwitchName");
      topo.kind = Topology::Kind::kBlock;
      TopoBlock b;
      b.name = kv->front().second;
      b.line = lineno;
      std::string nodes;
      for (size_t i = 1; i < kv->size(); ++i) {
        std::string k = Lower((*kv)[i].first);
        if (k == "nodes") {
          nodes = (*kv)[i].second;
        } else {
          return LineError(path, lineno, "unknown key '" + (*kv)[i].first + "'");
        }
      }
      if (nodes.empty()) return LineError(path, lineno, "block '" + b.name + "' needs Nodes=");
      for (const auto& o : topo.blocks)
        if (o.name == b.name) return LineError(path, lineno, "duplicate block '" + b.name + "'");
      auto idx = resolve_nodes(nodes, lineno);
      if (!idx) return idx.status();
      if (auto all = ExpandHostlist(nodes)) block_written[b.name] = all->size();
      for (int n : *idx) {
        if (topo.node_block[static_cast<size_t>(n)] != -1)
          return LineError(path, lineno,
                           "node '" + node_names[static_cast<size_t>(n)] + "' is in two blocks");
        topo.node_block[static_cast<size_t>(n)] = static_cast<int>(topo.blocks.size());
      }
      b.nodes = std::move(*idx);
      topo.blocks.push_back(std::move(b));
    } else if (first == "blocksizes") {
      if (topo.kind == Topology::Kind::kTree)
        return LineError(path, lineno, "BlockSizes cannot be mixed with SwitchName");
      topo.kind = Topology::Kind::kBlock;
      block_sizes_text = kv->front().second;
      block_sizes_line = lineno;
    } else {
      return LineError(path, lineno, "unknown key '" + kv->front().first + "'");
    }
  }

  if (topo.kind == Topology::Kind::kTree) {
    std::map<std::string, int, std::less<>> sw_idx;
    for (auto& r : raw) {
      if (sw_idx.count(r.name)) return LineError(path, r.line, "duplicate switch '" + r.name + "'");
      sw_idx[r.name] = static_cast<int>(topo.switches.size());
      TopoSwitch s;
      s.name = r.name;
      s.line = r.line;
      s.link_speed = r.link_speed;
      topo.switches.push_back(std::move(s));
    }
    for (size_t i = 0; i < raw.size(); ++i) {
      TopoSwitch& s = topo.switches[i];
      if (!raw[i].nodes.empty()) {
        auto idx = resolve_nodes(raw[i].nodes, raw[i].line);
        if (!idx) return idx.status();
        for (int n : *idx) {
          if (topo.node_leaf[static_cast<size_t>(n)] != -1)
            return LineError(
                path, raw[i].line,
                "node '" + node_names[static_cast<size_t>(n)] + "' is in two leaf switches");
          topo.node_leaf[static_cast<size_t>(n)] = static_cast<int>(i);
        }
        s.nodes = std::move(*idx);
      }
      if (!raw[i].switches.empty()) {
        auto names = ExpandHostlist(raw[i].switches);
        if (!names) return LineError(path, raw[i].line, names.error());
        for (const auto& c : *names) {
          auto it = sw_idx.find(c);
          if (it == sw_idx.end())
            return LineError(path, raw[i].line, "switch '" + c + "' is not defined");
          if (it->second == static_cast<int>(i))
            return LineError(path, raw[i].line, "switch loop through '" + c + "'");
          TopoSwitch& child = topo.switches[static_cast<size_t>(it->second)];
          if (child.parent != -1 && child.parent != static_cast<int>(i))
            return LineError(path, raw[i].line,
                             "switch '" + c + "' has two parents ('" +
                                 topo.switches[static_cast<size_t>(child.parent)].name + "', '" +
                                 s.name + "')");
          child.parent = static_cast<int>(i);
          s.children.push_back(it->second);
        }
      }
    }
    // Levels and subtrees by DFS; a switch seen again on the current path is a loop.
    std::vector<int> state(topo.switches.size(), 0);  // 0 new, 1 on path, 2 done
    std::function<Status(int)> visit = [&](int i) -> Status {
      auto& s = topo.switches[static_cast<size_t>(i)];
      if (state[static_cast<size_t>(i)] == 2) return Status::Ok();
      if (state[static_cast<size_t>(i)] == 1)
        return LineError(path, s.line, "switch loop through '" + s.name + "'");
      state[static_cast<size_t>(i)] = 1;
      int level = 0;
      std::vector<int> sub = s.nodes;
      for (int c : s.children) {
        if (Status st = visit(c); !st.ok()) return st;
        auto& child = topo.switches[static_cast<size_t>(c)];
        level = std::max(level, child.level + 1);
        sub.insert(sub.end(), child.subtree.begin(), child.subtree.end());
      }
      std::sort(sub.begin(), sub.end());
      sub.erase(std::unique(sub.begin(), sub.end()), sub.end());
      s.level = level;
      s.subtree = std::move(sub);
      state[static_cast<size_t>(i)] = 2;
      return Status::Ok();
    };
    for (size_t i = 0; i < topo.switches.size(); ++i)
      if (Status st = visit(static_cast<int>(i)); !st.ok()) return st;
    // A cycle with no entry from a root is caught above too (every switch is visited).
    std::vector<std::string> loose;
    for (size_t n = 0; n < node_names.size(); ++n)
      if (topo.node_leaf[n] == -1 && !node_names[n].empty()) loose.push_back(node_names[n]);
    if (!loose.empty())
      topo.warnings.push_back(std::string(path) + ": nodes " + CompressHostlist(loose) +
                              " are not connected to any switch");
  } else if (topo.kind == Topology::Kind::kBlock) {
    if (topo.blocks.empty()) return LineError(path, block_sizes_line, "BlockSizes without blocks");
    uint32_t base = static_cast<uint32_t>(topo.blocks.front().nodes.size());
    if (!block_sizes_text.empty()) {
      size_t pos = 0;
      while (pos <= block_sizes_text.size()) {
        size_t c = block_sizes_text.find(',', pos);
        std::string_view item(block_sizes_text);
        item = item.substr(pos, c == std::string::npos ? item.size() - pos : c - pos);
        uint32_t v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v == 0)
          return LineError(path, block_sizes_line,
                           "invalid BlockSizes value '" + std::string(item) + "'");
        topo.block_sizes.push_back(v);
        if (c == std::string::npos) break;
        pos = c + 1;
      }
      std::sort(topo.block_sizes.begin(), topo.block_sizes.end());
      base = topo.block_sizes.front();
      for (uint32_t v : topo.block_sizes)
        if (v % base || !IsPow2(v / base))
          return LineError(path, block_sizes_line,
                           "BlockSizes value " + std::to_string(v) +
                               " is not a power-of-two multiple of the base block size " +
                               std::to_string(base));
    }
    auto written = [&](const TopoBlock& b) {
      auto it = block_written.find(b.name);
      return it == block_written.end() ? b.nodes.size() : it->second;
    };
    if (block_sizes_text.empty()) base = static_cast<uint32_t>(written(topo.blocks.front()));
    for (const auto& b : topo.blocks)
      if (written(b) != base)
        return LineError(path, b.line,
                         "block '" + b.name + "' has " + std::to_string(written(b)) +
                             " nodes, the base block size is " + std::to_string(base));
    if (topo.block_sizes.empty()) {
      for (uint64_t k = 1; k <= topo.blocks.size(); k *= 2)
        topo.block_sizes.push_back(static_cast<uint32_t>(k * base));
    }
    std::vector<std::string> loose;
    for (size_t n = 0; n < node_names.size(); ++n)
      if (topo.node_block[n] == -1 && !node_names[n].empty()) loose.push_back(node_names[n]);
    if (!loose.empty())
      topo.warnings.push_back(std::string(path) + ": nodes " + CompressHostlist(loose) +
                              " are not in any block");
  }
  topo.unknown_nodes.assign(unknown.begin(), unknown.end());
  return topo;
}

namespace {

// Candidates grouped per unit (leaf switch or block); picks whole groups fullest first and the
// last one best-fit. Returns the chosen nodes and the number of groups used.
std::pair<std::vector<int>, uint32_t> FillGroups(std::vector<std::vector<int>> groups,
                                                 uint32_t needed) {
  std::vector<int> out;
  uint32_t used = 0;
  // Stable order: by size descending, then by first node.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<bool> taken(groups.size(), false);
  while (out.size() < needed) {
    uint32_t remaining = needed - static_cast<uint32_t>(out.size());
    int pick = -1;
    // Best fit: the smallest group that finishes the job on its own.
    for (size_t i = 0; i < groups.size(); ++i) {
      if (taken[i] || groups[i].size() < remaining) continue;
      if (pick == -1 || groups[i].size() < groups[static_cast<size_t>(pick)].size())
        pick = static_cast<int>(i);
    }
    if (pick == -1) {  // none does: the largest one
      for (size_t i = 0; i < groups.size(); ++i)
        if (!taken[i] && !groups[i].empty()) {
          pick = static_cast<int>(i);
          break;
        }
    }
    if (pick == -1) break;
    taken[static_cast<size_t>(pick)] = true;
    ++used;
    const auto& g = groups[static_cast<size_t>(pick)];
    for (int n : g) {
      if (out.size() >= needed) break;
      out.push_back(n);
    }
  }
  std::sort(out.begin(), out.end());
  return {out, used};
}

}  // namespace

std::optional<TopoChoice> SelectTree(const Topology& topo, const std::vector<int>& candidates,
                                     uint32_t needed) {
  if (needed == 0) return TopoChoice{};
  std::vector<bool> cand(topo.node_leaf.size(), false);
  for (int n : candidates)
    if (n >= 0 && static_cast<size_t>(n) < cand.size() &&
        topo.node_leaf[static_cast<size_t>(n)] >= 0)
      cand[static_cast<size_t>(n)] = true;
  int best = -1;
  size_t best_count = 0;
  for (size_t i = 0; i < topo.switches.size(); ++i) {
    size_t count = 0;
    for (int n : topo.switches[i].subtree) count += cand[static_cast<size_t>(n)] ? 1 : 0;
    if (count < needed) continue;
    if (best == -1) {
      best = static_cast<int>(i);
      best_count = count;
      continue;
    }
    const auto& b = topo.switches[static_cast<size_t>(best)];
    if (topo.switches[i].level < b.level ||
        (topo.switches[i].level == b.level && count < best_count)) {
      best = static_cast<int>(i);
      best_count = count;
    }
  }
  if (best == -1) return std::nullopt;
  // Leaf groups under the chosen switch.
  std::map<int, std::vector<int>> per_leaf;
  for (int n : topo.switches[static_cast<size_t>(best)].subtree)
    if (cand[static_cast<size_t>(n)]) per_leaf[topo.node_leaf[static_cast<size_t>(n)]].push_back(n);
  std::vector<std::vector<int>> groups;
  for (auto& [leaf, nodes] : per_leaf) groups.push_back(std::move(nodes));
  auto [nodes, used] = FillGroups(std::move(groups), needed);
  if (nodes.size() < needed) return std::nullopt;
  TopoChoice c;
  c.nodes = std::move(nodes);
  c.leaf_switches = used;
  c.top_switch = best;
  return c;
}

std::optional<TopoChoice> SelectBlock(const Topology& topo, const std::vector<int>& candidates,
                                      uint32_t needed) {
  if (needed == 0) return TopoChoice{};
  if (topo.blocks.empty() || topo.block_sizes.empty()) return std::nullopt;
  std::vector<std::vector<int>> per_block(topo.blocks.size());
  {
    std::vector<bool> cand(topo.node_block.size(), false);
    for (int n : candidates)
      if (n >= 0 && static_cast<size_t>(n) < cand.size()) cand[static_cast<size_t>(n)] = true;
    for (size_t b = 0; b < topo.blocks.size(); ++b)
      for (int n : topo.blocks[b].nodes)
        if (cand[static_cast<size_t>(n)]) per_block[b].push_back(n);
  }
  uint32_t base = topo.block_sizes.front();
  // Levels from the smallest that could hold the job.
  for (size_t li = 0; li < topo.block_sizes.size(); ++li) {
    uint32_t size = topo.block_sizes[li];
    bool last = li + 1 == topo.block_sizes.size();
    if (size < needed && !last) continue;
    size_t per_group = size / base;  // blocks per aligned group
    int best = -1;
    size_t best_count = 0;
    std::vector<size_t> counts;
    for (size_t g = 0; g * per_group < topo.blocks.size(); ++g) {
      size_t count = 0;
      for (size_t b = g * per_group; b < std::min(topo.blocks.size(), (g + 1) * per_group); ++b)
        count += per_block[b].size();
      counts.push_back(count);
      if (count >= needed && (best == -1 || count < best_count)) {
        best = static_cast<int>(g);
        best_count = count;
      }
    }
    if (best != -1) {
      std::vector<std::vector<int>> groups;
      for (size_t b = static_cast<size_t>(best) * per_group;
           b < std::min(topo.blocks.size(), (static_cast<size_t>(best) + 1) * per_group); ++b)
        groups.push_back(per_block[b]);
      auto [nodes, used] = FillGroups(std::move(groups), needed);
      TopoChoice c;
      c.nodes = std::move(nodes);
      c.leaf_switches = used;
      c.level_size = size;
      return c;
    }
    if (last) {
      // Larger than any level: span top-level groups, fullest first.
      std::vector<std::vector<int>> groups;
      for (size_t g = 0; g < counts.size(); ++g) {
        std::vector<int> nodes;
        for (size_t b = g * per_group; b < std::min(topo.blocks.size(), (g + 1) * per_group); ++b)
          nodes.insert(nodes.end(), per_block[b].begin(), per_block[b].end());
        groups.push_back(std::move(nodes));
      }
      auto [nodes, used] = FillGroups(std::move(groups), needed);
      if (nodes.size() < needed) return std::nullopt;
      std::set<int> blocks_used;
      for (int n : nodes) blocks_used.insert(topo.node_block[static_cast<size_t>(n)]);
      TopoChoice c;
      c.nodes = std::move(nodes);
      c.leaf_switches = static_cast<uint32_t>(blocks_used.size());
      c.level_size = size;
      return c;
    }
  }
  return std::nullopt;
}

std::optional<TopoChoice> SelectNodes(const Topology& topo, const std::vector<int>& candidates,
                                      uint32_t needed) {
  switch (topo.kind) {
    case Topology::Kind::kTree:
      return SelectTree(topo, candidates, needed);
    case Topology::Kind::kBlock:
      return SelectBlock(topo, candidates, needed);
    case Topology::Kind::kNone:
      break;
  }
  if (candidates.size() < needed) return std::nullopt;
  TopoChoice c;
  c.nodes.assign(candidates.begin(), candidates.begin() + needed);
  std::sort(c.nodes.begin(), c.nodes.end());
  return c;
}

std::vector<int> OrderCandidates(const Topology& topo, const std::vector<int>& candidates,
                                 uint32_t needed) {
  if (topo.kind == Topology::Kind::kNone) return candidates;
  auto choice = SelectNodes(topo, candidates, needed);
  if (!choice) return candidates;
  std::vector<int> out = choice->nodes;
  std::set<int> chosen(out.begin(), out.end());
  for (int n : candidates)
    if (!chosen.count(n)) out.push_back(n);
  return out;
}

Result<SwitchRequest> ParseSwitches(std::string_view text) {
  SwitchRequest r;
  std::string_view count = text, wait;
  if (size_t at = text.find('@'); at != std::string_view::npos) {
    count = text.substr(0, at);
    wait = text.substr(at + 1);
  }
  auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), r.max_switches);
  if (count.empty() || ec != std::errc() || p != count.data() + count.size())
    return InvalidArgument("Invalid --switches specification: " + std::string(text));
  if (!wait.empty()) {
    auto s = ParseDurationSeconds(wait);
    if (!s || *s < 0)
      return InvalidArgument("Invalid --switches specification: " + std::string(text));
    r.max_wait_s = *s;
  } else {
    r.max_wait_s = -1;  // not given: the cluster cap applies
  }
  return r;
}

bool SwitchLimitAllowsStart(const SwitchRequest& req, uint32_t leaf_switches, int64_t eligible_time,
                            int64_t now, int64_t max_switch_wait) {
  if (req.max_switches == 0 || leaf_switches <= req.max_switches) return true;
  int64_t wait = req.max_wait_s < 0 ? max_switch_wait : std::min(req.max_wait_s, max_switch_wait);
  return now - eligible_time >= wait;
}

}  // namespace shoal::sched
