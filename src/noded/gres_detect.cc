#include "noded/gres_detect.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include "common/strings.h"
#include "noded/util.h"

extern char** environ;

namespace shoal::noded {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> SplitTrim(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (std::string_view f : SplitFields(s, sep)) out.push_back(Trim(f));
  return out;
}

// Bus ids compare without the domain's zero padding and case ("00000000:07:00.0" ==
// "0000:07:00.0").
std::string BusKey(std::string_view id) { return SysfsBusId(id); }

// slurm.conf Gres= entries split at top-level commas ("gpu:a100:2(S:0,1),nic:1").
struct ConfEntry {
  std::string name, type, text;
};
std::vector<ConfEntry> ConfEntries(std::string_view gres) {
  std::vector<ConfEntry> out;
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    std::string t = Trim(cur);
    cur.clear();
    if (t.empty() || t == "(null)") return;
    ConfEntry e;
    e.text = t;
    std::string base = t.substr(0, t.find('('));
    auto f = SplitTrim(base, ':');
    e.name = f[0];
    // name:type:count or name:count or name:type
    if (f.size() >= 3) {
      e.type = f[1];
    } else if (f.size() == 2 && !f[1].empty() &&
               !std::isdigit(static_cast<unsigned char>(f[1][0]))) {
      e.type = f[1];
    }
    out.push_back(std::move(e));
  };
  for (char c : gres) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth <= 0) {
      flush();
    } else {
      cur += c;
    }
  }
  flush();
  return out;
}

bool Autodetects(std::string_view mode) {
  return mode == "nvml" || mode == "nvidia" || mode == "rsmi";
}

// Runs argv (no shell), returns stdout; a non-zero exit is an error naming the program.
Result<std::string> RunCapture(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    return Error(ErrorCode::kIoError, "pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return Error(ErrorCode::kIoError, argv[0] + ": " + std::string(std::strerror(rc)));
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > (16u << 20)) break;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error(ErrorCode::kIoError, argv[0] + " failed: " + Trim(out.substr(0, 200)));
  return out;
}

std::string CoresOfBus(const std::string& pci_bus_id) {
  if (pci_bus_id.empty()) return "";
  auto text = ReadWholeFile("/sys/bus/pci/devices/" + SysfsBusId(pci_bus_id) + "/local_cpulist");
  return text.ok() ? Trim(*text) : "";
}

}  // namespace

std::string SysfsBusId(std::string_view pci_bus_id) {
  std::string id = AsciiLower(Trim(pci_bus_id));
  size_t colon = id.find(':');
  // An 8-digit domain ("00000000:07:00.0") is written with 4 digits in sysfs.
  if (colon == 8 && id.compare(0, 4, "0000") == 0) id = id.substr(4);
  return id;
}

Result<std::vector<DetectedGpu>> ParseNvidiaSmiQuery(std::string_view csv) {
  std::vector<DetectedGpu> out;
  size_t start = 0;
  int line_no = 0;
  while (start < csv.size()) {
    size_t end = csv.find('\n', start);
    if (end == std::string_view::npos) end = csv.size();
    std::string line = Trim(csv.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    auto f = SplitTrim(line, ',');
    DetectedGpu g;
    if (f.size() < 4)
      return InvalidArgument("nvidia-smi: unexpected output line " + std::to_string(line_no) +
                             ": " + line);
    auto [p, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), g.index);
    if (ec != std::errc() || p != f[0].data() + f[0].size())
      return InvalidArgument("nvidia-smi: unexpected output line " + std::to_string(line_no) +
                             ": " + line);
    g.name = f[1];
    g.uuid = f[2];
    g.pci_bus_id = f[3];
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(),
            [](const DetectedGpu& a, const DetectedGpu& b) { return a.index < b.index; });
  return out;
}

void ApplyNvidiaSmiMinors(std::string_view q, std::vector<DetectedGpu>& gpus) {
  std::string current;
  size_t start = 0;
  while (start < q.size()) {
    size_t end = q.find('\n', start);
    if (end == std::string_view::npos) end = q.size();
    std::string_view raw = q.substr(start, end - start);
    start = end + 1;
    std::string line = Trim(raw);
    // Sections start unindented: "GPU 00000000:07:00.0".
    if (!raw.empty() && !std::isspace(static_cast<unsigned char>(raw[0])) &&
        line.rfind("GPU ", 0) == 0) {
      current = BusKey(line.substr(4));
      continue;
    }
    if (line.rfind("Minor Number", 0) != 0 || current.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = Trim(std::string_view(line).substr(colon + 1));
    int minor = -1;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), minor);
    if (ec != std::errc() || p != v.data() + v.size()) continue;
    for (auto& g : gpus)
      if (BusKey(g.pci_bus_id) == current) g.minor = minor;
  }
}

