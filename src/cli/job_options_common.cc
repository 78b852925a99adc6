// Shared option handling: see job_options_common.h. Pure: no I/O, no clock, no environment reads.
#include "cli/job_options_common.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "common/units.h"

namespace shoal::cli {

int ErrorExitCode(const std::vector<std::string>& environment) {
  if (auto v = jobopt::EnvValue(environment, "SLURM_EXIT_ERROR")) {
    if (auto n = jobopt::ParseUnsigned(*v, 255)) return static_cast<int>(*n);
  }
  return 1;
}

namespace jobopt {

// ---------------------------------------------------------------------------------------------
// getopt_long-like scanning
// ---------------------------------------------------------------------------------------------

const OptionDef* FindOptionById(std::span<const OptionDef> table, int id) {
  for (const auto& d : table)
    if (d.id == id) return &d;
  return nullptr;
}

namespace {

const OptionDef* FindShort(std::span<const OptionDef> table, char c) {
  for (const auto& d : table)
    if (d.short_name == c) return &d;
  return nullptr;
}

OptionSetting MakeSetting(const OptionDef& def, std::optional<std::string> value) {
  OptionSetting s;
  s.id = def.id;
  s.name = std::string(def.name);
  s.value = std::move(value);
  return s;
}

}  // namespace

Result<ParsedOptions> ParseOptions(const std::vector<std::string>& args,
                                   std::span<const OptionDef> table,
                                   std::span<const int> stop_ids) {
  ParsedOptions out;
  auto stops = [&](int id) {
    return std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
  };
  auto add = [&](const OptionDef& def, std::optional<std::string> value) {
    const OptionDef* canonical = &def;
    if (def.alias) {
      for (const auto& d : table) {
        if (d.id == def.id && !d.alias) {
          canonical = &d;
          break;
        }
      }
    }
    out.settings.push_back(MakeSetting(*canonical, std::move(value)));
    if (stops(def.id)) out.stopped_by = def.id;
  };
  size_t i = 0;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      std::string_view body = std::string_view(a).substr(2);
      std::optional<std::string> value;
      std::string_view name = body;
      if (size_t eq = body.find('='); eq != std::string_view::npos) {
        name = body.substr(0, eq);
        value = std::string(body.substr(eq + 1));
      }
      const OptionDef* def = nullptr;
      std::vector<const OptionDef*> candidates;
      for (const auto& d : table) {
        if (d.name == name) {
          def = &d;
          break;
        }
        if (!name.empty() && d.name.substr(0, name.size()) == name) {
          // Like glibc, two spellings of one option do not make a prefix ambiguous.
          bool same = false;
          for (const OptionDef* c : candidates)
            same = same || ((c->alias || d.alias) && c->id == d.id && c->arg == d.arg);
          if (!same) candidates.push_back(&d);
        }
      }
      if (!def && candidates.size() == 1) def = candidates[0];
      if (!def && candidates.size() > 1) {
        std::string msg = "option '" + a + "' is ambiguous; possibilities:";
        for (const OptionDef* c : candidates) msg += " '--" + std::string(c->name) + "'";
        return InvalidArgument(msg);
      }
      if (!def) return InvalidArgument("unrecognized option '" + a + "'");
      if (def->arg == OptArg::kNone && value) {
        return InvalidArgument("option '--" + std::string(def->name) +
                               "' doesn't allow an argument");
      }
      if (def->arg == OptArg::kRequired && !value) {
        if (i + 1 >= args.size()) {
          return InvalidArgument("option '--" + std::string(def->name) + "' requires an argument");
        }
        value = args[++i];
      }
      add(*def, std::move(value));
      ++i;
      if (out.stopped_by) return out;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      for (size_t j = 1; j < a.size(); ++j) {
        const OptionDef* def = FindShort(table, a[j]);
        if (!def) return InvalidArgument(std::string("invalid option -- '") + a[j] + "'");
        if (def->arg == OptArg::kRequired) {
          std::optional<std::string> value;
          if (j + 1 < a.size()) {
            value = a.substr(j + 1);
          } else if (i + 1 < args.size()) {
            value = args[++i];
          } else {
            return InvalidArgument(std::string("option requires an argument -- '") + a[j] + "'");
          }
          add(*def, std::move(value));
          break;
        }
        if (def->arg == OptArg::kOptional && j + 1 < a.size()) {
          add(*def, a.substr(j + 1));  // "-K1": an optional argument must be attached
          break;
        }
        add(*def, std::nullopt);
        if (out.stopped_by) break;
      }
      ++i;
      if (out.stopped_by) return out;
      continue;
    }
    break;  // first non-option argument
  }
  out.rest = i;
  return out;
}

