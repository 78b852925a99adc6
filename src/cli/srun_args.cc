#include "cli/srun_args.h"

#include <cstdlib>
#include <map>

#include "common/units.h"

namespace shoal::cli {
namespace {

std::string EnvValue(const std::vector<std::string>& env, const std::string& key) {
  std::string prefix = key + "=";
  for (const auto& e : env)
    if (e.compare(0, prefix.size(), prefix) == 0) return e.substr(prefix.size());
  return "";
}

Status Bad(const std::string& prog, const std::string& msg) {
  return InvalidArgument(prog + ": error: " + msg);
}

Result<uint32_t> Count(const std::string& prog, const std::string& opt, const std::string& v,
                       bool allow_zero = false) {
  char* end = nullptr;
  unsigned long n = std::strtoul(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || (!allow_zero && n == 0) || n > 0xfffffff0UL)
    return Error(ErrorCode::kInvalidArgument,
                 prog + ": error: Invalid numeric value \"" + v + "\" for " + opt + ".");
  return static_cast<uint32_t>(n);
}

struct OptDef {
  const char* name;
  char short_name;
  int arg;  // 0 none, 1 required, 2 optional
};

// The options both commands share with sbatch's meaning, plus srun's own.
const OptDef kOptions[] = {
    {"nodes", 'N', 1},          {"ntasks", 'n', 1},         {"cpus-per-task", 'c', 1},
    {"ntasks-per-node", 0, 1},  {"nodelist", 'w', 1},       {"exclude", 'x', 1},
    {"partition", 'p', 1},      {"time", 't', 1},           {"job-name", 'J', 1},
    {"label", 'l', 0},          {"output", 'o', 1},         {"error", 'e', 1},
    {"input", 'i', 1},          {"unbuffered", 'u', 0},     {"pty", 0, 0},
    {"multi-prog", 0, 0},       {"kill-on-bad-exit", 'K', 2}, {"wait", 'W', 1},
    {"cpu-bind", 0, 1},         {"cpu_bind", 0, 1},         {"mpi", 0, 1},
    {"export", 0, 1},           {"chdir", 'D', 1},          {"jobid", 0, 1},
    {"overlap", 0, 0},          {"exclusive", 0, 2},        {"exact", 0, 0},
    {"het-group", 0, 1},        {"quiet", 'Q', 0},          {"verbose", 'v', 0},
    {"immediate", 'I', 2},      {"overcommit", 'O', 0},     {"mem", 0, 1},
    {"mem-per-cpu", 0, 1},      {"gres", 0, 1},             {"gpus", 'G', 1},
    {"account", 'A', 1},        {"qos", 'q', 1},            {"constraint", 'C', 1},
    {"reservation", 0, 1},      {"relative", 'r', 1},       {"distribution", 'm', 1},
    {"no-shell", 0, 0},         {"help", 'h', 0},           {"usage", 0, 0},
    {"version", 'V', 0},        {"open-mode", 0, 1},        {"no-kill", 'k', 2},
    {"disable-status", 'X', 0}, {"propagate", 0, 2},        {"mpi-list", 0, 0},
    {"gpus-per-node", 0, 1},    {"gpus-per-task", 0, 1},    {"bell", 0, 0},
    {"no-bell", 0, 0},          {"comment", 0, 1},          {"begin", 'b', 1},
    {"dependency", 'd', 1},     {"nice", 0, 2},             {"hold", 'H', 0},
};

const OptDef* FindLong(const std::string& name) {
  const OptDef* found = nullptr;
  for (const auto& o : kOptions) {
    if (name == o.name) return &o;
    if (std::string(o.name).rfind(name, 0) == 0) {
      if (found) return nullptr;  // ambiguous
      found = &o;
    }
  }
  return found;
}

const OptDef* FindShort(char c) {
  for (const auto& o : kOptions)
    if (o.short_name == c) return &o;
  return nullptr;
}

struct Parsed {
  std::vector<std::pair<std::string, std::optional<std::string>>> opts;
  std::vector<std::string> rest;
};

Result<Parsed> Tokenize(const std::string& prog, const std::vector<std::string>& args) {
  Parsed p;
  size_t i = 0;
  auto unrecognized = [&](const std::string& what) {
    return InvalidArgument(prog + ": unrecognized option '" + what + "'\nTry \"" + prog +
                           " --help\" for more information");
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    if (a[1] == '-') {
      std::string name = a.substr(2);
      std::optional<std::string> value;
      auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const OptDef* d = FindLong(name);
      if (!d) return unrecognized(a);
      if (d->arg == 1 && !value) {
        if (i + 1 >= args.size())
          return InvalidArgument(prog + ": option '--" + d->name + "' requires an argument");
        value = args[++i];
      }
      if (d->arg == 0 && value)
        return InvalidArgument(prog + ": option '--" + d->name + "' doesn't allow an argument");
      p.opts.emplace_back(d->name, value);
      continue;
    }
    for (size_t j = 1; j < a.size(); ++j) {
      const OptDef* d = FindShort(a[j]);
      if (!d)
        return InvalidArgument(prog + ": invalid option -- '" + std::string(1, a[j]) +
                               "'\nTry \"" + prog + " --help\" for more information");
      if (d->arg == 0) {
        p.opts.emplace_back(d->name, std::nullopt);
        continue;
      }
      std::optional<std::string> value;
      if (j + 1 < a.size()) {
        value = a.substr(j + 1);
      } else if (d->arg == 1) {
        if (i + 1 >= args.size())
          return InvalidArgument(prog + ": option requires an argument -- '" +
                                 std::string(1, a[j]) + "'");
        value = args[++i];
      }
      p.opts.emplace_back(d->name, value);
      break;
    }
  }
  for (; i < args.size(); ++i) p.rest.push_back(args[i]);
  return p;
}

// --export=ALL|NONE|[ALL,]VAR[=value],...
std::vector<std::string> ApplyExport(const std::vector<std::string>& env, const std::string& spec) {
  if (spec.empty() || spec == "ALL") return env;
  std::vector<std::string> out;
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t c = spec.find(',', pos);
    items.push_back(spec.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  bool all = false;
  for (const auto& it : items)
    if (it == "ALL") all = true;
  if (all) out = env;
  for (const auto& e : env)
    if (e.rfind("SLURM_", 0) == 0 && !all) out.push_back(e);
  for (const auto& it : items) {
    if (it == "ALL" || it == "NONE" || it.empty()) continue;
    if (it.find('=') != std::string::npos) {
      out.push_back(it);
    } else {
      std::string v = EnvValue(env, it);
      if (!v.empty() || !all) out.push_back(it + "=" + v);
    }
  }
  return out;
}

struct Common {
  pb::JobSpec spec;
  std::map<std::string, std::string> last;  // option -> value (last wins)
  std::vector<std::string> seen;
};

Status FillSpec(const std::string& prog, const Parsed& p, const RunContext& ctx, Common& c) {
  pb::JobSpec& s = c.spec;
  s.set_time_limit(kTimeNoVal);
  s.set_time_min(kTimeNoVal);
  s.set_requeue(-1);
  s.set_submit_dir(ctx.cwd);
  s.set_work_dir(ctx.cwd);
  s.set_submit_host(ctx.hostname);
  s.set_user_name(ctx.user_name);
  s.set_uid(ctx.uid);
  s.set_gid(ctx.gid);
  s.set_interactive(true);
  for (const auto& [name, value] : p.opts) {
    std::string v = value.value_or("");
    c.last[name] = v;
    c.seen.push_back(name);
    if (name == "nodes") {
      auto dash = v.find('-');
      std::string lo = v.substr(0, dash);
      char* end = nullptr;
      unsigned long n = std::strtoul(lo.c_str(), &end, 10);
      if (lo.empty() || *end != '\0') return Bad(prog, "\"" + v + "\" is not a valid node count");
      if (n == 0) return Error(ErrorCode::kInvalidArgument,
                               prog + ": error: Invalid node count specification: " + v);
      s.set_min_nodes(static_cast<uint32_t>(n));
      s.set_max_nodes(dash == std::string::npos
                          ? static_cast<uint32_t>(n)
                          : static_cast<uint32_t>(std::strtoul(v.c_str() + dash + 1, nullptr, 10)));
    } else if (name == "ntasks") {
      auto n = Count(prog, "--ntasks", v);
      if (!n) return n.status();
      s.set_num_tasks(*n);
    } else if (name == "cpus-per-task") {
      auto n = Count(prog, "--cpus-per-task", v);
      if (!n) return n.status();
      s.set_cpus_per_task(*n);
    } else if (name == "ntasks-per-node") {
      auto n = Count(prog, "--ntasks-per-node", v);
      if (!n) return n.status();
      s.set_ntasks_per_node(*n);
    } else if (name == "nodelist") {
      s.set_nodelist(v);
    } else if (name == "exclude") {
      s.set_exclude(v);
    } else if (name == "partition") {
      s.set_partition(v);
    } else if (name == "time") {
      auto t = ParseTimeLimit(v);
      if (!t) return Bad(prog, "Invalid --time specification");
      s.set_time_limit(*t);
    } else if (name == "job-name") {
      s.set_name(v);
    } else if (name == "chdir") {
      s.set_work_dir(v.empty() || v[0] == '/' ? v : ctx.cwd + "/" + v);
    } else if (name == "mem") {
      auto m = ParseMemoryMB(v);
      if (!m) return Bad(prog, "Invalid --mem specification");
      s.set_mem_per_node_mb(*m);
      if (*m == 0) s.set_mem_whole_node(true);
    } else if (name == "mem-per-cpu") {
      auto m = ParseMemoryMB(v);
      if (!m) return Bad(prog, "Invalid --mem-per-cpu specification");
      s.set_mem_per_cpu_mb(*m);
    } else if (name == "gres") {
      s.set_gres(v);
    } else if (name == "gpus") {
      s.set_gpus(v);
    } else if (name == "gpus-per-task") {
      s.set_gpus_per_task(v);
    } else if (name == "gpus-per-node") {
      s.set_gres("gpu:" + v);
    } else if (name == "account") {
      s.set_account(v);
    } else if (name == "qos") {
      s.set_qos(v);
    } else if (name == "constraint") {
      s.set_constraint(v);
    } else if (name == "reservation") {
      s.set_reservation(v);
    } else if (name == "exclusive") {
      s.set_exclusive(true);
      s.set_exclusive_mode(v);
    } else if (name == "overcommit") {
      s.set_overcommit(true);
    } else if (name == "comment") {
      s.set_comment(v);
    } else if (name == "dependency") {
      s.set_dependency(v);
    } else if (name == "hold") {
      s.set_hold(true);
    } else if (name == "begin") {
      auto b = ParseBeginTime(v, ctx.now);
      if (!b) return Bad(prog, "Invalid --begin specification");
      s.set_begin_time(*b);
    }
  }
  return Status::Ok();
}

std::string Basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char kMpiList[] =
    "MPI plugin types are...\n"
    "\tnone\n"
    "\tpmi2\n"
    "\tpmix\n"
    "specific pmix plugin versions available: pmix_v4\n";

}  // namespace

Result<ParsedSrun> ParseSrunArgs(const std::vector<std::string>& args, const RunContext& ctx) {
  const std::string prog = "srun";
  auto p = Tokenize(prog, args);
  if (!p) return p.status();
  ParsedSrun out;
  Common c;
  if (Status s = FillSpec(prog, *p, ctx, c); !s.ok()) return s;
  for (const auto& [name, v] : c.last) {
    if (name == "help" || name == "usage") {
      out.text_only = true;
      out.text = "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]\n";
      return out;
    }
    if (name == "version") {
      out.text_only = true;
      out.text = "shoal 0.1.0 (slurm 22.05 compatible)\n";
      return out;
    }
    if (name == "mpi" && v == "list") {
      out.text_only = true;
      out.text = kMpiList;
      return out;
    }
  }
  SrunInvocation& inv = out.srun;
  inv.spec = c.spec;
  StepLaunchOptions& st = inv.step;
  pb::StepCreateRequest& cr = st.create;
  const pb::JobSpec& s = c.spec;
  // Inside an allocation unless --jobid says which, SLURM_JOB_ID does.
  std::string jobid = c.last.count("jobid") ? c.last["jobid"] : EnvValue(ctx.environment, "SLURM_JOB_ID");
  if (!jobid.empty()) {
    auto n = Count(prog, "--jobid", jobid.substr(0, jobid.find('.')));
    if (!n) return Bad(prog, "Invalid job id specified");
    inv.job_id = *n;
  }
  // Inside an allocation, the job's task count is srun's default (SLURM_NTASKS input).
  uint32_t ntasks = s.num_tasks();
  if (!ntasks && inv.job_id && !c.last.count("nodes")) {
    std::string env_ntasks = EnvValue(ctx.environment, "SLURM_NTASKS");
    if (!env_ntasks.empty()) ntasks = static_cast<uint32_t>(std::strtoul(env_ntasks.c_str(), nullptr, 10));
  }
  cr.set_min_nodes(s.min_nodes());
  cr.set_max_nodes(s.max_nodes());
  cr.set_num_tasks(ntasks);
  cr.set_cpus_per_task(s.cpus_per_task());
  cr.set_ntasks_per_node(s.ntasks_per_node());
  cr.set_nodelist(s.nodelist());
  cr.set_exclude(s.exclude());
  cr.set_overlap(c.last.count("overlap") > 0);
  cr.set_exclusive(c.last.count("exclusive") > 0 || c.last.count("exact") > 0);
  cr.set_overcommit(s.overcommit());
  cr.set_mem_per_node_mb(s.mem_per_node_mb());
  cr.set_time_limit(s.time_limit());
  cr.set_work_dir(s.work_dir());
  cr.set_gres(s.gres());
  cr.set_srun_host(ctx.hostname);
  cr.set_srun_pid(ctx.pid);
  if (c.last.count("relative")) {
    auto n = Count(prog, "--relative", c.last["relative"], true);
    if (!n) return n.status();
    cr.set_relative_given(true);
    cr.set_relative(*n);
  }
  if (c.last.count("het-group")) {
    const std::string& g = c.last["het-group"];
    if (g != "0") return Error(ErrorCode::kNotSupported,
                               prog + ": error: --het-group=" + g +
                                   ": heterogeneous jobs are not supported");
  }
  std::string mpi = c.last.count("mpi") ? c.last["mpi"] : EnvValue(ctx.environment, "SLURM_MPI_TYPE");
  if (!mpi.empty()) {
    if (mpi == "pmix_v4" || mpi == "pmix_v3" || mpi == "pmix") mpi = "pmix";
    else if (mpi == "pmi2" || mpi == "none" || mpi == "pmi1") {
    } else {
      return Error(ErrorCode::kInvalidArgument,
                   prog + ": error: Invalid MPI type '" + mpi + "', --mpi=list for acceptable types");
    }
  }
  cr.set_mpi(mpi);
  std::string bind = c.last.count("cpu-bind") ? c.last["cpu-bind"]
                     : c.last.count("cpu_bind") ? c.last["cpu_bind"]
                                                : EnvValue(ctx.environment, "SLURM_CPU_BIND");
  cr.set_cpu_bind(bind);
  st.work_dir = s.work_dir();
  st.label = c.last.count("label") > 0;
  st.unbuffered = c.last.count("unbuffered") > 0;
  st.pty = c.last.count("pty") > 0;
  st.stdin_mode = c.last.count("input") ? c.last["input"] : "";
  st.stdout_pattern = c.last.count("output") ? c.last["output"] : "";
  st.stderr_pattern = c.last.count("error") ? c.last["error"] : "";
  if (st.stdout_pattern == "none") st.stdout_pattern = "/dev/null";
  if (st.stderr_pattern == "none") st.stderr_pattern = "/dev/null";
  if (c.last.count("open-mode")) st.open_mode_append = c.last["open-mode"] == "append";
  if (c.last.count("kill-on-bad-exit")) {
    const std::string& k = c.last["kill-on-bad-exit"];
    st.kill_on_bad_exit = k.empty() || k != "0";
  }
  if (c.last.count("wait")) {
    auto n = Count(prog, "--wait", c.last["wait"], true);
    if (!n) return n.status();
    st.wait_s = *n;
  }
  st.quiet = c.last.count("quiet") > 0;
  if (c.last.count("immediate")) {
    const std::string& v = c.last["immediate"];
    inv.immediate_s = v.empty() ? 1 : static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
  }
  if (p->rest.empty()) return Error(ErrorCode::kInvalidArgument, "srun: fatal: No command given to execute.");
  if (c.last.count("multi-prog")) {
    st.multi_prog = "";  // filled by the caller from the file (I/O)
    std::string path = p->rest[0];
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return Bad(prog, "Unable to open --multi-prog configuration file " + path);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) st.multi_prog.append(buf, n);
    std::fclose(f);
  }
  cr.mutable_argv()->Assign(p->rest.begin(), p->rest.end());
  cr.set_name(s.name().empty() ? Basename(p->rest[0]) : s.name());
  if (inv.spec.name().empty()) inv.spec.set_name(cr.name());
  inv.environment = ApplyExport(ctx.environment, c.last.count("export") ? c.last["export"] : "");
  // What only srun knows (observed in Slurm 22.05).
  inv.environment.push_back("SLURM_UMASK=0022");
  inv.environment.push_back("SLURM_PRIO_PROCESS=0");
  inv.environment.push_back("SRUN_DEBUG=3");
  if (st.label) inv.environment.push_back("SLURM_LABELIO=1");
  return out;
}

Result<ParsedSalloc> ParseSallocArgs(const std::vector<std::string>& args, const RunContext& ctx) {
  const std::string prog = "salloc";
  auto p = Tokenize(prog, args);
  if (!p) return p.status();
  ParsedSalloc out;
  Common c;
  if (Status s = FillSpec(prog, *p, ctx, c); !s.ok()) return s;
  for (const auto& [name, v] : c.last) {
    if (name == "help" || name == "usage") {
      out.text_only = true;
      out.text = "Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)...]] [command(0) [args(0)...]]\n";
      return out;
    }
    if (name == "version") {
      out.text_only = true;
      out.text = "shoal 0.1.0 (slurm 22.05 compatible)\n";
      return out;
    }
  }
  SallocInvocation& inv = out.salloc;
  inv.spec = c.spec;
  inv.command = p->rest;
  inv.no_shell = c.last.count("no-shell") > 0;
  inv.quiet = c.last.count("quiet") > 0;
  if (c.last.count("immediate")) {
    const std::string& v = c.last["immediate"];
    inv.immediate_s = v.empty() ? 1 : static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
  }
  if (inv.spec.name().empty())
    inv.spec.set_name(inv.no_shell ? "no-shell" : inv.command.empty() ? "interactive" : Basename(inv.command[0]));
  std::vector<std::string> env = ctx.environment;
  for (const auto& e : env)
    if (e.find('=') != std::string::npos) inv.spec.add_environment(e);
  return out;
}

void FinishSrunInvocation(SrunInvocation& inv, const SlurmConf& conf) { (void)inv; (void)conf; }

}  // namespace shoal::cli
