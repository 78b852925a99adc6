#include "common/gres_conf.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/hostlist.h"
#include "common/strings.h"
#include "common/units.h"

namespace shoal {
namespace {

bool IEquals(std::string_view a, std::string_view b) { return AsciiLower(a) == AsciiLower(b); }

// Whitespace-separated tokens; a double-quoted stretch keeps its spaces (quotes dropped).
std::vector<std::string> Tokens(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
      if (any) out.push_back(std::move(cur));
      cur.clear();
      any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  if (any) out.push_back(std::move(cur));
  return out;
}

// "0-3,8,10-11" (Cores=): digits, commas and ranges only.
bool ValidCpuList(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != ',' && c != '-') return false;
  return s.front() != ',' && s.back() != ',' && s.front() != '-' && s.back() != '-';
}

bool ValidAutoDetect(std::string_view v) {
  return v == "nvml" || v == "nvidia" || v == "rsmi" || v == "off" || v == "oneapi";
}

}  // namespace

Result<GresConf> ParseGresConf(std::string_view text, std::string_view path) {
  GresConf conf;
  std::string where_file(path.empty() ? "gres.conf" : path);
  // Lines joined on a trailing backslash, as slurm.conf does.
  std::vector<std::pair<int, std::string>> lines;
  {
    int no = 0;
    std::string pending;
    int pending_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string_view raw = text.substr(pos, nl - pos);
      pos = nl + 1;
      ++no;
      size_t hash = raw.find('#');
      if (hash != std::string_view::npos) raw = raw.substr(0, hash);
      while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ' || raw.back() == '\t'))
        raw.remove_suffix(1);
      if (pending.empty()) pending_no = no;
      if (!raw.empty() && raw.back() == '\\') {
        raw.remove_suffix(1);
        pending += std::string(raw) + " ";
        continue;
      }
      pending += raw;
      lines.emplace_back(pending_no, std::move(pending));
      pending.clear();
      if (nl == text.size()) break;
    }
    if (!pending.empty()) lines.emplace_back(pending_no, std::move(pending));
  }

  for (auto& [no, body] : lines) {
    auto toks = Tokens(body);
    if (toks.empty()) continue;
    std::string where = where_file + ":" + std::to_string(no) + ": ";
    GresConfLine l;
    l.line = no;
    bool has_nodes = false, has_count = false, has_file = false, has_name = false;
    bool has_autodetect = false;
    for (const auto& t : toks) {
      size_t eq = t.find('=');
      if (eq == std::string::npos || eq == 0)
        return InvalidArgument(where + "expected Key=Value, got '" + t + "'");
      std::string key = AsciiLower(t.substr(0, eq));
      std::string val = t.substr(eq + 1);
      if (key == "nodename") {
        auto hosts = ExpandHostlist(val);
        if (!hosts || hosts->empty())
          return InvalidArgument(where + "invalid NodeName '" + val + "'" +
                                 (hosts ? "" : ": " + hosts.error()));
        l.nodes = std::move(*hosts);
        has_nodes = true;
      } else if (key == "name") {
        if (val.empty()) return InvalidArgument(where + "empty Name");
        l.name = val;
        has_name = true;
      } else if (key == "type") {
        l.type = val;
      } else if (key == "file" || key == "multiplefiles") {
        if (has_file)
          return InvalidArgument(where + "File and MultipleFiles are mutually exclusive");
        has_file = true;
        l.multiple_files = key == "multiplefiles";
        // Comma-separated paths, each possibly with a numeric range ("/dev/nvidia[0-3]").
        auto files = ExpandHostlist(val);
        if (!files || files->empty())
          return InvalidArgument(where + "invalid " +
                                 (l.multiple_files ? "MultipleFiles" : "File") + " '" + val + "'");
        for (const auto& f : *files)
          if (f.empty() || f[0] != '/')
            return InvalidArgument(where + "File '" + f + "' is not a fully qualified pathname");
        l.files = std::move(*files);
      } else if (key == "count") {
        if (!ParseGresCount(val, &l.count))
          return InvalidArgument(where + "invalid Count '" + val + "'");
        has_count = true;
      } else if (key == "cores" || key == "cpus") {
        if (!ValidCpuList(val)) return InvalidArgument(where + "invalid Cores '" + val + "'");
        l.cores = val;
      } else if (key == "links") {
        l.links = val;
      } else if (key == "flags") {
        l.flags = AsciiLower(val);
        std::string f = l.flags;
        size_t p = 0;
        while (p <= f.size()) {
          size_t c = f.find(',', p);
          if (c == std::string::npos) c = f.size();
          std::string one = f.substr(p, c - p);
          static const char* kFlags[] = {"countonly",      "one_sharing", "all_sharing",
                                         "nvidia_gpu_env", "amd_gpu_env", "intel_gpu_env",
                                         "opencl_env",     "no_gpu_env"};
          if (std::none_of(std::begin(kFlags), std::end(kFlags),
                           [&](const char* k) { return one == k; }))
            return InvalidArgument(where + "invalid Flags '" + val + "'");
          p = c + 1;
        }
      } else if (key == "autodetect") {
        std::string v = AsciiLower(val);
        if (!ValidAutoDetect(v))
          return InvalidArgument(where + "unknown autodetect flag '" + val + "'");
        l.autodetect = v;
        has_autodetect = true;
      } else {
        return InvalidArgument(where + "unknown key '" + t.substr(0, eq) + "'");
      }
    }
    if (!has_name) {
      if (!has_autodetect) return InvalidArgument(where + "missing Name");
      if (has_nodes) {
        conf.lines.push_back(std::move(l));  // node-local AutoDetect only
      } else {
        conf.autodetect = l.autodetect;
      }
      continue;
    }
    if (has_autodetect && !has_nodes)
      return InvalidArgument(where + "In-line AutoDetect requires NodeName to take effect");
    if (!has_count) {
      l.count = l.files.empty() ? 1 : (l.multiple_files ? 1 : l.files.size());
    } else if (!l.files.empty() && !l.multiple_files && l.name != "mps" && l.name != "shard" &&
               l.count != l.files.size()) {
      return InvalidArgument(where + "Count " + std::to_string(l.count) +
                             " does not match the number of File entries (" +
                             std::to_string(l.files.size()) + ")");
    }
    if (!l.links.empty() && l.files.size() > 1 && !l.multiple_files)
      return InvalidArgument(where + "Links requires a single device (one File)");
    conf.lines.push_back(std::move(l));
  }
  return conf;
}

NodeGresConf GresConfForNode(const GresConf& conf, std::string_view node) {
  NodeGresConf out;
  out.autodetect = conf.autodetect;
  std::string local;
  for (const auto& l : conf.lines) {
    bool applies =
        l.nodes.empty() || std::any_of(l.nodes.begin(), l.nodes.end(),
                                       [&](const std::string& n) { return IEquals(n, node); });
    if (!applies) continue;
    if (!l.autodetect.empty() && local.empty()) local = l.autodetect;
    if (!l.name.empty()) out.lines.push_back(l);
  }
  if (!local.empty()) out.autodetect = local;
  return out;
}

}  // namespace shoal
