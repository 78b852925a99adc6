#include "cli/sinfo_format.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "cli/format_fields.h"
#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

using fmt::AppendField;
using fmt::FieldSpec;

// Field ids: -o letters use their character; -O-only fields start at 256.
enum ExtraField : int {
  kAllocMem = 256,
  kComment,
  kExtra,
  kGresUsed,
  kPort,
  kStateComplete,
  kBlank,
};

struct LongField {
  const char* name;  // lower case
  int id;
  const char* header;
};

constexpr LongField kLongFields[] = {
    {"allocmem", kAllocMem, "ALLOCMEM"},
    {"allocnodes", 'S', "ALLOCNODES"},
    {"available", 'a', "AVAIL"},
    {"cluster", 'V', "CLUSTER"},
    {"comment", kComment, "COMMENT"},
    {"cores", 'Y', "CORES"},
    {"cpus", 'c', "CPUS"},
    {"cpusload", 'O', "CPU_LOAD"},
    {"cpusstate", 'C', "CPUS(A/I/O/T)"},
    {"defaulttime", 'L', "DEFAULTTIME"},
    {"disk", 'd', "TMP_DISK"},
    {"extra", kExtra, "EXTRA"},
    {"features", 'f', "AVAIL_FEATURES"},
    {"features_act", 'b', "ACTIVE_FEATURES"},
    {"freemem", 'e', "FREE_MEM"},
    {"gres", 'G', "GRES"},
    {"gresused", kGresUsed, "GRES_USED"},
    {"groups", 'g', "GROUPS"},
    {"maxcpuspernode", 'B', "MAX_CPUS_PER_NODE"},
    {"memory", 'm', "MEMORY"},
    {"nodeaddr", 'o', "NODE_ADDR"},
    {"nodeai", 'A', "NODES(A/I)"},
    {"nodeaiot", 'F', "NODES(A/I/O/T)"},
    {"nodehost", 'n', "HOSTNAMES"},
    {"nodelist", 'N', "NODELIST"},
    {"nodes", 'D', "NODES"},
    {"oversubscribe", 'h', "OVERSUBSCRIBE"},
    {"partition", 'P', "PARTITION"},
    {"partitionname", 'R', "PARTITION"},
    {"port", kPort, "PORT"},
    {"preemptmode", 'M', "PREEMPT_MODE"},
    {"priorityjobfactor", 'I', "PRIO_JOB_FACTOR"},
    {"prioritytier", 'p', "PRIO_TIER"},
    {"priority", 'p', "PRIO_TIER"},
    {"reason", 'E', "REASON"},
    {"root", 'r', "ROOT"},
    {"size", 's', "JOB_SIZE"},
    {"socketcorethread", 'z', "S:C:T"},
    {"sockets", 'X', "SOCKETS"},
    {"statecompact", 't', "STATE"},
    {"statecomplete", kStateComplete, "STATECOMPLETE"},
    {"statelong", 'T', "STATE"},
    {"threads", 'Z', "THREADS"},
    {"time", 'l', "TIMELIMIT"},
    {"timestamp", 'H', "TIMESTAMP"},
    {"user", 'u', "USER"},
    {"userlong", 'U', "USER"},
    {"version", 'v', "VERSION"},
    {"weight", 'w', "WEIGHT"},
};

