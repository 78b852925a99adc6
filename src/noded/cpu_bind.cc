#include "noded/cpu_bind.h"

#include <sched.h>

#include <cstdlib>

namespace shoal::noded {
namespace {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t next = s.find(sep, pos);
    if (next == std::string_view::npos) next = s.size();
    out.emplace_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

std::string HexMask(const std::vector<int>& cpus) {
  // Little-endian nibbles of a bitset, printed most significant first.
  std::vector<int> nibbles;
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= 4096) continue;
    size_t n = static_cast<size_t>(cpu) / 4;
    if (nibbles.size() <= n) nibbles.resize(n + 1, 0);
    nibbles[n] |= 1 << (cpu % 4);
  }
  if (nibbles.empty()) return "";
  std::string out = "0x";
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = nibbles.size(); i-- > 0;) out.push_back(kHex[nibbles[i]]);
  return out;
}

}  // namespace

std::vector<std::string> TaskCpuMasks(std::string_view cpu_bind, uint32_t ntasks,
                                      uint32_t cpus_per_task, const std::vector<int>& cpus) {
  std::vector<std::string> masks;
  std::string type;
  std::vector<std::string> list;
  for (const auto& part : Split(cpu_bind, ',')) {
    if (part.empty() || part == "verbose" || part == "quiet" || part == "v" || part == "q")
      continue;
    if (!type.empty() && (type == "map_cpu" || type == "mask_cpu")) {
      list.push_back(part);  // "map_cpu:0,1" splits on the comma too
      continue;
    }
    auto colon = part.find(':');
    type = part.substr(0, colon);
    if (colon != std::string::npos) list.push_back(part.substr(colon + 1));
  }
  if (type.empty() || type == "none" || type == "no" || cpus.empty() || ntasks == 0) return masks;
  uint32_t cpt = cpus_per_task ? cpus_per_task : 1;
  for (uint32_t i = 0; i < ntasks; ++i) {
    std::vector<int> mine;
    if (type == "map_cpu" || type == "map_ldom") {
      if (list.empty()) return {};
      mine.push_back(std::atoi(list[i % list.size()].c_str()));
      masks.push_back(HexMask(mine));
    } else if (type == "mask_cpu" || type == "mask_ldom") {
      if (list.empty()) return {};
      std::string m = list[i % list.size()];
      if (m.rfind("0x", 0) != 0 && m.rfind("0X", 0) != 0) m = "0x" + m;
      masks.push_back(m);
    } else if (type == "cores" || type == "threads" || type == "sockets" || type == "ldoms" ||
               type == "rank" || type == "boards") {
      for (uint32_t k = 0; k < cpt; ++k) mine.push_back(cpus[(i * cpt + k) % cpus.size()]);
      masks.push_back(HexMask(mine));
    } else {
      return {};
    }
  }
  return masks;
}

std::vector<int> CpusOfThisProcess() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

bool ApplyCpuMask(const std::string& mask) {
  std::string hex = mask.rfind("0x", 0) == 0 || mask.rfind("0X", 0) == 0 ? mask.substr(2) : mask;
  cpu_set_t set;
  CPU_ZERO(&set);
  int bit = 0;
  for (size_t i = hex.size(); i-- > 0;) {
    char c = hex[i];
    int v = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (v < 0) return false;
    for (int b = 0; b < 4; ++b, ++bit)
      if ((v >> b) & 1 && bit < CPU_SETSIZE) CPU_SET(bit, &set);
  }
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace shoal::noded
