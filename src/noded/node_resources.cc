#include "noded/node_resources.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "noded/util.h"

namespace shoal::noded {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

Result<uint64_t> ParseCount(std::string_view key, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-')
    return InvalidArgument("invalid " + std::string(key) + " value '" + value + "'");
  return static_cast<uint64_t>(v);
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<NodeResources> ParseNodeConfParams(std::string_view text,
                                          std::vector<std::string>* warnings) {
  auto tokens = SplitConfLine(text);
  if (!tokens) return tokens.status();
  NodeResources r;
  for (const auto& [key, value] : *tokens) {
    auto count = [&](auto& field) -> Status {
      auto v = ParseCount(key, value);
      if (!v) return v.status();
      field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
      return Status::Ok();
    };
    Status s;
    if (IEquals(key, "CPUs") || IEquals(key, "Procs")) {
      s = count(r.cpus);
    } else if (IEquals(key, "Boards")) {
      s = count(r.boards);
    } else if (IEquals(key, "Sockets") || IEquals(key, "SocketsPerBoard")) {
      s = count(r.sockets);
    } else if (IEquals(key, "CoresPerSocket")) {
      s = count(r.cores_per_socket);
    } else if (IEquals(key, "ThreadsPerCore")) {
      s = count(r.threads_per_core);
    } else if (IEquals(key, "RealMemory")) {
      s = count(r.real_memory_mb);
    } else if (IEquals(key, "TmpDisk")) {
      s = count(r.tmp_disk_mb);
    } else if (IEquals(key, "Feature") || IEquals(key, "Features") ||
               IEquals(key, "AvailableFeatures")) {
      r.features = SplitComma(value);
    } else if (IEquals(key, "Gres")) {
      r.gres = value;
    } else if (IEquals(key, "NodeAddr")) {
      r.addr = value;
    } else if (IEquals(key, "NodeHostname")) {
      r.hostname = value;
    } else if (IEquals(key, "Port")) {
      s = count(r.port);
    } else if (warnings) {
      warnings->push_back("--conf: " + key + " ignored");
    }
    if (!s.ok()) return s;
  }
  return r;
}

NodeResources FromNodeConf(const NodeConf& node) {
  NodeResources r;
  r.cpus = node.cpus;
  r.boards = node.boards;
  r.sockets = node.sockets;
  r.cores_per_socket = node.cores_per_socket;
  r.threads_per_core = node.threads_per_core;
  r.real_memory_mb = node.real_memory_mb;
  r.tmp_disk_mb = node.tmp_disk_mb;
  r.features = node.features;
  r.gres = node.gres;
  r.addr = node.addr;
  r.hostname = node.hostname;
  r.port = node.port;
  return r;
}

void CompleteResources(NodeResources& r, uint32_t fallback_cpus, uint64_t fallback_mem_mb) {
  if (r.boards == 0) r.boards = 1;
  bool topology = r.sockets != 0 || r.cores_per_socket != 0 || r.threads_per_core != 0;
  if (r.cpus == 0) {
    if (topology) {
      r.cpus = r.boards * (r.sockets ? r.sockets : 1) *
               (r.cores_per_socket ? r.cores_per_socket : 1) *
               (r.threads_per_core ? r.threads_per_core : 1);
    } else {
      r.cpus = fallback_cpus ? fallback_cpus : 1;
    }
  }
  if (!topology) {
    r.sockets = r.cpus;
    r.cores_per_socket = 1;
    r.threads_per_core = 1;
  } else {
    if (r.sockets == 0) r.sockets = 1;
    if (r.cores_per_socket == 0) r.cores_per_socket = 1;
    if (r.threads_per_core == 0) r.threads_per_core = 1;
  }
  if (r.real_memory_mb == 0) r.real_memory_mb = fallback_mem_mb ? fallback_mem_mb : 1;
}

uint64_t ParseMeminfoMB(std::string_view meminfo, std::string_view key) {
  size_t pos = 0;
  while (pos < meminfo.size()) {
    size_t eol = meminfo.find('\n', pos);
    if (eol == std::string_view::npos) eol = meminfo.size();
    std::string_view line = meminfo.substr(pos, eol - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      std::string rest(line.substr(key.size() + 1));
      return std::strtoull(rest.c_str(), nullptr, 10) / 1024;  // kB
    }
    pos = eol + 1;
  }
  return 0;
}

int64_t ParseBootTime(std::string_view proc_stat) {
  size_t pos = proc_stat.find("\nbtime ");
  if (pos == std::string_view::npos) {
    if (proc_stat.substr(0, 6) != "btime ") return 0;
    pos = 0;
  } else {
    pos += 1;
  }
  std::string rest(proc_stat.substr(pos + 6, 32));
  return std::strtoll(rest.c_str(), nullptr, 10);
}

DetectedHardware DetectHardware() {
  DetectedHardware hw;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (n > 0) hw.cpus = static_cast<uint32_t>(n);
  if (auto text = ReadWholeFile("/proc/meminfo")) {
    uint64_t mb = ParseMeminfoMB(*text, "MemTotal");
    if (mb > 0) hw.memory_mb = mb;
  }
  return hw;
}

}  // namespace shoal::noded