const char* LetterHeader(char c) {
  switch (c) {
    case 'a':
      return "AVAIL";
    case 'A':
      return "NODES(A/I)";
    case 'b':
      return "ACTIVE_FEATURES";
    case 'B':
      return "MAX_CPUS_PER_NODE";
    case 'c':
      return "CPUS";
    case 'C':
      return "CPUS(A/I/O/T)";
    case 'd':
      return "TMP_DISK";
    case 'D':
      return "NODES";
    case 'e':
      return "FREE_MEM";
    case 'E':
      return "REASON";
    case 'f':
      return "AVAIL_FEATURES";
    case 'F':
      return "NODES(A/I/O/T)";
    case 'g':
      return "GROUPS";
    case 'G':
      return "GRES";
    case 'h':
      return "OVERSUBSCRIBE";
    case 'H':
      return "TIMESTAMP";
    case 'I':
      return "PRIO_JOB_FACTOR";
    case 'l':
      return "TIMELIMIT";
    case 'L':
      return "DEFAULTTIME";
    case 'm':
      return "MEMORY";
    case 'M':
      return "PREEMPT_MODE";
    case 'n':
      return "HOSTNAMES";
    case 'N':
      return "NODELIST";
    case 'o':
      return "NODE_ADDR";
    case 'O':
      return "CPU_LOAD";
    case 'p':
      return "PRIO_TIER";
    case 'P':
      return "PARTITION";
    case 'r':
      return "ROOT";
    case 'R':
      return "PARTITION";
    case 's':
      return "JOB_SIZE";
    case 'S':
      return "ALLOCNODES";
    case 't':
      return "STATE";
    case 'T':
      return "STATE";
    case 'u':
      return "USER";
    case 'U':
      return "USER";
    case 'v':
      return "VERSION";
    case 'V':
      return "CLUSTER";
    case 'w':
      return "WEIGHT";
    case 'X':
      return "SOCKETS";
    case 'Y':
      return "CORES";
    case 'Z':
      return "THREADS";
    case 'z':
      return "S:C:T";
    default:
      return nullptr;
  }
}

struct Column {
  int id = 0;  // 0: literal text only
  int width = 0;
  bool right = false;
  bool auto_width = false;
  std::string header;
  std::string suffix;
};

// Fields summed or ranged over the nodes of a line instead of keeping nodes apart.
bool IsAggregate(int id, bool exact, bool node_mode) {
  switch (id) {
    case 'D':
    case 'n':
    case 'o':
    case 'F':
    case 'A':
    case 'C':
    case kAllocMem:
      return true;
    case 'N':
      return !node_mode;
    case 'c':
    case 'm':
    case 'd':
    case 'O':
    case 'e':
    case 'z':
    case 'X':
    case 'Y':
    case 'Z':
      return !exact;
    default:
      return false;
  }
}

template <typename T>
struct MinMax {
  T min{}, max{};
  bool set = false;
  void Add(T v) {
    if (!set) {
      min = max = v;
      set = true;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
    }
  }
};

// One output line.
struct Group {
  const pb::PartitionRecord* part = nullptr;
  size_t part_index = 0;
  const pb::NodeRecord* first = nullptr;
  size_t order = 0;
  std::vector<std::string> names, hostnames, addrs;
  std::unordered_set<std::string> seen;
  uint32_t n_alloc = 0, n_idle = 0, n_other = 0;
  uint64_t c_alloc = 0, c_idle = 0, c_other = 0;
  uint64_t alloc_mem = 0;
  MinMax<uint32_t> cpus, sockets, cores, threads;
  MinMax<uint64_t> mem, disk, free_mem;
  MinMax<uint32_t> load;
};

bool Draining(const pb::NodeRecord& n) {
  return n.drain() && (n.alloc_cpus() > 0 || n.base_state() == pb::NODE_ALLOCATED ||
                       n.base_state() == pb::NODE_MIXED);
}

// Slurm's state order for sorting: base state, then flags (DRAIN, NOT_RESPONDING) above.
uint32_t StateRank(const pb::NodeRecord* n) {
  if (!n) return 0;
  uint32_t base = 0;
  switch (n->base_state()) {
    case pb::NODE_DOWN:
      base = 1;
      break;
    case pb::NODE_IDLE:
      base = 2;
      break;
    case pb::NODE_ALLOCATED:
      base = 3;
      break;
    case pb::NODE_MIXED:
      base = 5;
      break;
    case pb::NODE_FUTURE:
      base = 6;
      break;
    default:
      base = 0;
      break;
  }
  if (n->drain()) base |= 0x200;
  if (!n->responding() && n->base_state() != pb::NODE_FUTURE) base |= 0x800;
  return base;
}

