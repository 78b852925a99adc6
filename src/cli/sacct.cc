// sacct: parse the command line, ask shoaldbd for the jobs (one AcctJobQuery), print them in one
// buffered write.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/identity.h"
#include "cli/sacct_format.h"
#include "cli/sacct_options.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

}  // namespace

int SacctMain(int argc, char** argv) {
  SacctEnv env;
  env.uid = static_cast<uint32_t>(getuid());
  env.user_name = UserNameOf(env.uid);
  env.now = static_cast<int64_t>(std::time(nullptr));
  if (const char* f = std::getenv("SACCT_FORMAT")) env.sacct_format = f;
  env.resolve_user = [](const std::string& text, std::string* name) {
    uint32_t uid = 0;
    if (!UidOfUser(text, &uid)) return false;
    *name = UserNameOf(uid);
    if (name->empty()) *name = text;
    return true;
  };

  // Help and field lists need no configuration; everything else does.
  auto opts = ParseSacctArgs(argc, argv, env);
  if (!opts.ok()) {
    if (!opts.error().empty()) Write(stderr, opts.error() + "\n");
    return 1;
  }
  switch (opts->action) {
    case SacctAction::kHelp:
      Write(stdout, SacctHelpText());
      return 0;
    case SacctAction::kUsage:
      Write(stdout, SacctUsageText());
      return 0;
    case SacctAction::kHelpFormat:
      Write(stdout, SacctHelpFormat());
      return 0;
    case SacctAction::kVersion:
      Write(stdout, "slurm 22.05.8\n");
      return 0;
    case SacctAction::kList:
      break;
  }
  auto columns = ParseSacctFields(opts->fields);
  if (!columns.ok()) {
    Write(stderr, columns.error() + "\n");
    return 1;
  }
  auto ctx = LoadClientContext();
  if (!ctx.ok()) {
    Write(stderr, "sacct: error: " + ctx.error() + "\n");
    return 1;
  }
  // The local cluster unless -M/-L said otherwise.
  if (!opts->all_clusters && opts->query.clusters_size() == 0)
    opts->query.add_clusters(ctx->conf.ClusterName());
  if (opts->verbose) {
    Write(stderr, "sacct: Jobs eligible from " + FormatTimestamp(opts->start) + " - " +
                      (opts->end ? FormatTimestamp(opts->end) : std::string("Now")) + "\n");
  }

  pb::DbdRequest req;
  *req.mutable_job_query() = opts->query;
  auto resp = CallDbd(*ctx, req);
  if (!resp.ok()) {
    Write(stderr, "sacct: error: " + resp.error() + "\n");
    return 1;
  }
  std::vector<pb::AcctJob> jobs(resp->job_query().jobs().begin(), resp->job_query().jobs().end());

  SacctFormatOptions f;
  f.columns = std::move(*columns);
  f.no_header = opts->no_header;
  f.parsable = opts->parsable;
  f.delimiter = opts->delimiter;
  f.allocations = opts->allocations;
  f.truncate = opts->truncate;
  f.window_start = opts->start;
  f.window_end = opts->end;
  f.noconvert = opts->noconvert;
  f.units = opts->units;
  f.selectors = opts->jobs;
  f.user_name = UserNameOf;
  f.group_name = GroupNameOf;
  Write(stdout,
        opts->json ? FormatSacctJson(jobs, f, env.now) : FormatSacct(std::move(jobs), f, env.now));
  return 0;
}

}  // namespace shoal::cli
