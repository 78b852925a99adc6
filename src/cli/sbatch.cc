// sbatch: submit a batch script (man sbatch). The option logic is in sbatch_options.cc; this file
// does the I/O: environment, script file or stdin, the controller calls, --wait polling.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/sbatch_options.h"
#include "common/name_service.h"
#include "common/states.h"
#include "common/units.h"

extern char** environ;

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

void PrintErr(const std::string& text) {
  std::string line = text;
  line += '\n';
  fwrite(line.data(), 1, line.size(), stderr);
}

void PrintOut(const std::string& text) {
  std::string line = text;
  line += '\n';
  fwrite(line.data(), 1, line.size(), stdout);
}

std::vector<std::string> ReadEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    // A token authenticates this command; the job's own srun would hand it to node daemons,
    // which take no tokens.
    if (std::string_view(*e).starts_with("SLURM_JWT=")) continue;
    env.emplace_back(*e);
  }
  return env;
}

std::string CurrentDir() {
  std::string buf(4096, '\0');
  while (getcwd(buf.data(), buf.size()) == nullptr) {
    if (errno != ERANGE) return "/";
    buf.resize(buf.size() * 2);
  }
  buf.resize(strlen(buf.c_str()));
  return buf;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

std::string UserName(uid_t uid) {
  if (auto user = UserById(uid)) return user->name;
  return std::to_string(uid);
}

// Reads a whole file descriptor; false on a read error.
bool ReadAll(int fd, std::string* out) {
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

bool ReadFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode) && ReadAll(fd, out);
  close(fd);
  return ok;
}

// man sbatch, SCRIPT PATH RESOLUTION: absolute; relative to the working directory (--chdir if
// given on the command line, then the current directory); then $PATH for a bare name.
bool ReadScript(const std::string& name, const SbatchCommandLine& cl, const std::string& cwd,
                const std::vector<std::string>& env, std::string* out) {
  if (!name.empty() && name[0] == '/') return ReadFile(name, out);
  if (cl.chdir) {
    std::string dir = (*cl.chdir)[0] == '/' ? *cl.chdir : cwd + "/" + *cl.chdir;
    out->clear();
    if (ReadFile(dir + "/" + name, out)) return true;
  }
  out->clear();
  if (ReadFile(name, out)) return true;
  if (name.find('/') != std::string::npos) return false;
  for (const auto& e : env) {
    if (e.compare(0, 5, "PATH=") != 0) continue;
    std::string path = e.substr(5);
    size_t start = 0;
    while (start <= path.size()) {
      size_t colon = path.find(':', start);
      if (colon == std::string::npos) colon = path.size();
      std::string dir = path.substr(start, colon - start);
      if (!dir.empty()) {
        out->clear();
        if (ReadFile(dir + "/" + name, out)) return true;
      }
      start = colon + 1;
    }
    break;
  }
  return false;
}