void AddNode(Group& g, const pb::NodeRecord& n) {
  if (!g.seen.insert(n.name()).second) return;
  if (!g.first) g.first = &n;
  g.names.push_back(n.name());
  g.hostnames.push_back(n.hostname().empty() ? n.name() : n.hostname());
  g.addrs.push_back(n.addr().empty() ? n.name() : n.addr());
  bool other = n.drain() || n.base_state() == pb::NODE_DOWN || n.base_state() == pb::NODE_FUTURE ||
               n.base_state() == pb::NODE_UNKNOWN;
  bool alloc = n.base_state() == pb::NODE_ALLOCATED || n.base_state() == pb::NODE_MIXED;
  if (other) {
    ++g.n_other;
  } else if (alloc) {
    ++g.n_alloc;
  } else {
    ++g.n_idle;
  }
  uint32_t used = std::min(n.alloc_cpus(), n.cpus());
  g.c_alloc += used;
  if (other) {
    g.c_other += n.cpus() - used;
  } else {
    g.c_idle += n.cpus() - used;
  }
  g.alloc_mem += n.alloc_memory_mb();
  g.cpus.Add(n.cpus());
  g.sockets.Add(n.sockets());
  g.cores.Add(n.cores_per_socket());
  g.threads.Add(n.threads_per_core());
  g.mem.Add(n.real_memory_mb());
  g.disk.Add(n.tmp_disk_mb());
  g.free_mem.Add(n.free_memory_mb());
  g.load.Add(n.cpu_load());
}

std::string Plus(uint64_t min, uint64_t max) {
  std::string s = std::to_string(min);
  if (max != min) s += '+';
  return s;
}

std::string Load(uint32_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v / 100.0);
  return buf;
}

std::string PartTime(uint32_t minutes) {
  if (minutes == kTimeInfinite) return "infinite";
  if (minutes == kTimeNoVal) return "n/a";
  return FormatElapsed(static_cast<int64_t>(minutes) * 60);
}

std::string Avail(const pb::PartitionRecord& p) {
  std::string s = fmt::Upper(p.state());
  if (s.empty() || s == "UP") return "up";
  if (s == "DOWN") return "down";
  if (s == "DRAIN") return "drain";
  if (s == "INACTIVE") return "inact";
  return fmt::Lower(s);
}

