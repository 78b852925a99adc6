// scancel (man scancel): cancel or signal jobs by id or by filters. Argument parsing lives in
// scancel_options.cc; this file resolves users and node lists, asks -i questions, calls the
// controller and reports per-job results the way Slurm words them.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/scancel_options.h"
#include "common/errors.h"
#include "common/hostlist.h"
#include "common/name_service.h"
#include "common/states.h"
#include "common/units.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

void Out(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }
void Err(const std::string& text) {
  std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}
void PrintError(const std::string& text) { Err("scancel: error: " + text); }

std::optional<uint32_t> ResolveUser(const std::string& user) {
  if (auto entry = UserByName(user)) return entry->uid;
  if (!user.empty() && user.find_first_not_of("0123456789") == std::string::npos &&
      user.size() <= 10) {
    unsigned long long v = std::strtoull(user.c_str(), nullptr, 10);
    if (v <= 0xffffffffull) return static_cast<uint32_t>(v);
  }
  return std::nullopt;
}

// -w: a hostlist, or a file of names when the argument contains '/'.
std::optional<std::vector<std::string>> ResolveNodes(const std::string& arg) {
  std::string expr = arg;
  if (arg.find('/') != std::string::npos) {
    std::ifstream in(arg);
    if (!in) {
      PrintError("Unable to open file " + arg);
      return std::nullopt;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    expr.clear();
    for (char c : ss.str()) {
      if (c == '\n' || c == '\r' || c == ' ' || c == '\t') c = ',';
      if (c == ',' && (expr.empty() || expr.back() == ',')) continue;
      expr += c;
    }
    while (!expr.empty() && expr.back() == ',') expr.pop_back();
  }
  auto hosts = ExpandHostlist(expr);
  if (!hosts.ok()) {
    PrintError("Invalid node list: " + arg);
    return std::nullopt;
  }
  return std::move(*hosts);
}

// Does `job` match a job id argument ("12", "12_3", "12_[1-3]")?
bool MatchesIdArg(const pb::JobRecord& job, const std::string& arg) {
  size_t us = arg.find('_');
  uint32_t base = static_cast<uint32_t>(std::strtoul(arg.substr(0, us).c_str(), nullptr, 10));
  bool is_task = job.array_job_id() != 0 && job.array_task_id() != kNoArrayTask;
  if (us == std::string::npos)
    return job.job_id() == base || (is_task && job.array_job_id() == base);
  if (!is_task || job.array_job_id() != base) return false;
  std::string rest = arg.substr(us + 1);
  if (rest == "*") return true;
  if (!rest.empty() && rest.front() == '[') rest = rest.substr(1, rest.size() - 2);
  std::stringstream ss(rest);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    uint32_t lo = static_cast<uint32_t>(std::strtoul(part.c_str(), nullptr, 10));
    uint32_t hi = dash == std::string::npos
                      ? lo
                      : static_cast<uint32_t>(std::strtoul(part.c_str() + dash + 1, nullptr, 10));
    if (job.array_task_id() >= lo && job.array_task_id() <= hi) return true;
  }
  return false;
}

// -i: ask about each matching job; returns the ids confirmed.
std::optional<std::vector<std::string>> Confirm(const ClientContext& ctx,
                                                const pb::CancelJobRequest& creq) {
  pb::Request req;
  auto* q = req.mutable_job_query();
  q->set_omit_script(true);
  if (creq.has_filter_uid()) q->add_uids(creq.filter_uid());
  for (int st : creq.filter_states()) q->add_states(static_cast<pb::JobState>(st));
  if (!creq.filter_partition().empty()) q->add_partitions(creq.filter_partition());
  if (!creq.filter_name().empty()) q->add_names(creq.filter_name());
  for (const auto& n : creq.filter_nodes()) q->add_nodes(n);
  auto resp = CallController(ctx, req);
  if (!resp) {
    PrintError(resp.error());
    return std::nullopt;
  }
  std::vector<std::string> confirmed;
  for (const auto& job : resp->job_query().jobs()) {
    if (IsFinished(job.state())) continue;
    if (!creq.filter_account().empty() && job.spec().account() != creq.filter_account()) continue;
    if (!creq.filter_qos().empty() && job.spec().qos() != creq.filter_qos()) continue;
    if (creq.job_ids_size()) {
      bool any = false;
      for (const auto& id : creq.job_ids()) any = any || MatchesIdArg(job, id);
      if (!any) continue;
    }
    Out(CancelPrompt(job));
    std::fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer)) break;
    if (!answer.empty() && (answer[0] == 'y' || answer[0] == 'Y')) {
      std::string id = std::to_string(job.job_id());
      confirmed.push_back(id);
    }
  }
  return confirmed;
}

}  // namespace

int ScancelMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (const char* v = std::getenv(name.c_str())) return std::string(v);
    return std::nullopt;
  };
  auto parsed = ParseScancelArgs(args, env);
  if (!parsed.ok()) {
    Err(parsed.error());
    return 1;
  }
  ScancelOptions& o = *parsed;
  if (o.help) {
    Out(ScancelHelp());
    return 0;
  }
  if (o.usage) {
    Out(ScancelUsage());
    return 0;
  }
  if (o.version) {
    Out("shoal " SHOAL_VERSION_STRING "\n");
    return 0;
  }

  std::optional<uint32_t> uid;
  if (!o.user.empty()) {
    uid = ResolveUser(o.user);
    if (!uid) {
      PrintError("Invalid user name: " + o.user);
      return 1;
    }
  } else if (o.me) {
    uid = static_cast<uint32_t>(getuid());
  }
  std::vector<std::string> nodes;
  if (!o.nodelist.empty()) {
    auto n = ResolveNodes(o.nodelist);
    if (!n) return 1;
    nodes = std::move(*n);
  }

  int rc = 0;
  // Steps ("123.4") go to the controller like jobs; it signals the step's nodes.
  auto ctx = LoadClientContext();
  if (!ctx) {
    PrintError(ctx.error());
    return 1;
  }
  pb::CancelJobRequest creq = BuildCancelRequest(o, uid, nodes);
  if (o.interactive) {
    auto confirmed = Confirm(*ctx, creq);
    if (!confirmed) return 1;
    if (confirmed->empty()) return rc;
    pb::CancelJobRequest only;
    for (const auto& id : *confirmed) only.add_job_ids(id);
    only.set_signal(creq.signal());
    only.set_batch_only(creq.batch_only());
    only.set_full(creq.full());
    creq = std::move(only);
  }

  pb::Request req;
  *req.mutable_cancel_job() = creq;
  auto resp = CallControllerRaw(*ctx, req);
  if (!resp) {
    PrintError(resp.error());
    return 1;
  }
  const auto& results = resp->cancel_job().results();
  for (const auto& r : results) {
    if (r.rc() == 0) {
      if (o.verbose) {
        if (o.signal) {
          Err("scancel: Signal " + std::to_string(*o.signal) + " to job " + r.job_id());
        } else {
          Err("scancel: Terminating job " + r.job_id());
        }
      }
      continue;
    }
    if (o.quiet && r.rc() == static_cast<int32_t>(ErrorCode::kAlreadyDone)) continue;
    PrintError("Kill job error on job id " + r.job_id() + ": " + r.error());
    rc = 1;
  }
  if (resp->rc() != 0 && results.empty()) {
    PrintError(resp->error());
    rc = 1;
  }
  return rc;
}

}  // namespace shoal::cli
