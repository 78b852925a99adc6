#include "common/mem_bind.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

#include "common/strings.h"

namespace shoal {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

Status BadNumber(std::string_view tok, char bad) {
  return Error(ErrorCode::kInvalidArgument, "Failed to validate number: " + std::string(tok) +
                                                ", the offending character is " +
                                                std::string(1, bad));
}

// One list element, "12", "0x1f" or "3*4" (value repeated four times), into `out`.
Status ParseElement(std::string_view tok, bool hex, std::vector<uint64_t>& out) {
  uint64_t repeat = 1;
  if (auto star = tok.find('*'); star != std::string_view::npos) {
    std::string_view r = tok.substr(star + 1);
    auto [p, ec] = std::from_chars(r.data(), r.data() + r.size(), repeat);
    if (r.empty() || ec != std::errc() || p != r.data() + r.size() || repeat == 0 || repeat > 4096)
      return BadNumber(tok, r.empty() ? '*' : *p);
    tok = tok.substr(0, star);
  }
  std::string_view digits = tok;
  int base = 10;
  if (StartsWith(digits, "0x") || StartsWith(digits, "0X")) {
    digits.remove_prefix(2);
    base = 16;
  } else if (hex) {
    base = 16;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size())
    return BadNumber(tok, digits.empty() ? (tok.empty() ? ' ' : tok.back()) : *p);
  for (uint64_t i = 0; i < repeat; ++i) out.push_back(v);
  return Status::Ok();
}

}  // namespace

Result<MemBind> ParseMemBind(std::string_view value) {
  MemBind mb;
  std::string text = AsciiLower(value);
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    if (tok == "q" || tok == "quiet") {
      mb.verbose = false;
    } else if (tok == "v" || tok == "verbose") {
      mb.verbose = true;
    } else if (tok == "no" || tok == "none") {
      mb.type = MemBindType::kNone;
      mb.given = true;
    } else if (tok == "local") {
      mb.type = MemBindType::kLocal;
      mb.given = true;
    } else if (tok == "rank") {
      mb.type = MemBindType::kRank;
      mb.given = true;
    } else if (tok == "p" || tok == "prefer" || tok == "sort" || tok == "nosort") {
      // Accepted, no effect here (KNL zone sorting; preferred instead of strict binding).
    } else if (StartsWith(tok, "map_mem") || StartsWith(tok, "mask_mem")) {
      bool is_map = StartsWith(tok, "map_mem");
      std::string_view name = is_map ? "map_mem" : "mask_mem";
      // The list runs to the end of the value: "map_mem:0,1".
      std::string_view list = rest.substr(name.size());
      if (list.empty() || list[0] != ':' || list.size() == 1 || list[1] == ',')
        return Error(ErrorCode::kInvalidArgument,
                     "missing list for \"--mem-bind=" + std::string(name) + ":<list>\"");
      list.remove_prefix(1);
      mb.list.clear();
      while (!list.empty()) {
        size_t c = list.find(',');
        if (Status s = ParseElement(list.substr(0, c), !is_map, mb.list); !s.ok()) return s;
        if (c == std::string_view::npos) break;
        list.remove_prefix(c + 1);
      }
      mb.type = is_map ? MemBindType::kMap : MemBindType::kMask;
      mb.given = true;
      break;
    } else if (!tok.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "unrecognized --mem-bind argument \"" + std::string(tok) + "\"");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return mb;
}

std::vector<uint64_t> TaskMemMasks(const MemBind& mb, uint32_t ntasks, uint32_t numa_nodes) {
  std::vector<uint64_t> out(ntasks, 0);
  for (uint32_t i = 0; i < ntasks; ++i) {
    switch (mb.type) {
      case MemBindType::kRank:
        out[i] = uint64_t{1} << (i % std::clamp<uint32_t>(numa_nodes, 1, 64));
        break;
      case MemBindType::kMap: {
        uint64_t node = mb.list.empty() ? 0 : mb.list[i % mb.list.size()];
        out[i] = node < 64 ? uint64_t{1} << node : 0;
        if (node >= 64) out[i] = ~uint64_t{0};  // impossible: the kernel refuses it
        break;
      }
      case MemBindType::kMask:
        out[i] = mb.list.empty() ? 0 : mb.list[i % mb.list.size()];
        break;
      default:
        break;
    }
  }
  return out;
}