void SleepMs(int ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = static_cast<long>(ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void PrintVerbose(const SbatchRequest& req) {
  const pb::JobSpec& s = req.spec;
  PrintErr("sbatch: job name       : " + s.name());
  PrintErr("sbatch: partition      : " + (s.partition().empty() ? "default" : s.partition()));
  PrintErr("sbatch: time limit     : " + (s.time_limit() == kTimeNoVal
                                              ? std::string("default")
                                              : std::to_string(s.time_limit()) + " min"));
  PrintErr("sbatch: nodes          : " + std::to_string(s.min_nodes()) + "-" +
           std::to_string(s.max_nodes()));
  PrintErr("sbatch: ntasks         : " + std::to_string(s.num_tasks()));
  PrintErr("sbatch: cpus-per-task  : " + std::to_string(s.cpus_per_task()));
  PrintErr("sbatch: work dir       : " + s.work_dir());
  PrintErr("sbatch: environment    : " + std::to_string(s.environment_size()) + " variables");
}

// The partition a --test-only job would use: the one asked for, else the one the controller
// resolved (its answer names it, so no second round trip is needed).
std::string TestOnlyPartition(const pb::SubmitJobResponse& answer, const pb::JobSpec& spec) {
  if (!spec.partition().empty()) return spec.partition();
  if (!answer.expected_partition().empty()) return answer.expected_partition();
  return "(default)";
}

// Polls until the job (every task of an array) has finished; returns sbatch's exit code.
int WaitForJob(const ClientContext& ctx, uint32_t job_id, int error_exit) {
  pb::Request req;
  auto* q = req.mutable_job_query();
  q->add_job_ids(job_id);
  q->set_include_finished(true);
  q->set_omit_script(true);
  int delay_ms = 50;
  int64_t failing_since = 0;
  for (int polls = 0;; ++polls) {
    auto resp = CallController(ctx, req);
    if (!resp.ok()) {
      if (resp.status().code() == ErrorCode::kInvalidJobId) {
        PrintErr("sbatch: error: Job " + std::to_string(job_id) +
                 " is no longer known to the controller");
        return error_exit;
      }
      // Transient (controller restarting): keep trying for a while.
      int64_t now = time(nullptr);
      if (failing_since == 0) failing_since = now;
      if (now - failing_since > 300) {
        PrintErr("sbatch: error: " + resp.error());
        return error_exit;
      }
      SleepMs(1000);
      continue;
    }
    failing_since = 0;
    std::vector<pb::JobRecord> jobs;
    bool done = true;
    for (const auto& j : resp->job_query().jobs()) {
      if (j.job_id() != job_id && j.array_job_id() != job_id) continue;
      if (!IsFinished(j.state()) || j.completing()) done = false;
      jobs.push_back(j);
    }
    if (jobs.empty()) {
      PrintErr("sbatch: error: Job " + std::to_string(job_id) +
               " is no longer known to the controller");
      return error_exit;
    }
    if (done) return WaitExitCode(jobs);
    if (polls == 40) delay_ms = 100;  // 2 s at 50 ms, then 100 ms
    SleepMs(delay_ms);
  }
}

}  // namespace

int SbatchMain(int argc, char** argv) {
  SbatchContext sctx;
  sctx.environment = ReadEnvironment();
  const int error_exit = ErrorExitCode(sctx.environment);

  std::vector<std::string> args(argv + 1, argv + argc);
  auto cl = ParseSbatchCommandLine(args);
  if (!cl.ok()) {
    PrintErr(cl.error());
    return error_exit;
  }
  switch (cl->action) {
    case SbatchAction::kHelp:
      fputs(SbatchHelpText().c_str(), stdout);
      return 0;
    case SbatchAction::kUsage:
      fputs(SbatchUsageText().c_str(), stdout);
      return 0;
    case SbatchAction::kVersion:
      PrintOut("shoal " SHOAL_VERSION_STRING);
      return 0;
    case SbatchAction::kSubmit:
      break;
  }

  sctx.cwd = CurrentDir();
  sctx.hostname = HostName();
  sctx.uid = getuid();
  sctx.gid = getgid();
  sctx.user_name = UserName(sctx.uid);
  sctx.now = time(nullptr);

  std::string script;
  if (cl->wrap) {
    script = WrapScript(*cl->wrap);
  } else if (cl->script_path) {
    if (!ReadScript(*cl->script_path, *cl, sctx.cwd, sctx.environment, &script)) {
      PrintErr("sbatch: error: Unable to open file " + *cl->script_path);
      return error_exit;
    }
  } else if (!ReadAll(STDIN_FILENO, &script)) {
    PrintErr("sbatch: error: Unable to read the batch script from standard input");
    return error_exit;
  }

  auto built = BuildSbatchRequest(*cl, script, sctx);
  if (!built.ok()) {
    PrintErr(built.error());
    return error_exit;
  }
  SbatchRequest& req = *built;
  if (!req.quiet) {
    for (const auto& w : req.warnings) PrintErr(w);
  }
  if (req.verbose > 0) PrintVerbose(req);

  auto ctx = LoadClientContext();
  if (!ctx.ok()) {
    PrintErr("sbatch: error: " + ctx.error());
    return error_exit;
  }
  pb::Request request;
  auto* submit = request.mutable_submit_job();
  submit->set_test_only(req.test_only);
  *submit->mutable_spec() = req.spec;
  auto resp = CallController(*ctx, request);
  if (!resp.ok()) {
    PrintErr("sbatch: error: Batch job submission failed: " + resp.error());
    return error_exit;
  }
  const pb::SubmitJobResponse& answer = resp->submit_job();

  if (req.test_only) {
    PrintErr(TestOnlyMessage(answer.job_id(), FormatTimestamp(answer.expected_start()),
                             RequestedCpus(req.spec), answer.expected_nodes(),
                             TestOnlyPartition(answer, req.spec)));
    return 0;
  }

  if (!req.quiet) {
    if (req.parsable) {
      PrintOut(std::to_string(answer.job_id()));
    } else {
      PrintOut("Submitted batch job " + std::to_string(answer.job_id()));
    }
  }
  if (!req.wait) return 0;
  fflush(stdout);
  return WaitForJob(*ctx, answer.job_id(), error_exit);
}

}  // namespace shoal::cli
