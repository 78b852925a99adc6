// sshare: options, one ShareQuery RPC, output in one buffered write. Messages and exit
// statuses follow Slurm 22.05's sshare.
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format_fields.h"
#include "cli/identity.h"
#include "cli/sshare_format.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

// Slurm's own text, padding included.
constexpr char kHelp[] =
    "Usage:  sshare [OPTION]                                                    \n"
    "  Valid OPTIONs are:                                                       \n"
    "    -a or --all            list all users                                  \n"
    "    -A or --accounts=      display specific accounts (comma separated list)\n"
    "    -e or --helpformat     Print a list of fields that can be specified    \n"
    "                           with the '--format' option                      \n"
    "    -l or --long           include normalized usage in output              \n"
    "    -m or --partition      print the partition part of the association     \n"
    "    -M or --cluster=names  clusters to issue commands to.                  \n"
    "                           NOTE: SlurmDBD must be up.                      \n"
    "    -n or --noheader       omit header from output                         \n"
    "    -o or --format=        Comma separated list of fields (use             \n"
    "                           \"--helpformat\" for a list of available fields).\n"
    "    -p or --parsable       '|' delimited output with a trailing '|'        \n"
    "    -P or --parsable2      '|' delimited output without a trailing '|'     \n"
    "    -u or --users=         display specific users (comma separated list)   \n"
    "    -U or --Users          display only user information                   \n"
    "    -v or --verbose        display more information                        \n"
    "    -V or --version        display tool version number                     \n"
    "          --help           display this usage description                  \n"
    "          --usage          display this usage description                  \n"
    "                                                                           \n"
    "\n";

constexpr char kUnsupportedPluginPrefix[] = "You are not running a supported priority plugin";

enum LongOnly : int { kOptHelp = 0x100, kOptUsage };

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

int Fail(const std::string& msg) {
  Write(stderr, "sshare: error: " + msg + "\n");
  return 1;
}

// -v: what is asked for, on stderr ("all" when not narrowed).
std::string Requested(const std::vector<std::string>& users, bool all_users,
                      const std::vector<std::string>& accounts) {
  std::string out = "Users requested:\n";
  if (all_users || users.empty()) {
    out += "\t: all\n";
  } else {
    for (const std::string& u : users) out += "\t: " + u + "\n";
  }
  out += "Accounts requested:\n";
  if (accounts.empty()) out += "\t: all\n";
  for (const std::string& a : accounts) out += "\t: " + a + "\n";
  return out;
}

}  // namespace

int SshareMain(int argc, char** argv) {
  static const struct option kLong[] = {
      {"accounts", required_argument, nullptr, 'A'}, {"all", no_argument, nullptr, 'a'},
      {"helpformat", no_argument, nullptr, 'e'},     {"long", no_argument, nullptr, 'l'},
      {"partition", no_argument, nullptr, 'm'},      {"cluster", required_argument, nullptr, 'M'},
      {"clusters", required_argument, nullptr, 'M'}, {"noheader", no_argument, nullptr, 'n'},
      {"format", required_argument, nullptr, 'o'},   {"parsable", no_argument, nullptr, 'p'},
      {"parsable2", no_argument, nullptr, 'P'},      {"users", required_argument, nullptr, 'u'},
      {"Users", no_argument, nullptr, 'U'},          {"verbose", no_argument, nullptr, 'v'},
      {"version", no_argument, nullptr, 'V'},        {"help", no_argument, nullptr, kOptHelp},
      {"usage", no_argument, nullptr, kOptUsage},    {nullptr, 0, nullptr, 0},
  };
  SshareFormatOptions fmt_opts;
  std::vector<std::string> users, accounts;
  bool all_users = false;
  int verbose = 0;

  std::vector<char*> args(argv, argv + argc);
  static char kName[] = "sshare";
  if (!args.empty()) args[0] = kName;  // getopt's messages say "sshare: ..."
  args.push_back(nullptr);
  optind = 0;
  opterr = 1;
  int c;
  while ((c = getopt_long(argc, args.data(), "aA:ehlM:mno:pPu:UvV", kLong, nullptr)) != -1) {
    switch (c) {
      case 'a':
        all_users = true;
        break;
      case 'A':
        for (std::string& a : fmt::SplitList(optarg)) accounts.push_back(fmt::Lower(a));
        break;
      case 'e':
        Write(stdout, SshareHelpFormat());
        return 0;
      case kOptHelp:
      case kOptUsage:
        Write(stdout, kHelp);
        return 0;
      case 'l':
        fmt_opts.long_output = true;
        break;
      case 'M':
        break;  // one cluster: the name is accepted
      case 'm':
        fmt_opts.partitions = true;
        break;
      case 'h':  // 22.05 takes -h as -n (not in its --help)
      case 'n':
        fmt_opts.no_header = true;
        break;
      case 'o':
        // Several -o lists add up, as in Slurm.
        if (fmt_opts.has_format) fmt_opts.format += ',';
        fmt_opts.format += optarg;
        fmt_opts.has_format = true;
        break;
      case 'p':
        fmt_opts.parsable = 1;
        break;
      case 'P':
        fmt_opts.parsable = 2;
        break;
      case 'u':
        for (std::string& u : fmt::SplitList(optarg)) users.push_back(u);
        break;
      case 'U':
        fmt_opts.users_only = true;
        break;
      case 'v':
        ++verbose;
        break;
      case 'V':
        Write(stdout, "shoal " SHOAL_VERSION_STRING "\n");
        return 0;
      default:  // getopt printed "sshare: invalid option -- 'x'"
        Write(stderr, "Try \"sshare --help\" for more information\n");
        return 1;
    }
  }
  // Left-over words are ignored, as Slurm's sshare does.

  // Without -a or -u, sshare shows the caller's own associations (and every account).
  if (!all_users && users.empty()) {
    std::string me = UserNameOf(static_cast<uint32_t>(getuid()));
    if (!me.empty()) users.push_back(me);
  }
  if (verbose) Write(stderr, Requested(users, all_users, accounts));

  auto ctx = LoadClientContext();
  if (!ctx.ok()) return Fail(ctx.error());
  fmt_opts.cluster_name = ctx->conf.ClusterName();
  std::string prio_type = ctx->conf.Get("PriorityType", "priority/basic");
  if (fmt::Lower(prio_type) == "priority/basic") {
    Write(stderr, std::string(kUnsupportedPluginPrefix) + "\n(" + prio_type +
                      ").\nOnly 'priority/multifactor' is supported.\n");
    return 1;
  }

  pb::Request req;
  pb::ShareQueryRequest* q = req.mutable_share_query();
  q->set_all_users(all_users);
  if (!all_users)
    for (const std::string& u : users) q->add_users(u);
  for (const std::string& a : accounts) q->add_accounts(a);

  auto resp = CallController(*ctx, req);
  if (!resp.ok()) return Fail(resp.error());
  auto text = FormatSshare(resp->share_query(), fmt_opts);
  if (!text.ok()) return Fail(text.error());
  Write(stdout, *text);
  return 0;
}

}  // namespace shoal::cli