std::string MemBindTypeWord(MemBindType type) {
  switch (type) {
    case MemBindType::kLocal:
      return "LOCAL";
    case MemBindType::kRank:
      return "RANK";
    case MemBindType::kMap:
      return "MAP";
    case MemBindType::kMask:
      return "MASK";
    default:
      return "NONE";
  }
}

std::vector<std::string> MemBindEnvironment(std::string_view value, const std::string& prefix) {
  if (value.empty()) return {};
  auto mb = ParseMemBind(value);
  if (!mb.ok()) return {};
  std::string type, list;
  switch (mb->type) {
    case MemBindType::kLocal:
      type = "local";
      break;
    case MemBindType::kRank:
      type = "rank";
      break;
    case MemBindType::kMap:
    case MemBindType::kMask:
      type = mb->type == MemBindType::kMap ? "map_mem:" : "mask_mem:";
      for (uint64_t v : mb->list) {
        if (!list.empty()) list.push_back(',');
        list += mb->type == MemBindType::kMap ? std::to_string(v) : HexU64(v);
      }
      break;
    default:
      type = "none";
  }
  std::string verbosity = mb->verbose ? "verbose" : "quiet";
  std::string lower = AsciiLower(value);
  bool prefer = lower.find("prefer") != std::string::npos;
  std::string sort = lower.find("nosort") != std::string::npos ? "nosort"
                     : lower.find("sort") != std::string::npos ? "sort"
                                                               : "";
  return {
      prefix + "_MEM_BIND=" + verbosity + "," + type + list,
      prefix + "_MEM_BIND_LIST=" + list,
      prefix + "_MEM_BIND_PREFER=" + (prefer ? "prefer" : ""),
      prefix + "_MEM_BIND_SORT=" + sort,
      prefix + "_MEM_BIND_TYPE=" + type,
      prefix + "_MEM_BIND_VERBOSE=" + verbosity,
  };
}

std::string BindVerboseLine(std::string_view what, std::string_view type_word,
                            std::string_view node, uint32_t global_task, uint32_t local_task,
                            pid_t pid, std::string_view mask, bool set) {
  char ids[64];
  std::snprintf(ids, sizeof(ids), "task %2u %2u [%d]: mask ", global_task, local_task,
                static_cast<int>(pid));
  return std::string(what) + "=" + std::string(type_word) + " - " + std::string(node) + ", " + ids +
         std::string(mask) + (set ? " set" : "") + "\n";
}

std::string HexU64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace shoal

namespace shoal {

bool ValidHint(std::string_view hint) {
  std::string h = AsciiLower(hint);
  return h == "compute_bound" || h == "memory_bound" || h == "multithread" || h == "nomultithread";
}

std::string EffectiveCpuBind(std::string_view cpu_bind, std::string_view hint) {
  if (hint.empty() || !ValidHint(hint)) return std::string(cpu_bind);
  bool verbose = false;
  std::string_view rest = cpu_bind;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string tok = AsciiLower(rest.substr(0, comma));
    if (tok == "verbose" || tok == "v")
      verbose = true;
    else if (tok != "quiet" && tok != "q" && !tok.empty())
      return std::string(cpu_bind);  // an explicit type wins over the hint
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::string type = AsciiLower(hint) == "multithread" ? "threads" : "cores";
  return verbose ? "verbose," + type : type;
}

std::string HintHelpText() {
  return "Application hint options:\n"
         "    --hint=             Bind tasks according to application hints\n"
         "        compute_bound   use all cores in each socket\n"
         "        memory_bound    use only one core in each socket\n"
         "        [no]multithread [don't] use extra threads with in-core multi-threading\n"
         "        help            show this help message\n";
}

std::string MemBindHelpText() {
  return "Memory bind options:\n"
         "    --mem-bind=         Bind memory to locality domains (ldom)\n"
         "        nosort          avoid sorting pages at startup\n"
         "        sort            sort pages at startup\n"
         "        q[uiet]         quietly bind before task runs (default)\n"
         "        v[erbose]       verbosely report binding before task runs\n"
         "        no[ne]          don't bind tasks to memory (default)\n"
         "        rank            bind by task rank\n"
         "        local           bind to memory local to processor\n"
         "        map_mem:<list>  specify a memory binding for each task\n"
         "                        where <list> is <cpuid1>,<cpuid2>,...<cpuidN>\n"
         "        mask_mem:<list> specify a memory binding mask for each tasks\n"
         "                        where <list> is <mask1>,<mask2>,...<maskN>\n"
         "        help            show this help message\n";
}

}  // namespace shoal
