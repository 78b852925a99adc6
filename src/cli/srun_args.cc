#include "cli/srun_args.h"

#include <cstdio>

#include "cli/salloc_options.h"
#include "cli/srun_options.h"

namespace shoal::cli {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f)
    return Error(ErrorCode::kIoError, "srun: error: Unable to open --multi-prog file " + path);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// One task's argv as a --multi-prog line the node's parser reads back verbatim.
std::string Quote(const std::string& arg) {
  if (arg.find('\'') == std::string::npos) return "'" + arg + "'";
  return "\"" + arg + "\"";
}

void PrintWarnings(const std::vector<std::string>& warnings, bool quiet) {
  if (quiet) return;
  for (const auto& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
}

}  // namespace

Result<ParsedSrun> ParseSrunArgs(const std::vector<std::string>& args, const RunContext& ctx) {
  SrunContext sctx;
  sctx.environment = ctx.environment;
  sctx.cwd = ctx.cwd;
  sctx.hostname = ctx.hostname;
  sctx.user_name = ctx.user_name;
  sctx.uid = ctx.uid;
  sctx.gid = ctx.gid;
  sctx.now = ctx.now;
  auto parsed = ParseSrunCommandLine(args, sctx);
  if (!parsed) return parsed.status();
  SrunRequest& req = *parsed;
  ParsedSrun out;
  switch (req.action) {
    case SrunAction::kHelp:
      out.text_only = true;
      out.text = SrunHelpText();
      return out;
    case SrunAction::kUsage:
      out.text_only = true;
      out.text = SrunUsageText();
      return out;
    case SrunAction::kVersion:
      out.text_only = true;
      out.text = "slurm 22.05.8 (shoal 0.1.0)\n";
      return out;
    case SrunAction::kMpiList:
      out.text_only = true;
      out.text = SrunMpiListText();
      return out;
    case SrunAction::kCpuBindHelp:
      out.text_only = true;
      out.text = SrunCpuBindHelpText();
      return out;
    case SrunAction::kBindHelp:
      out.text_only = true;
      out.text = req.help_text;
      return out;
    case SrunAction::kRun:
      break;
  }
  PrintWarnings(req.warnings, req.quiet);
  if (!req.het_group.empty() && req.het_group != "0")
    return Error(ErrorCode::kNotSupported, "srun: error: --het-group=" + req.het_group +
                                               ": heterogeneous jobs are not supported by Shoal");
  SrunInvocation& inv = out.srun;
  if (req.job_id) inv.job_id = req.job_id;
  inv.spec = req.spec;
  inv.immediate_s =
      req.spec.immediate_s() ? std::optional<uint32_t>(req.spec.immediate_s()) : std::nullopt;
  StepLaunchOptions& st = inv.step;
  if (req.multi_prog) {
    auto text = ReadFile(req.argv.empty() ? "" : req.argv[0]);
    if (!text) return text.status();
    uint32_t ntasks = req.spec.num_tasks();
    if (!ntasks) ntasks = std::max<uint32_t>(MultiProgTaskCount(*text), 1);
    std::vector<std::string> extra(req.argv.begin() + 1, req.argv.end());
    auto lines = ParseMultiProgConfig(*text, req.argv[0], ntasks, extra);
    if (!lines) return lines.status();
    // The nodes get one resolved line per task ("<task> 'arg' ..."): %t/%o are already done.
    for (size_t t = 0; t < lines->size(); ++t) {
      st.multi_prog += std::to_string(t);
      for (const auto& a : (*lines)[t]) st.multi_prog += " " + Quote(a);
      st.multi_prog += "\n";
    }
    req.spec.set_num_tasks(ntasks);
    inv.spec.set_num_tasks(ntasks);
  }
  st.create = MakeStepCreateRequest(req);
  if (req.multi_prog) st.create.set_num_tasks(req.spec.num_tasks());
  st.create.set_srun_host(ctx.hostname);
  st.create.set_srun_pid(ctx.pid);
  if (st.create.num_tasks() == 0 && req.job_id == 0 && req.spec.num_tasks())
    st.create.set_num_tasks(req.spec.num_tasks());
  st.work_dir = req.spec.work_dir().empty() ? ctx.cwd : req.spec.work_dir();
  st.label = req.label;
  st.unbuffered = req.unbuffered;
  st.pty = req.pty;
  st.open_mode_append = req.spec.open_mode_append();
  st.quiet = req.quiet;
  st.verbose = req.verbose;
  st.kill_on_bad_exit = req.kill_on_bad_exit.value_or(false);
  st.kill_on_bad_exit_given = req.kill_on_bad_exit.has_value();
  st.wait_s = req.wait_s.value_or(0);
  st.wait_given = req.wait_s.has_value();
  st.input = req.input;
  st.output = req.output;
  st.error = req.error;
  inv.environment = req.environment;
  // What only srun knows (Slurm 22.05 sets these for every task).
  inv.environment.push_back("SLURM_UMASK=0022");
  inv.environment.push_back("SLURM_PRIO_PROCESS=0");
  inv.environment.push_back("SRUN_DEBUG=3");
  if (req.label) inv.environment.push_back("SLURM_LABELIO=1");
  if (!req.distribution.empty())
    inv.environment.push_back("SLURM_DISTRIBUTION=" + req.distribution);
  return out;
}