std::string GpuTypeFromName(std::string_view name) {
  std::string out = AsciiLower(Trim(name));
  for (char& c : out)
    if (std::isspace(static_cast<unsigned char>(c))) c = '_';
  return out;
}

NodeGresInfo BuildNodeGres(const NodeGresConf& conf, const std::vector<DetectedGpu>& gpus,
                           bool detected_ok, std::string_view slurm_conf_gres) {
  NodeGresInfo info;
  auto conf_entries = ConfEntries(slurm_conf_gres);
  bool autodetect = Autodetects(conf.autodetect) && detected_ok;
  if (conf.lines.empty() && !autodetect) {
    info.gres = std::string(slurm_conf_gres);
    return info;
  }
  info.detected = true;

  // Summary in first-seen order of (name, type).
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::pair<std::string, std::string>, uint64_t> counts;
  auto add = [&](const std::string& name, const std::string& type, uint64_t n) {
    auto k = std::make_pair(name, type);
    if (!counts.count(k)) keys.push_back(k);
    counts[k] += n;
  };
  // The type a line without Type= takes: slurm.conf's, when it names exactly one for that name.
  auto inherited_type = [&](const std::string& name) {
    std::string type;
    int n = 0;
    for (const auto& e : conf_entries)
      if (e.name == name) {
        type = e.type;
        ++n;
      }
    return n == 1 ? type : std::string();
  };
  std::map<std::string, uint32_t> next_index;

  if (autodetect) {
    std::string conf_type;
    uint64_t conf_gpus = 0;
    bool conf_has_gpu = false;
    for (const auto& l : conf.lines)
      if (l.name == "gpu") {
        conf_has_gpu = true;
        conf_gpus += l.count;
        if (conf_type.empty()) conf_type = l.type;
      }
    if (conf_has_gpu && conf_gpus != gpus.size())
      info.log.push_back("gres.conf lists " + std::to_string(conf_gpus) + " gpu(s) but " +
                         std::to_string(gpus.size()) + " were autodetected: using the detected");
    for (const auto& g : gpus) {
      GresDevice d;
      d.name = "gpu";
      d.type = !conf_type.empty() ? conf_type : GpuTypeFromName(g.name);
      d.index = next_index["gpu"]++;
      d.file = "/dev/nvidia" + std::to_string(g.minor >= 0 ? g.minor : static_cast<int>(g.index));
      d.cores = g.cores;
      add(d.name, d.type, 1);
      info.devices.push_back(std::move(d));
    }
    if (gpus.empty()) info.log.push_back("GRES: AutoDetect=" + conf.autodetect + " found no GPUs");
  }

  for (const auto& l : conf.lines) {
    if (autodetect && l.name == "gpu") continue;
    std::string type = l.type.empty() ? inherited_type(l.name) : l.type;
    if (l.files.empty()) {
      add(l.name, type, l.count);
      continue;
    }
    bool sharing = l.name == "mps" || l.name == "shard";
    if (l.multiple_files) {
      uint32_t idx = next_index[l.name]++;
      for (const auto& f : l.files) info.devices.push_back({l.name, type, idx, f, l.cores});
    } else {
      for (const auto& f : l.files)
        info.devices.push_back({l.name, type, next_index[l.name]++, f, l.cores});
    }
    add(l.name, type, sharing ? l.count : (l.multiple_files ? 1 : l.files.size()));
  }

  for (const auto& k : keys) {
    if (!info.gres.empty()) info.gres += ',';
    info.gres +=
        k.first + (k.second.empty() ? "" : ":" + k.second) + ":" + std::to_string(counts[k]);
  }
  // GRES gres.conf says nothing about keep their slurm.conf definition.
  for (const auto& e : conf_entries) {
    bool known =
        std::any_of(keys.begin(), keys.end(), [&](const auto& k) { return k.first == e.name; });
    if (known) continue;
    if (!info.gres.empty()) info.gres += ',';
    info.gres += e.text;
  }
  return info;
}

Result<std::vector<DetectedGpu>> DetectWithNvidiaSmi(const std::string& nvidia_smi) {
  auto csv =
      RunCapture({nvidia_smi, "--query-gpu=index,name,uuid,pci.bus_id", "--format=csv,noheader"});
  if (!csv.ok()) return csv.status();
  auto gpus = ParseNvidiaSmiQuery(*csv);
  if (!gpus.ok()) return gpus.status();
  if (!gpus->empty()) {
    auto q = RunCapture({nvidia_smi, "-q"});
    if (q.ok()) ApplyNvidiaSmiMinors(*q, *gpus);
  }
  for (auto& g : *gpus) g.cores = CoresOfBus(g.pci_bus_id);
  return gpus;
}