std::string JobSize(const pb::PartitionRecord& p) {
  uint32_t min = p.min_nodes() ? p.min_nodes() : 1;
  uint32_t max = p.max_nodes();
  if (max == 0 || max == 0xffffffffu) return std::to_string(min) + "-infinite";
  if (min == max) return std::to_string(min);
  return std::to_string(min) + "-" + std::to_string(max);
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

std::string UserName(const SinfoFormatOptions& o, uint32_t uid) {
  if (o.user_name) {
    std::string name = o.user_name(uid);
    if (!name.empty()) return name;
  }
  return std::to_string(uid);
}

// A field of one node (or of the partition) — everything that is not summed over a line.
std::string NodeValue(const pb::PartitionRecord* p, const pb::NodeRecord* n, int id,
                      const SinfoFormatOptions& o) {
  switch (id) {
    case 'P':
      if (!p) return "n/a";
      return p->is_default() ? p->name() + "*" : p->name();
    case 'R':
      return p ? p->name() : std::string("n/a");
    case 'a':
      return p ? Avail(*p) : std::string("n/a");
    case 'l':
      return p ? PartTime(p->max_time()) : std::string("n/a");
    case 'L':
      return p ? PartTime(p->default_time()) : std::string("n/a");
    case 's':
      return p ? JobSize(*p) : std::string("n/a");
    case 'r':
      return p && p->root_only() ? "yes" : "no";
    case 'h': {
      if (!p || p->over_subscribe().empty()) return "NO";
      return fmt::Upper(p->over_subscribe());
    }
    case 'g': {
      if (!p || p->allow_groups().empty() || fmt::Upper(p->allow_groups()) == "ALL") return "all";
      return p->allow_groups();
    }
    case 'p':
      return std::to_string(p ? p->priority_tier() : 0);
    case 'I':
      return std::to_string(p ? p->priority_job_factor() : 0);
    case 'S':
      return "all";
    case 'B':
      return "UNLIMITED";
    case 'M':
      return "OFF";
    case 'V':
      return "N/A";
    case 'N':
      return n ? n->name() : std::string();
    default:
      break;
  }
  if (!n) {
    switch (id) {
      case 't':
      case 'T':
        return "n/a";
      case 'E':
        return "none";
      case 'f':
      case 'b':
      case 'G':
        return "(null)";
      case 'H':
      case 'u':
      case 'U':
        return "Unknown";
      case 'v':
        return "N/A";
      case 'z':
        return "0:0:0";
      default:
        return "0";
    }
  }
  switch (id) {
    case 't':
      return NodeStateCompact(*n);
    case 'T':
      return NodeStateLongLower(*n);
    case kStateComplete: {
      std::string s = fmt::Lower(NodeStateLong(*n));
      return s;
    }
    case 'E':
      return n->reason().empty() ? std::string("none") : n->reason();
    case 'H':
      return n->reason_time() > 0 ? FormatTimestamp(n->reason_time()) : "Unknown";
    case 'u':
      return n->reason().empty() ? std::string("Unknown") : UserName(o, n->reason_uid());
    case 'U':
      if (n->reason().empty()) return "Unknown";
      return UserName(o, n->reason_uid()) + "(" + std::to_string(n->reason_uid()) + ")";
    case 'f':
    case 'b':
      return n->features_size() ? Join(n->features()) : std::string("(null)");
    case 'G':
      return n->gres().empty() ? std::string("(null)") : n->gres();
    case 'v':
      return n->version().empty() ? std::string("N/A") : n->version();
    case 'w':
      return std::to_string(n->weight());
    case 'c':
      return std::to_string(n->cpus());
    case 'm':
      return std::to_string(n->real_memory_mb());
    case 'd':
      return std::to_string(n->tmp_disk_mb());
    case 'O':
      return Load(n->cpu_load());
    case 'e':
      return n->free_memory_mb() ? std::to_string(n->free_memory_mb()) : "N/A";
    case 'X':
      return std::to_string(n->sockets());
    case 'Y':
      return std::to_string(n->cores_per_socket());
    case 'Z':
      return std::to_string(n->threads_per_core());
    case 'z':
      return std::to_string(n->sockets()) + ":" + std::to_string(n->cores_per_socket()) + ":" +
             std::to_string(n->threads_per_core());
    case kPort:
      return std::to_string(n->port());
    case kComment:
      return n->comment().empty() ? std::string("(null)") : n->comment();
    case kExtra:
      return n->extra().empty() ? std::string("(null)") : n->extra();
    case kGresUsed:
      return n->gres().empty() ? std::string("(null)") : "gres:(null)";
    case 'D':
      return "1";
    default:
      return "";
  }
}

std::string GroupValue(const Group& g, int id, const SinfoFormatOptions& o, bool exact,
                       bool node_mode) {
  if (!IsAggregate(id, exact, node_mode) || !g.first) {
    if (!g.first) {
      switch (id) {
        case 'D':
          return "0";
        case 'F':
          return "0/0/0/0";
        case 'A':
          return "0/0";
        case 'C':
          return "0/0/0/0";
        case 'N':
        case 'n':
        case 'o':
          return "";
        default:
          break;
      }
    }
    return NodeValue(g.part, g.first, id, o);
  }
  switch (id) {
    case 'D':
      return std::to_string(g.names.size());
    case 'N':
      return CompressHostlist(g.names);
    case 'n':
      return CompressHostlist(g.hostnames);
    case 'o':
      return CompressHostlist(g.addrs);
    case 'F':
      return std::to_string(g.n_alloc) + "/" + std::to_string(g.n_idle) + "/" +
             std::to_string(g.n_other) + "/" + std::to_string(g.names.size());
    case 'A':
      return std::to_string(g.n_alloc) + "/" + std::to_string(g.n_idle);
    case 'C':
      return std::to_string(g.c_alloc) + "/" + std::to_string(g.c_idle) + "/" +
             std::to_string(g.c_other) + "/" + std::to_string(g.c_alloc + g.c_idle + g.c_other);
    case kAllocMem:
      return std::to_string(g.alloc_mem);
    case 'c':
      return Plus(g.cpus.min, g.cpus.max);
    case 'm':
      return Plus(g.mem.min, g.mem.max);
    case 'd':
      return Plus(g.disk.min, g.disk.max);
    case 'X':
      return Plus(g.sockets.min, g.sockets.max);
    case 'Y':
      return Plus(g.cores.min, g.cores.max);
    case 'Z':
      return Plus(g.threads.min, g.threads.max);
    case 'z':
      return Plus(g.sockets.min, g.sockets.max) + ":" + Plus(g.cores.min, g.cores.max) + ":" +
             Plus(g.threads.min, g.threads.max);
    case 'O': {
      std::string s = Load(g.load.min);
      if (g.load.max != g.load.min) s += "-" + Load(g.load.max);
      return s;
    }
    case 'e': {
      // 0 = not reported by the node.
      if (g.free_mem.max == 0) return "N/A";
      std::string s = std::to_string(g.free_mem.min);
      if (g.free_mem.max != g.free_mem.min) s += "-" + std::to_string(g.free_mem.max);
      return s;
    }
    default:
      return "";
  }
}

Result<std::vector<Column>> BuildColumns(const SinfoFormatOptions& o) {
  std::vector<Column> cols;
  if (o.format.empty() && !o.long_format.empty()) {
    for (const FieldSpec& f : fmt::ParseLongFormat(o.long_format)) {
      std::string lower = fmt::Lower(f.name);
      const LongField* found = nullptr;
      for (const LongField& lf : kLongFields) {
        if (lower == lf.name) found = &lf;
      }
      if (!found) return InvalidArgument("Invalid job format specification: " + f.name);
      cols.push_back({found->id, f.width, f.right, false, found->header, f.suffix});
    }
    return cols;
  }
  for (const FieldSpec& f : fmt::ParsePercentFormat(SinfoFormatString(o))) {
    if (f.code == 0) {
      cols.push_back({0, 0, false, false, "", f.suffix});
      continue;
    }
    const char* header = LetterHeader(f.code);
    int id = header ? static_cast<int>(f.code) : static_cast<int>(kBlank);
    cols.push_back({id, f.width, f.right, f.auto_width, header ? header : "", f.suffix});
  }
  return cols;
}

bool StateTermMatches(const pb::NodeRecord& n, const std::string& term) {
  auto base = n.base_state();
  if (term == "idle") return base == pb::NODE_IDLE;
  if (term == "alloc" || term == "allocated") return base == pb::NODE_ALLOCATED;
  if (term == "mix" || term == "mixed") return base == pb::NODE_MIXED;
  if (term == "down") return base == pb::NODE_DOWN;
  if (term == "futr" || term == "future") return base == pb::NODE_FUTURE;
  if (term == "unk" || term == "unknown") return base == pb::NODE_UNKNOWN;
  if (term == "drain") return n.drain();
  if (term == "drained") return n.drain() && !Draining(n);
  if (term == "draining" || term == "drng") return Draining(n);
  if (term == "no_respond" || term == "npr") return !n.responding();
  return false;
}

struct SortKey {
  char field;
  bool desc;
  bool config_order;  // "#P"
};

std::vector<SortKey> ParseSort(std::string_view spec) {
  std::vector<SortKey> keys;
  for (const std::string& item : fmt::SplitList(spec, ',')) {
    size_t i = 0;
    bool desc = false, hash = false;
    while (i < item.size() && (item[i] == '+' || item[i] == '-' || item[i] == '#')) {
      if (item[i] == '#') {
        hash = true;
      } else {
        desc = item[i] == '-';
      }
      ++i;
    }
    if (i < item.size()) keys.push_back({item[i], desc, hash});
  }
  return keys;
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

Result<SinfoStateFilter> ParseSinfoStates(std::string_view text) {
  static const char* const kKnown[] = {"alloc",
                                       "allocated",
                                       "cloud",
                                       "comp",
                                       "completing",
                                       "down",
                                       "drain",
                                       "drained",
                                       "draining",
                                       "drng",
                                       "fail",
                                       "failing",
                                       "futr",
                                       "future",
                                       "idle",
                                       "maint",
                                       "mix",
                                       "mixed",
                                       "no_respond",
                                       "npc",
                                       "perfctrs",
                                       "planned",
                                       "power_down",
                                       "powering_down",
                                       "powered_down",
                                       "powering_up",
                                       "reboot",
                                       "reboot_issued",
                                       "reboot_requested",
                                       "resv",
                                       "reserved",
                                       "unk",
                                       "unknown",
                                       "inval",
                                       "invalid"};
  SinfoStateFilter f;
  for (const std::string& any : fmt::SplitList(text, ',')) {
    std::vector<std::string> all;
    for (const std::string& term : fmt::SplitList(any, '&')) {
      std::string lower = fmt::Lower(term);
      bool ok = false;
      for (const char* k : kKnown) ok = ok || lower == k;
      if (!ok) {
        return InvalidArgument(
            "Bad state string: \"" + term +
            "\"\nsinfo: error: valid states: "
            "unknown,down,idle,allocated,?,mixed,future,drain,drained,draining,no_respond,"
            "reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down,"
            "powering_up,fail,maint,reboot,reboot^,unknown");
      }
      all.push_back(lower);
    }
    if (!all.empty()) f.any_of.push_back(std::move(all));
  }
  return f;
}

std::string SinfoFormatString(const SinfoFormatOptions& o) {
  if (!o.format.empty()) return o.format;
  if (o.list_reasons) return o.long_output ? kSinfoReasonLongFormat : kSinfoReasonFormat;
  if (o.summarize) return kSinfoSummarizeFormat;
  if (o.node_oriented) return o.long_output ? kSinfoNodeLongFormat : kSinfoNodeFormat;
  return o.long_output ? kSinfoLongFormat : kSinfoDefaultFormat;
}

bool SinfoNodeMatches(const pb::NodeRecord& n, const SinfoFilter& f) {
  if (f.responding_only && !n.responding()) return false;
  if (f.dead_only && n.responding()) return false;
  if (!f.nodes.empty() && std::find(f.nodes.begin(), f.nodes.end(), n.name()) == f.nodes.end()) {
    return false;
  }
  if (f.states) {
    bool any = false;
    for (const auto& all : f.states->any_of) {
      bool ok = true;
      for (const std::string& term : all) ok = ok && StateTermMatches(n, term);
      if (ok) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}

Result<std::string> FormatSinfo(const pb::NodeQueryResponse& data, const SinfoFormatOptions& o,
                                const SinfoFilter& filter, int64_t now) {
  Result<std::vector<Column>> cols_or = BuildColumns(o);
  if (!cols_or.ok()) return cols_or.status();
  std::vector<Column>& cols = *cols_or;
  bool node_mode = o.node_oriented;
  bool exact = o.exact;

  std::unordered_map<std::string_view, const pb::NodeRecord*> by_name;
  by_name.reserve(static_cast<size_t>(data.nodes_size()));
  for (const pb::NodeRecord& n : data.nodes()) by_name.emplace(n.name(), &n);

  bool node_filtered = filter.states.has_value() || !filter.nodes.empty() ||
                       filter.responding_only || filter.dead_only || o.list_reasons;
  // Columns whose value must be equal for nodes to share a line.
  std::vector<int> key_ids;
  bool has_part_field = false;
  for (const Column& c : cols) {
    if (c.id == 0) continue;
    if (c.id == 'P' || c.id == 'R') has_part_field = true;
    if (!IsAggregate(c.id, exact, node_mode)) key_ids.push_back(c.id);
  }
  if (node_mode && std::find(key_ids.begin(), key_ids.end(), 'N') == key_ids.end()) {
    key_ids.push_back('N');
  }

  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;
  for (int pi = 0; pi < data.partitions_size(); ++pi) {
    const pb::PartitionRecord& p = data.partitions(pi);
    bool named = std::find(filter.partitions.begin(), filter.partitions.end(), p.name()) !=
                 filter.partitions.end();
    if (!filter.partitions.empty() && !named) continue;
    if (p.hidden() && !filter.all_partitions && !named) continue;
    size_t added = 0;
    for (const std::string& name : p.nodes()) {
      auto it = by_name.find(name);
      if (it == by_name.end()) continue;
      const pb::NodeRecord& n = *it->second;
      if (!SinfoNodeMatches(n, filter)) continue;
      if (o.list_reasons && !(n.drain() || n.base_state() == pb::NODE_DOWN)) continue;
      std::string key;
      for (int id : key_ids) {
        key += NodeValue(&p, &n, id, o);
        key += '\0';
      }
      auto [gi, inserted] = index.try_emplace(std::move(key), groups.size());
      if (inserted) {
        groups.emplace_back();
        groups.back().part = &p;
        groups.back().part_index = static_cast<size_t>(pi);
        groups.back().order = groups.size() - 1;
      }
      AddNode(groups[gi->second], n);
      ++added;
    }
    if (p.nodes_size() == 0 && !node_filtered && !node_mode && has_part_field) {
      Group g;
      g.part = &p;
      g.part_index = static_cast<size_t>(pi);
      g.order = groups.size();
      groups.push_back(std::move(g));
    }
  }

  // Sort.
  std::string sort = o.sort.empty() ? (node_mode ? "N" : "#P,-t") : o.sort;
  std::vector<SortKey> keys = ParseSort(sort);
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto compare = [&](const Group& a, const Group& b, const SortKey& k) -> int {
    switch (k.field) {
      case 'P':
      case 'R':
        if (k.config_order) return Cmp(a.part_index, b.part_index);
        return Cmp(a.part ? a.part->name() : std::string(), b.part ? b.part->name() : "");
      case 't':
      case 'T':
        return Cmp(StateRank(a.first), StateRank(b.first));
      case 'N': {
        std::string_view x = a.names.empty() ? "" : std::string_view(a.names[0]);
        std::string_view y = b.names.empty() ? "" : std::string_view(b.names[0]);
        if (fmt::NaturalLess(x, y)) return -1;
        if (fmt::NaturalLess(y, x)) return 1;
        return 0;
      }
      case 'D':
        return Cmp(a.names.size(), b.names.size());
      case 'c':
        return Cmp(a.cpus.min, b.cpus.min);
      case 'm':
        return Cmp(a.mem.min, b.mem.min);
      case 'd':
        return Cmp(a.disk.min, b.disk.min);
      case 'l':
        return Cmp(a.part ? a.part->max_time() : 0u, b.part ? b.part->max_time() : 0u);
      default:
        if (!LetterHeader(k.field)) return 0;
        return Cmp(GroupValue(a, k.field, o, exact, node_mode),
                   GroupValue(b, k.field, o, exact, node_mode));
    }
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    for (const SortKey& k : keys) {
      int d = compare(groups[x], groups[y], k);
      if (d != 0) return k.desc ? d > 0 : d < 0;
    }
    return false;
  });

  // Cells, then widths for %#X, then text.
  std::vector<std::vector<std::string>> cells(groups.size());
  for (size_t r = 0; r < order.size(); ++r) {
    const Group& g = groups[order[r]];
    cells[r].reserve(cols.size());
    for (const Column& c : cols) {
      cells[r].push_back(c.id ? GroupValue(g, c.id, o, exact, node_mode) : std::string());
    }
  }
  for (size_t ci = 0; ci < cols.size(); ++ci) {
    Column& c = cols[ci];
    if (!c.auto_width || c.id == 0) continue;
    size_t w = c.header.size();
    for (const auto& row : cells) w = std::max(w, row[ci].size());
    c.width = static_cast<int>(w);
  }
  std::string out;
  if (!o.no_header) {
    for (const Column& c : cols) {
      if (c.id != 0) AppendField(out, c.header, c.width, c.right);
      out += c.suffix;
    }
    out += '\n';
  }
  for (const auto& row : cells) {
    for (size_t ci = 0; ci < cols.size(); ++ci) {
      const Column& c = cols[ci];
      if (c.id != 0) AppendField(out, row[ci], c.width, c.right);
      out += c.suffix;
    }
    out += '\n';
  }
  (void)now;
  return out;
}

std::string FormatSinfoJson(const pb::NodeQueryResponse& data, const SinfoFilter& filter,
                            int64_t now, std::string_view cluster_name) {
  std::unordered_set<std::string> allowed_parts;
  for (const pb::PartitionRecord& p : data.partitions()) {
    bool named = std::find(filter.partitions.begin(), filter.partitions.end(), p.name()) !=
                 filter.partitions.end();
    if (!filter.partitions.empty() && !named) continue;
    if (p.hidden() && !filter.all_partitions && !named) continue;
    allowed_parts.insert(p.name());
  }
  auto str = [](std::string& out, const char* key, std::string_view v) {
    out += '"';
    out += key;
    out += "\":";
    out += fmt::JsonString(v);
  };
  auto num = [](std::string& out, const char* key, int64_t v) {
    out += '"';
    out += key;
    out += "\":";
    out += std::to_string(v);
  };
  auto noval = [](std::string& out, const char* key, bool set, int64_t v) {
    out += '"';
    out += key;
    out += "\":{\"set\":";
    out += set ? "true" : "false";
    out += ",\"infinite\":false,\"number\":";
    out += std::to_string(set ? v : 0);
    out += '}';
  };
  auto list = [](std::string& out, const char* key, const std::vector<std::string>& v) {
    out += '"';
    out += key;
    out += "\":[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ',';
      out += fmt::JsonString(v[i]);
    }
    out += ']';
  };
  std::string out = "{\"nodes\":[";
  bool first = true;
  for (const pb::NodeRecord& n : data.nodes()) {
    if (!SinfoNodeMatches(n, filter)) continue;
    std::vector<std::string> parts;
    for (const std::string& p : n.partitions()) {
      if (allowed_parts.count(p)) parts.push_back(p);
    }
    if (!filter.partitions.empty() && parts.empty()) continue;
    if (!first) out += ',';
    first = false;
    out += '{';
    str(out, "architecture", n.arch());
    out += ',';
    num(out, "boards", n.boards() ? n.boards() : 1);
    out += ',';
    noval(out, "boot_time", n.boot_time() != 0, n.boot_time());
    out += ',';
    str(out, "cluster_name", cluster_name);
    out += ',';
    num(out, "cores", n.cores_per_socket());
    out += ',';
    num(out, "cpu_load", n.cpu_load());
    out += ',';
    noval(out, "free_mem", n.free_memory_mb() != 0, static_cast<int64_t>(n.free_memory_mb()));
    out += ',';
    num(out, "cpus", n.cpus());
    out += ',';
    list(out, "features", std::vector<std::string>(n.features().begin(), n.features().end()));
    out += ',';
    list(out, "active_features",
         std::vector<std::string>(n.features().begin(), n.features().end()));
    out += ',';
    str(out, "gres", n.gres());
    out += ',';
    noval(out, "last_busy", n.last_busy() != 0, n.last_busy());
    out += ',';
    str(out, "name", n.name());
    out += ',';
    str(out, "address", n.addr().empty() ? n.name() : n.addr());
    out += ',';
    str(out, "hostname", n.hostname().empty() ? n.name() : n.hostname());
    out += ",\"state\":[";
    std::string state = NodeStateLong(n);  // "IDLE+DRAIN+NOT_RESPONDING"
    bool first_state = true;
    for (const std::string& s : fmt::SplitList(state, '+')) {
      if (!first_state) out += ',';
      first_state = false;
      out += fmt::JsonString(s);
    }
    out += "],";
    str(out, "operating_system", n.os());
    out += ',';
    list(out, "partitions", parts);
    out += ',';
    num(out, "port", n.port());
    out += ',';
    num(out, "real_memory", static_cast<int64_t>(n.real_memory_mb()));
    out += ',';
    str(out, "reason", n.reason());
    out += ',';
    noval(out, "reason_changed_at", n.reason_time() != 0, n.reason_time());
    out += ',';
    num(out, "alloc_memory", static_cast<int64_t>(n.alloc_memory_mb()));
    out += ',';
    num(out, "alloc_cpus", n.alloc_cpus());
    out += ',';
    num(out, "alloc_idle_cpus", n.cpus() > n.alloc_cpus() ? n.cpus() - n.alloc_cpus() : 0);
    out += ',';
    noval(out, "slurmd_start_time", n.slurmd_start_time() != 0, n.slurmd_start_time());
    out += ',';
    num(out, "sockets", n.sockets());
    out += ',';
    num(out, "threads", n.threads_per_core());
    out += ',';
    num(out, "temporary_disk", static_cast<int64_t>(n.tmp_disk_mb()));
    out += ',';
    num(out, "weight", n.weight());
    out += ',';
    str(out, "version", n.version());
    out += '}';
  }
  out += "],\"last_update\":{\"set\":true,\"infinite\":false,\"number\":";
  out += std::to_string(now);
  out +=
      "},\"meta\":{\"plugin\":{\"type\":\"\",\"name\":\"\",\"data_parser\":\"data_parser/"
      "v0.0.44\",\"accounting_storage\":\"\"},\"command\":[\"sinfo\"],\"slurm\":{"
      "\"version\":{\"major\":\"22\",\"micro\":\"8\",\"minor\":\"05\"},\"release\":"
      "\"22.05.8\",";
  str(out, "cluster", cluster_name);
  out += "}},\"errors\":[],\"warnings\":[]}\n";
  return out;
}

}  // namespace shoal::cli
