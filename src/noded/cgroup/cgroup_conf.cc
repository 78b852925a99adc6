#include "noded/cgroup/cgroup_conf.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace shoal::noded {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseBool(std::string_view v, bool* out) {
  std::string l = Lower(v);
  if (l == "yes" || l == "true" || l == "1") {
    *out = true;
    return true;
  }
  if (l == "no" || l == "false" || l == "0") {
    *out = false;
    return true;
  }
  return false;
}

bool ParsePercent(std::string_view v, double* out) {
  std::string s(v);
  if (!s.empty() && s.back() == '%') s.pop_back();
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || d < 0) return false;
  *out = d;
  return true;
}

bool ParseMB(std::string_view v, uint64_t* out) {
  std::string s(v);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || s[0] == '-') return false;
  uint64_t mult = 1;
  std::string unit = Lower(end);
  if (unit.empty() || unit == "m" || unit == "mb") {
    mult = 1;
  } else if (unit == "g" || unit == "gb") {
    mult = 1024;
  } else {
    return false;
  }
  *out = n * mult;
  return true;
}

}  // namespace

Result<CgroupConf> ParseCgroupConf(std::string_view text, const std::string& file) {
  CgroupConf c;
  c.present = true;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    auto fail = [&](const std::string& why) {
      return InvalidArgument(file + ": line " + std::to_string(line_no) + ": " + why);
    };
    size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return fail("expected Key=Value: '" + std::string(line) + "'");
    std::string key_raw(Trim(line.substr(0, eq)));
    std::string key = Lower(key_raw);
    std::string_view value = Trim(line.substr(eq + 1));
    auto bad = [&] { return fail("invalid value '" + std::string(value) + "' for " + key_raw); };
    bool ok = true;
    if (key == "cgroupplugin") {
      std::string v = Lower(value);
      if (v == "autodetect")
        c.plugin = CgroupPluginKind::kAutodetect;
      else if (v == "cgroup/v1")
        c.plugin = CgroupPluginKind::kV1;
      else if (v == "cgroup/v2")
        c.plugin = CgroupPluginKind::kV2;
      else
        ok = false;
    } else if (key == "cgroupmountpoint") {
      ok = !value.empty() && value[0] == '/';
      if (ok) c.mountpoint = std::string(value);
    } else if (key == "constraincores") {
      ok = ParseBool(value, &c.constrain_cores);
    } else if (key == "constrainramspace") {
      ok = ParseBool(value, &c.constrain_ram);
    } else if (key == "constrainswapspace") {
      ok = ParseBool(value, &c.constrain_swap);
    } else if (key == "constraindevices") {
      ok = ParseBool(value, &c.constrain_devices);
    } else if (key == "ignoresystemd") {
      ok = ParseBool(value, &c.ignore_systemd);
    } else if (key == "allowedramspace") {
      ok = ParsePercent(value, &c.allowed_ram_percent);
    } else if (key == "maxrampercent") {
      ok = ParsePercent(value, &c.max_ram_percent);
    } else if (key == "allowedswapspace") {
      ok = ParsePercent(value, &c.allowed_swap_percent);
    } else if (key == "maxswappercent") {
      ok = ParsePercent(value, &c.max_swap_percent);
    } else if (key == "minramspace") {
      ok = ParseMB(value, &c.min_ram_mb);
    } else if (key == "cgroupautomount" || key == "ignoresystemdonfailure" ||
               key == "constrainkmemspace") {
      bool ignored = false;  // accepted; nothing to do here (no systemd, no kmem limits)
      ok = ParseBool(value, &ignored);
    } else if (key == "allowedkmemspace" || key == "maxkmempercent" || key == "minkmemspace" ||
               key == "memoryswappiness") {
      double ignored = 0;
      ok = ParsePercent(value, &ignored);
    } else if (key == "cgroupreleaseagentdir" || key == "taskaffinity") {
      // Obsolete keys Slurm still tolerates.
    } else {
      return fail("unknown key '" + key_raw + "'");
    }
    if (!ok) return bad();
  }
  return c;
}

std::string CgroupConfPath(const std::string& slurm_conf_path) {
  size_t slash = slurm_conf_path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slurm_conf_path.substr(0, slash);
  if (dir.empty()) dir = "/";
  return dir + "/cgroup.conf";
}

Result<CgroupConf> LoadCgroupConf(const std::string& slurm_conf_path) {
  std::string path = CgroupConfPath(slurm_conf_path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return CgroupConf{};
  std::ifstream in(path);
  if (!in) return InvalidArgument("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseCgroupConf(ss.str(), path);
}

CgroupPolicy MakeCgroupPolicy(std::string_view proctrack_type, std::string_view task_plugin,
                              const CgroupConf& conf) {
  CgroupPolicy p;
  std::string pt = Lower(Trim(proctrack_type));
  p.track = pt.empty() || pt == "proctrack/cgroup";
  bool task_cgroup = false;
  std::string tp = Lower(task_plugin);
  size_t start = 0;
  while (start <= tp.size()) {
    size_t comma = tp.find(',', start);
    std::string_view item = Trim(
        std::string_view(tp).substr(start, comma == std::string::npos ? tp.npos : comma - start));
    if (item == "task/cgroup" || item == "cgroup") task_cgroup = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (task_cgroup) {
    p.constrain_cores = conf.constrain_cores;
    p.constrain_ram = conf.constrain_ram || conf.constrain_swap;
    p.constrain_swap = conf.constrain_swap;
    p.constrain_devices = conf.constrain_devices;
  }
  return p;
}

uint64_t RamLimitBytes(const CgroupConf& conf, uint64_t alloc_mb, uint64_t node_mem_mb) {
  if (alloc_mb == 0) alloc_mb = node_mem_mb;
  if (alloc_mb == 0) return 0;
  double mb = static_cast<double>(alloc_mb) * conf.allowed_ram_percent / 100.0;
  if (node_mem_mb > 0) {
    double cap = static_cast<double>(node_mem_mb) * conf.max_ram_percent / 100.0;
    mb = std::min(mb, cap);
  }
  mb = std::max(mb, static_cast<double>(conf.min_ram_mb));
  return static_cast<uint64_t>(mb * 1024.0 * 1024.0);
}

uint64_t RamSwapLimitBytes(const CgroupConf& conf, uint64_t alloc_mb, uint64_t node_mem_mb) {
  uint64_t ram = RamLimitBytes(conf, alloc_mb, node_mem_mb);
  if (ram == 0) return 0;
  if (alloc_mb == 0) alloc_mb = node_mem_mb;
  double swap_mb = static_cast<double>(alloc_mb) * conf.allowed_swap_percent / 100.0;
  if (node_mem_mb > 0) {
    double cap = static_cast<double>(node_mem_mb) * conf.max_swap_percent / 100.0;
    swap_mb = std::min(swap_mb, cap);
  }
  return ram + static_cast<uint64_t>(swap_mb * 1024.0 * 1024.0);
}

}  // namespace shoal::noded