// NVML's C API, declared here so the build needs no NVIDIA headers (ABI from NVML's docs).
namespace nvml {
using Return = int;
using Device = void*;
constexpr Return kSuccess = 0;
}  // namespace nvml

Result<std::vector<DetectedGpu>> DetectWithNvml() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = ::dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    return Error(ErrorCode::kIoError,
                 std::string("We were configured with nvml functionality, but that lib wasn't "
                             "found on the system. Attempted loading libnvidia-ml.so.1 resulted "
                             "in: ") +
                     (why ? why : "unknown error"));
  }
  auto sym = [&](const char* name) { return ::dlsym(lib, name); };
  using InitFn = nvml::Return (*)();
  using CountFn = nvml::Return (*)(unsigned*);
  using HandleFn = nvml::Return (*)(unsigned, nvml::Device*);
  using StrFn = nvml::Return (*)(nvml::Device, char*, unsigned);
  using MinorFn = nvml::Return (*)(nvml::Device, unsigned*);
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<InitFn>(sym("nvmlShutdown"));
  auto count_fn = reinterpret_cast<CountFn>(sym("nvmlDeviceGetCount_v2"));
  auto handle_fn = reinterpret_cast<HandleFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto name_fn = reinterpret_cast<StrFn>(sym("nvmlDeviceGetName"));
  auto uuid_fn = reinterpret_cast<StrFn>(sym("nvmlDeviceGetUUID"));
  auto minor_fn = reinterpret_cast<MinorFn>(sym("nvmlDeviceGetMinorNumber"));
  if (!init || !shutdown || !count_fn || !handle_fn || !name_fn || !uuid_fn || !minor_fn) {
    ::dlclose(lib);
    return Error(ErrorCode::kIoError, "NVML: libnvidia-ml.so.1 lacks the functions it needs");
  }
  if (init() != nvml::kSuccess) {
    ::dlclose(lib);
    return Error(ErrorCode::kIoError, "NVML: nvmlInit failed");
  }
  std::vector<DetectedGpu> out;
  unsigned n = 0;
  if (count_fn(&n) == nvml::kSuccess) {
    for (unsigned i = 0; i < n; ++i) {
      nvml::Device dev = nullptr;
      if (handle_fn(i, &dev) != nvml::kSuccess) continue;
      DetectedGpu g;
      g.index = i;
      char buf[256] = {};
      if (name_fn(dev, buf, sizeof buf - 1) == nvml::kSuccess) g.name = buf;
      char ubuf[256] = {};
      if (uuid_fn(dev, ubuf, sizeof ubuf - 1) == nvml::kSuccess) g.uuid = ubuf;
      unsigned minor = 0;
      if (minor_fn(dev, &minor) == nvml::kSuccess) g.minor = static_cast<int>(minor);
      out.push_back(std::move(g));
    }
  }
  shutdown();
  ::dlclose(lib);
  return out;
}

Result<NodeGresInfo> LoadNodeGres(const std::string& slurm_conf_path, const std::string& node,
                                  std::string_view slurm_conf_gres) {
  std::string dir = slurm_conf_path.substr(0, slurm_conf_path.rfind('/') + 1);
  std::string path = dir + "gres.conf";
  GresConf conf;
  if (FileExists(path)) {
    auto text = ReadWholeFile(path);
    if (!text.ok()) return Error(ErrorCode::kIoError, path + ": " + text.error());
    auto parsed = ParseGresConf(*text, path);
    if (!parsed.ok()) return parsed.status();
    conf = std::move(*parsed);
  }
  NodeGresConf mine = GresConfForNode(conf, node);
  std::vector<DetectedGpu> gpus;
  bool ok = false;
  std::vector<std::string> log;
  if (mine.autodetect == "nvml") {
    auto r = DetectWithNvml();
    if (r.ok()) {
      gpus = std::move(*r);
      ok = true;
    } else {
      log.push_back("error: " + r.error());
    }
  } else if (mine.autodetect == "nvidia") {
    auto r = DetectWithNvidiaSmi("nvidia-smi");
    if (r.ok()) {
      gpus = std::move(*r);
      ok = true;
    } else {
      log.push_back("error: AutoDetect=nvidia: " + r.error());
    }
  } else if (mine.autodetect == "rsmi") {
    log.push_back("error: Configured with rsmi, but that lib wasn't found.");
  }
  if (!mine.autodetect.empty()) log.push_back("GRES: AutoDetect=" + mine.autodetect);
  NodeGresInfo info = BuildNodeGres(mine, gpus, ok, slurm_conf_gres);
  info.log.insert(info.log.begin(), log.begin(), log.end());
  return info;
}

}  // namespace shoal::noded
