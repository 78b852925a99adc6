// sreport: parse the command line, ask shoaldbd for the usage records of the window (one
// AcctUsageQuery), compute and print the report.

#include <cstdio>
#include <ctime>
#include <string>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/sreport_report.h"
#include "common/name_service.h"

namespace shoal::cli {
namespace {

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

// The first GECOS field of a login, as Slurm shows it in "Proper Name".
std::string ProperName(const std::string& login) {
  auto user = UserByName(login);
  if (!user) return "";
  return user->gecos.substr(0, user->gecos.find(','));
}

constexpr char kHelp[] =
    "sreport [<OPTION>] [<COMMAND>]\n"
    "    Valid <OPTION> values are:\n"
    "     -a or --all_clusters: Use all clusters instead of current\n"
    "     -h or --help: equivalent to \"help\" command\n"
    "     -n or --noheader: equivalent to \"noheader\" command\n"
    "     -p or --parsable: output will be '|' delimited with a '|' at the end\n"
    "     -P or --parsable2: output will be '|' delimited without a '|' at the end\n"
    "     -t <time_format>: Second, Minute, Hour, Percent, SecPer, MinPer, HourPer\n"
    "     -V or --version: equivalent to \"version\" command\n"
    "\n"
    "  Valid <COMMAND> values are:\n"
    "     cluster AccountUtilizationByUser, Utilization\n"
    "     user TopUsage [TopCount=<N>] [Group]\n";

}  // namespace

int SreportMain(int argc, char** argv) {
  int64_t now = static_cast<int64_t>(std::time(nullptr));
  auto opts = ParseSreportArgs(argc, argv, now);
  if (!opts.ok()) {
    Write(stderr, opts.error() + "\n");
    return 1;
  }
  if (opts->help) {
    Write(stdout, kHelp);
    return 0;
  }
  if (opts->version) {
    Write(stdout, "slurm 22.05.8\n");
    return 0;
  }
  auto ctx = LoadClientContext();
  if (!ctx.ok()) {
    Write(stderr, "sreport: error: " + ctx.error() + "\n");
    return 1;
  }
  pb::DbdRequest req;
  pb::AcctUsageQuery* q = req.mutable_usage();
  if (!opts->all_clusters) {
    if (opts->clusters.empty()) opts->clusters.push_back(ctx->conf.ClusterName());
    for (const std::string& c : opts->clusters) q->add_clusters(c);
  }
  // Nothing is known past now: a window reaching into the future ends now (Slurm's hourly
  // rollups stop at the last full hour; Shoal reports from the records themselves).
  if (opts->end > now) opts->end = now;
  if (opts->start > opts->end) opts->start = opts->end;
  q->set_start(opts->start);
  q->set_end(opts->end);
  for (const std::string& u : opts->users) q->add_users(u);
  for (const std::string& a : opts->accounts) q->add_accounts(a);
  auto resp = CallDbd(*ctx, req);
  if (!resp.ok()) {
    Write(stderr, "sreport: error: " + resp.error() + "\n");
    return 1;
  }
  SreportLookups lk;
  lk.proper_name = ProperName;
  auto text = FormatSreport(resp->usage(), *opts, lk);
  if (!text.ok()) {
    Write(stderr, text.error() + "\n");
    return 1;
  }
  Write(stdout, *text);
  return 0;
}

}  // namespace shoal::cli