Result<ParsedSalloc> ParseSallocArgs(const std::vector<std::string>& args, const RunContext& ctx) {
  SallocContext sctx;
  sctx.environment = ctx.environment;
  sctx.cwd = ctx.cwd;
  sctx.hostname = ctx.hostname;
  sctx.user_name = ctx.user_name;
  sctx.uid = ctx.uid;
  sctx.gid = ctx.gid;
  sctx.now = ctx.now;
  auto parsed = ParseSallocCommandLine(args, sctx);
  if (!parsed) return parsed.status();
  SallocRequest& req = *parsed;
  ParsedSalloc out;
  switch (req.action) {
    case SallocAction::kHelp:
      out.text_only = true;
      out.text = SallocHelpText();
      return out;
    case SallocAction::kUsage:
      out.text_only = true;
      out.text = SallocUsageText();
      return out;
    case SallocAction::kVersion:
      out.text_only = true;
      out.text = "slurm 22.05.8 (shoal 0.1.0)\n";
      return out;
    case SallocAction::kAllocate:
      break;
  }
  PrintWarnings(req.warnings, req.quiet);
  SallocInvocation& inv = out.salloc;
  inv.spec = req.spec;
  inv.command = req.argv;
  inv.no_shell = req.no_shell;
  inv.quiet = req.quiet;
  inv.kill_command = req.kill_command;
  inv.kill_command_signal = req.kill_command_signal;
  // Slurm names a --no-shell allocation "no-shell" unless -J says otherwise.
  if (inv.no_shell && req.argv.empty() && req.spec.name() == "interactive")
    inv.spec.set_name("no-shell");
  if (req.spec.immediate_s()) inv.immediate_s = req.spec.immediate_s();
  inv.work_dir = req.spec.work_dir().empty() ? ctx.cwd : req.spec.work_dir();
  if (!req.distribution.empty()) inv.extra_env.push_back("SLURM_DISTRIBUTION=" + req.distribution);
  return out;
}

void FinishSrunInvocation(SrunInvocation& inv, const SlurmConf& conf) {
  StepLaunchOptions& st = inv.step;
  if (st.create.mpi().empty()) st.create.set_mpi(conf.Get("MpiDefault", "none"));
  if (!st.kill_on_bad_exit_given) st.kill_on_bad_exit = conf.Get("KillOnBadExit", "0") == "1";
  if (!st.wait_given) {
    auto w = conf.GetInt("WaitTime", 0);
    st.wait_s = w && *w > 0 ? static_cast<uint32_t>(*w) : 0;
  }
}

}  // namespace shoal::cli