Status UsageError(std::string_view prog, const std::string& getopt_message) {
  std::string p(prog);
  return InvalidArgument(p + ": " + getopt_message + "\nTry \"" + p +
                         " --help\" for more information");
}

// ---------------------------------------------------------------------------------------------
// Text and environment helpers
// ---------------------------------------------------------------------------------------------

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<uint64_t> ParseUnsigned(std::string_view s, uint64_t max) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (max - digit) / 10) return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

std::optional<int64_t> ParseSigned(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  auto v = ParseUnsigned(s, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!v) return std::nullopt;
  return neg ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

bool IsVarName(std::string_view s) {
  if (s.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string_view VarName(std::string_view entry) {
  size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

const std::string* FindEnv(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env)
    if (VarName(e) == name && e.size() > name.size()) return &e;
  return nullptr;
}

std::optional<std::string> EnvValue(const std::vector<std::string>& env, std::string_view name) {
  const std::string* e = FindEnv(env, name);
  if (!e) return std::nullopt;
  return e->substr(name.size() + 1);
}

bool EnvFlagSet(std::string_view v) {
  if (v.empty() || EqualsIgnoreCase(v, "yes")) return true;
  auto n = ParseSigned(v);
  return n && *n != 0;
}

std::string Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash != std::string_view::npos && path.size() > 1) path = path.substr(slash + 1);
  return std::string(path);
}

std::string ResolvePath(std::string_view base, std::string_view path) {
  std::string joined = (!path.empty() && path[0] == '/')
                           ? std::string(path)
                           : std::string(base) + "/" + std::string(path);
  std::string out;
  for (std::string_view part : Split(joined, '/')) {
    if (part.empty() || part == ".") continue;
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

// ---------------------------------------------------------------------------------------------
// Value parsers
// ---------------------------------------------------------------------------------------------

Status ProgError(std::string_view prog, const std::string& text) {
  return InvalidArgument(std::string(prog) + ": error: " + text);
}

Status BadNumber(std::string_view prog, const std::string& value, std::string_view option) {
  return ProgError(prog,
                   "Invalid numeric value \"" + value + "\" for --" + std::string(option) + ".");
}

Result<uint32_t> PositiveCount(std::string_view prog, const std::string& value,
                               std::string_view option) {
  auto v = ParseUnsigned(Trim(value));
  if (!v || *v == 0) return BadNumber(prog, value, option);
  return static_cast<uint32_t>(*v);
}

namespace {

// Node count with an optional k (x1024) or m (x1048576) suffix.
std::optional<uint32_t> ParseNodeCount(std::string_view s) {
  uint64_t mult = 1;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'K')) {
    mult = 1024;
    s.remove_suffix(1);
  } else if (!s.empty() && (s.back() == 'm' || s.back() == 'M')) {
    mult = 1024 * 1024;
    s.remove_suffix(1);
  }
  auto v = ParseUnsigned(s);
  if (!v || *v * mult > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(*v * mult);
}

}  // namespace

Status ParseNodes(std::string_view prog, const std::string& value, pb::JobSpec& spec) {
  std::string_view s = Trim(value);
  std::string_view lo = s, hi;
  size_t dash = s.find('-');
  if (dash != std::string_view::npos) {
    lo = s.substr(0, dash);
    hi = s.substr(dash + 1);
  }
  auto min = ParseNodeCount(lo);
  std::optional<uint32_t> max = min;
  if (dash != std::string_view::npos)
    max = hi.empty() ? std::optional<uint32_t>(0) : ParseNodeCount(hi);
  // Slurm's own wording for each problem.
  if (!min) return ProgError(prog, "\"" + std::string(lo) + "\" is not a valid node count");
  if (!max) return ProgError(prog, "\"" + std::string(hi) + "\" is not a valid node count");
  if (*max != 0 && *max < *min) {
    return ProgError(prog, "Maximum node count " + std::to_string(*max) +
                               " is less than minimum node count " + std::to_string(*min));
  }
  if (*min == 0) return ProgError(prog, "Invalid node count specification: " + value);
  spec.set_min_nodes(*min);
  spec.set_max_nodes(*max);
  return Status::Ok();
}

Status ParseSignalSpec(std::string_view prog, const std::string& value, pb::JobSpec& spec) {
  std::string_view s = value;
  bool batch_only = false;
  size_t colon = s.find(':');
  if (colon != std::string_view::npos) {
    std::string_view flags = s.substr(0, colon);
    if (flags.empty()) return ProgError(prog, "Invalid --signal specification");
    for (char c : flags) {
      if (c == 'B' || c == 'b') {
        batch_only = true;
      } else if (c != 'R' && c != 'r') {
        return ProgError(prog, "Invalid --signal specification");
      }
    }
    s = s.substr(colon + 1);
  }
  uint64_t when = 60;
  size_t at = s.find('@');
  if (at != std::string_view::npos) {
    auto t = ParseUnsigned(s.substr(at + 1), 65535);
    if (!t) return ProgError(prog, "Invalid --signal specification");
    when = *t;
    s = s.substr(0, at);
  }
  auto sig = ParseSignal(s);
  if (!sig.ok() || *sig <= 0) return ProgError(prog, "Invalid --signal specification");
  spec.set_warn_signal(*sig);
  spec.set_warn_time(static_cast<uint32_t>(when));
  spec.set_warn_batch_only(batch_only);
  return Status::Ok();
}

bool ValidGpuBind(std::string_view value) {
  std::string_view rest = value;
  if (rest.substr(0, 8) == "verbose,") rest.remove_prefix(8);
  if (rest == "closest" || rest == "none") return true;
  for (std::string_view type : {"single:", "per_task:", "map_gpu:", "mask_gpu:"}) {
    if (rest.substr(0, type.size()) != type) continue;
    std::string_view list = rest.substr(type.size());
    return !list.empty() &&
           list.find_first_not_of("0123456789abcdefABCDEFxX,*") == std::string_view::npos;
  }
  return false;
}

Status ParseSwitches(std::string_view prog, const std::string& value, pb::JobSpec& spec) {
  std::string count = value, wait;
  if (auto at = value.find('@'); at != std::string::npos) {
    count = value.substr(0, at);
    wait = value.substr(at + 1);
  }
  auto n = ParseUnsigned(Trim(count));
  if (!n) return ProgError(prog, "Invalid --switches specification: " + value);
  spec.set_switches(static_cast<uint32_t>(*n));
  if (!wait.empty()) {
    auto seconds = ParseDurationSeconds(wait);
    if (!seconds.ok() || *seconds < 0)
      return ProgError(prog, "Invalid --switches specification: " + value);
    // Stored +1 so that an explicit "@0" (do not wait) differs from "not given" (0).
    spec.set_switches_wait_s(static_cast<uint32_t>(std::min<int64_t>(*seconds, 0xfffffffe)) + 1);
  }
  return Status::Ok();
}

bool ValidMailType(std::string_view s) {
  static constexpr std::string_view kTypes[] = {
      "NONE",          "BEGIN",          "END",        "FAIL",       "REQUEUE",
      "ALL",           "INVALID_DEPEND", "STAGE_OUT",  "TIME_LIMIT", "TIME_LIMIT_90",
      "TIME_LIMIT_80", "TIME_LIMIT_50",  "ARRAY_TASKS"};
  if (s.empty()) return false;
  for (std::string_view item : Split(s, ',')) {
    bool ok = false;
    for (std::string_view t : kTypes) ok = ok || EqualsIgnoreCase(item, t);
    if (!ok) return false;
  }
  return true;
}

Result<std::string> ParseDistribution(std::string_view prog, std::string_view value,
                                      std::optional<std::string> plane_size_env) {
  auto bad = [&] { return ProgError(prog, "Invalid --distribution specification"); };
  std::string v = Lower(value);
  std::string pack;
  if (size_t comma = v.find(','); comma != std::string::npos) {
    pack = v.substr(comma + 1);
    v.resize(comma);
    if (pack != "pack" && pack != "nopack") return bad();
  }
  std::vector<std::string_view> levels = Split(v, ':');
  if (levels.size() > 3) return bad();
  std::string out;
  if (levels[0].substr(0, 5) == "plane") {
    // plane=<size> (or SLURM_DIST_PLANESIZE); no socket/core distribution may follow.
    std::string_view size;
    if (levels[0].size() > 5) {
      if (levels[0][5] != '=') return bad();
      size = levels[0].substr(6);
    } else if (plane_size_env) {
      size = *plane_size_env;
    }
    auto n = ParseUnsigned(size);
    if (!n || *n == 0) {
      return InvalidArgument(std::string(prog) +
                             ": error: Invalid plane size or size not specified\n" +
                             bad().message());
    }
    if (levels.size() > 1) return bad();
    out = "plane=" + std::to_string(*n);
  } else {
    std::string_view first = levels[0];
    if (first == "*") first = "block";
    if (first != "block" && first != "cyclic" && first != "arbitrary") return bad();
    out = std::string(first);
    std::string second;
    for (size_t l = 1; l < levels.size(); ++l) {
      std::string_view level = levels[l];
      // '*' is the default: cyclic across sockets, and for cores whatever the sockets use.
      if (level == "*") level = l == 1 ? std::string_view("cyclic") : std::string_view(second);
      if (level != "block" && level != "cyclic" && level != "fcyclic") return bad();
      if (l == 1) second = std::string(level);
      out += ':';
      out += level;
    }
  }
  if (!pack.empty()) out += "," + pack;
  return out;
}

Result<std::vector<std::string>> ApplyExport(std::string_view prog, std::string_view export_spec,
                                             const std::vector<std::string>& environment) {
  bool all = false, none = false;
  std::vector<std::string> items;  // "NAME" or "NAME=value"
  for (std::string_view piece : Split(export_spec, ',')) {
    if (piece.empty()) continue;
    if (EqualsIgnoreCase(piece, "ALL")) {
      all = true;
      continue;
    }
    if (EqualsIgnoreCase(piece, "NONE")) {
      none = true;
      continue;
    }
    if (IsVarName(VarName(piece))) {
      items.emplace_back(piece);
    } else if (!items.empty() && items.back().find('=') != std::string::npos) {
      items.back() += ',';  // a comma inside the previous value
      items.back() += piece;
    } else {
      return ProgError(prog, "Invalid --export specification: '" + std::string(piece) +
                                 "' is not a variable name");
    }
  }
  if (all && none) {
    return ProgError(prog, "Invalid --export specification: ALL and NONE are exclusive");
  }
  if (!all && !none && items.empty()) {
    return ProgError(prog, "Invalid --export specification: \"" + std::string(export_spec) + "\"");
  }
  std::vector<std::string> out;
  if (all) {
    out = environment;
    for (const auto& item : items) {
      // With ALL, the user's environment takes precedence over explicit values.
      if (item.find('=') != std::string::npos && !FindEnv(out, VarName(item))) out.push_back(item);
    }
    return out;
  }
  for (const auto& e : environment)
    if (e.compare(0, 6, "SLURM_") == 0) out.push_back(e);
  for (const auto& item : items) {
    std::string_view name = VarName(item);
    std::string entry;
    if (item.find('=') != std::string::npos) {
      entry = item;
    } else if (const std::string* e = FindEnv(environment, name)) {
      entry = *e;
    } else {
      continue;  // not set in the caller's environment
    }
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const std::string& o) { return VarName(o) == name; });
    if (it != out.end()) {
      *it = std::move(entry);
    } else {
      out.push_back(std::move(entry));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Job-allocation options shared by srun and salloc
// ---------------------------------------------------------------------------------------------

AllocationState NewAllocationState(std::string_view prog, int64_t now) {
  AllocationState st;
  st.prog = prog;
  st.now = now;
  st.spec.set_time_limit(kTimeNoVal);
  st.spec.set_time_min(kTimeNoVal);
  st.spec.set_requeue(-1);
  st.spec.set_interactive(true);
  return st;
}

namespace {

Status Fatal(std::string_view prog, const std::string& text) {
  return InvalidArgument(std::string(prog) + ": fatal: " + text);
}

}  // namespace

Status ApplyAllocationOption(AllocationState& st, const OptionSetting& s, OptSource source,
                             bool* handled) {
  *handled = true;
  pb::JobSpec& spec = st.spec;
  const std::string value = s.value.value_or("");
  const std::string_view prog = st.prog;
  auto count = [&](auto setter) -> Status {
    auto v = PositiveCount(prog, value, s.name);
    if (!v.ok()) return v.status();
    setter(*v);
    return Status::Ok();
  };
  switch (s.id) {
    case kAllocAccount:
      spec.set_account(value);
      break;
    case kAllocBegin: {
      auto t = ParseBeginTime(value, st.now);
      if (!t.ok()) return ProgError(prog, "Invalid --begin specification");
      spec.set_begin_time(*t);
      break;
    }
    case kAllocChdir:
      if (value.empty()) return ProgError(prog, "Invalid --chdir specification: empty directory");
      st.chdir = value;
      break;
    case kAllocComment:
      spec.set_comment(value);
      break;
    case kAllocConstraint:
      spec.set_constraint(value);
      break;
    case kAllocCpusPerGpu:
      return count([&](uint32_t v) { spec.set_cpus_per_gpu(v); });
    case kAllocCpusPerTask:
      st.cpus_per_task_given = true;
      return count([&](uint32_t v) { spec.set_cpus_per_task(v); });
    case kAllocDeadline: {
      auto t = ParseBeginTime(value, st.now);
      if (!t.ok()) return ProgError(prog, "Invalid --deadline specification");
      spec.set_deadline(*t);
      break;
    }
    case kAllocDependency:
      spec.set_dependency(value);
      break;
    case kAllocDistribution: {
      auto d = ParseDistribution(prog, value, st.plane_size_env);
      if (!d.ok()) return d.status();
      st.distribution = *d;
      break;
    }
    case kAllocExclude:
      spec.set_exclude(value);
      break;
    case kAllocExclusive: {
      // --exclusive[=user|mcs]; "exclusive" is what SLURM_EXCLUSIVE= (empty) reads as.
      std::string mode = Lower(value);
      if (s.value && mode != "user" && mode != "mcs" && mode != "exclusive") {
        return ProgError(prog, "Invalid --exclusive specification");
      }
      spec.set_exclusive(true);
      spec.set_exclusive_mode(mode == "exclusive" ? std::string() : mode);
      break;
    }
    case kAllocGpus:
      if (value.empty()) return ProgError(prog, "Invalid --gpus specification: empty");
      spec.set_gpus(value);
      break;
    case kAllocGpusPerNode:
      if (value.empty()) return ProgError(prog, "Invalid --gpus-per-node specification: empty");
      st.gpus_per_node = value;
      break;
    case kAllocGpusPerTask:
      if (value.empty()) return ProgError(prog, "Invalid --gpus-per-task specification: empty");
      spec.set_gpus_per_task(value);
      break;
    case kAllocGres:
      spec.set_gres(EqualsIgnoreCase(value, "none") ? std::string() : value);
      break;
    case kAllocHold:
      spec.set_hold(true);
      break;
    case kAllocImmediate: {
      // -I[secs]: no argument means one second (resources now or never).
      uint64_t secs = 1;
      if (s.value) {
        auto v = ParseUnsigned(Trim(value));
        if (!v) return ProgError(prog, "Invalid numeric value \"" + value + "\" for immediate.");
        secs = *v;
      }
      spec.set_immediate_s(static_cast<uint32_t>(secs));
      break;
    }
    case kAllocJobName:
      spec.set_name(value);
      st.name_given = true;
      break;
    case kAllocLicenses:
      spec.set_licenses(value);
      break;
    case kAllocMailType:
      if (!ValidMailType(value)) return ProgError(prog, "Invalid --mail-type argument: " + value);
      spec.set_mail_type(value);
      break;
    case kAllocMailUser:
      spec.set_mail_user(value);
      break;
    case kAllocMem:
    case kAllocMemPerCpu:
    case kAllocMemPerGpu: {
      auto mb = ParseMemoryMB(Trim(value));
      if (!mb.ok()) return ProgError(prog, "Invalid --" + s.name + " specification");
      st.mem[static_cast<int>(source)][s.id - kAllocMem] = *mb;
      break;
    }
    case kAllocMincpus:
      return count([&](uint32_t v) { spec.set_min_cpus_per_node(v); });
    case kAllocNice: {
      int64_t nice = 100;
      if (s.value) {
        auto v = ParseSigned(Trim(value));
        if (!v || *v > 2147483645 || *v < -2147483645) {
          return ProgError(prog, "Invalid --nice value \"" + value +
                                     "\": must be between -2147483645 and 2147483645");
        }
        nice = *v;
      }
      spec.set_nice(static_cast<int32_t>(nice));
      break;
    }
    case kAllocNoKill: {
      // -k[off]. On the command line Slurm takes "set" or "off"/"no"; a variable also follows
      // the flag rule (empty, yes or non-zero sets it; anything else leaves it unset).
      std::string v = Lower(value);
      if (!s.value || v == "set" || v == "yes" || v == "on" || v == "1") {
        st.no_kill = true;
      } else if (v == "off" || v == "no" || v == "0") {
        st.no_kill = false;
      } else if (source == OptSource::kEnv) {
        st.no_kill = EnvFlagSet(value);
      } else {
        return ProgError(prog, "Invalid --no-kill specification");
      }
      break;
    }
    case kAllocNodelist:
      spec.set_nodelist(value);
      break;
    case kAllocNodes:
      if (Status e = ParseNodes(prog, value, spec); !e.ok()) return e;
      st.nodes_given = true;
      break;
    case kAllocNtasks:
      st.ntasks_given = true;
      return count([&](uint32_t v) { spec.set_num_tasks(v); });
    case kAllocNtasksPerNode:
      st.ntasks_per_node_given = true;
      return count([&](uint32_t v) { spec.set_ntasks_per_node(v); });
    case kAllocOvercommit:
      spec.set_overcommit(true);
      break;
    case kAllocOversubscribe:
      spec.set_oversubscribe(true);
      break;
    case kAllocPartition:
      spec.set_partition(value);
      break;
    case kAllocQos:
      spec.set_qos(value);
      break;
    case kAllocQuiet:
      st.quiet = true;
      break;
    case kAllocReservation:
      spec.set_reservation(value);
      break;
    case kAllocSignal:
      return ParseSignalSpec(prog, value, spec);
    case kAllocSwitches:
      return ParseSwitches(prog, value, spec);
    case kAllocTime: {
      auto t = ParseTimeLimit(Trim(value));
      if (!t.ok()) return ProgError(prog, "Invalid --time specification");
      // "A time limit of zero requests that no time limit be imposed."
      spec.set_time_limit(*t == 0 ? kTimeInfinite : *t);
      break;
    }
    case kAllocTimeMin: {
      auto t = ParseTimeLimit(Trim(value));
      if (!t.ok()) return ProgError(prog, "Invalid --time-min specification");
      spec.set_time_min(*t);
      break;
    }
    case kAllocVerbose:
      ++st.verbose;
      break;
    case kAllocWckey:
      spec.set_wckey(value);
      break;
    case kAllocHelp:
    case kAllocUsage:
    case kAllocVersion:
    case kAllocIgnored:
      break;
    case kAllocUnsupported:
      st.warnings.push_back(std::string(prog) + ": warning: option --" + s.name +
                            " is not supported by Shoal; ignored");
      break;
    default:
      *handled = false;
      break;
  }
  return Status::Ok();
}

Status FinishAllocation(AllocationState& st) {
  pb::JobSpec& spec = st.spec;
  // Memory: one of --mem, --mem-per-cpu, --mem-per-gpu; the command line replaces the
  // environment (possibly inherited from salloc or sbatch).
  auto given = [&](int src) {
    int n = 0;
    for (const auto& m : st.mem[src]) n += m.has_value();
    return n;
  };
  const int cmd = static_cast<int>(OptSource::kCmdline), env = static_cast<int>(OptSource::kEnv);
  if (given(cmd) > 1) {
    return Fatal(st.prog, "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.");
  }
  if (given(cmd) == 0 && given(env) > 1) {
    return Fatal(st.prog,
                 "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually "
                 "exclusive.");
  }
  const auto& mem = st.mem[given(cmd) ? cmd : env];
  if (mem[0]) {
    spec.set_mem_per_node_mb(*mem[0]);
    spec.set_mem_whole_node(*mem[0] == 0);  // --mem=0: all the memory of each node
  }
  if (mem[1]) spec.set_mem_per_cpu_mb(*mem[1]);
  if (mem[2]) spec.set_mem_per_gpu_mb(*mem[2]);

  if (st.quiet && st.verbose > 0) {
    return ProgError(st.prog, "don't specify both --verbose (-v) and --quiet (-Q)");
  }
  if (st.gpus_per_node) {
    // --gres is per node, so --gpus-per-node=[type:]n is --gres=gpu:[type:]n.
    bool has_gpu = false;
    for (std::string_view g : Split(spec.gres(), ','))
      has_gpu = has_gpu || g == "gpu" || g.substr(0, 4) == "gpu:";
    if (!has_gpu) {
      std::string gres = spec.gres();
      if (!gres.empty()) gres += ',';
      spec.set_gres(gres + "gpu:" + *st.gpus_per_node);
    }
  }
  return Status::Ok();
}

}  // namespace jobopt
}  // namespace shoal::cli
