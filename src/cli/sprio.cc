// sprio: options, one PriorityQuery RPC, output in one buffered write. Messages and exit
// statuses follow Slurm 22.05's sprio.
#include <getopt.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format_fields.h"
#include "cli/identity.h"
#include "cli/sprio_format.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

constexpr char kUsage[] =
    "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]\n"
    "   [--federation] [--local] [--sibling] [--usage] [-hlnvVw]\n";

constexpr char kHelp[] =
    "Usage: sprio [OPTIONS]\n"
    "      --federation                display jobs in federation if a member of one\n"
    "  -h, --noheader                  no headers on output\n"
    "  -j, --jobs                      comma separated list of jobs\n"
    "                                  to view, default is all\n"
    "      --local                     display jobs on local cluster only\n"
    "  -l, --long                      long report\n"
    "  -M, --cluster=cluster_name      cluster to issue commands to.  Default is\n"
    "                                  current cluster.  cluster with no name will\n"
    "                                  reset to default.\n"
    "                                  NOTE: SlurmDBD must be up.\n"
    "  -n, --norm                      display normalized values\n"
    "  -o, --format=format             format specification\n"
    "      --sibling                   display job records separately for each federation "
    "cluster\n"
    "  -p, --partition=partition_name  comma separated list of partitions\n"
    "  -u, --user=user_name            comma separated list of users to view\n"
    "  -v, --verbose                   verbosity level\n"
    "  -V, --version                   output version information and exit\n"
    "  -w, --weights                   show the weights for each priority factor\n"
    "\n"
    "Help options:\n"
    "  --help                          show this help message\n"
    "  --usage                         display a brief summary of sprio options\n";

// Slurm prints this itself (no "sprio: error:" prefix) when PriorityType is priority/basic;
// the controller answers the same text, so both paths print identically.
constexpr char kUnsupportedPluginPrefix[] = "You are not running a supported priority plugin";

enum LongOnly : int {
  kOptHelp = 0x100,
  kOptUsage,
  kOptLocal,
  kOptSibling,
  kOptFederation,
};

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

void PrintError(const std::string& msg) { Write(stderr, "sprio: error: " + msg + "\n"); }

int Fail(const std::string& msg) {
  PrintError(msg);
  return 1;
}

std::string UnsupportedPluginText(const std::string& type) {
  return std::string(kUnsupportedPluginPrefix) + "\n(" + type +
         ").\nOnly 'priority/multifactor' is supported.\n";
}

// The weights sprio falls back on when the controller sends none: slurm.conf's, which is where
// Slurm's sprio itself reads them.
pb::PriorityFactors WeightsFromConf(const SlurmConf& conf) {
  auto get = [&conf](const char* key) -> int64_t {
    auto v = conf.GetInt(key, 0);
    return v.ok() ? *v : 0;
  };
  pb::PriorityFactors w;
  w.set_age(get("PriorityWeightAge"));
  w.set_fairshare(get("PriorityWeightFairshare"));
  w.set_jobsize(get("PriorityWeightJobSize"));
  w.set_partition_factor(get("PriorityWeightPartition"));
  w.set_qos_factor(get("PriorityWeightQOS"));
  w.set_tres_detail(conf.Get("PriorityWeightTRES"));
  return w;
}

struct Args {
  SprioFormatOptions fmt;
  SprioFilter filter;
  bool job_flag = false;   // -j given, with or without a list
  std::string jobs;        // the -j list as typed ("" = none)
  std::string partitions;  // -p as typed
  std::string users;       // -u as typed
  int verbose = 0;
  bool local = false;
  bool sibling = false;
};

// -v: Slurm's dump of the parsed options, on stdout.
std::string OptionsDump(const Args& a, const std::string* format) {
  auto str = [](const std::string& s) { return s.empty() ? std::string("(null)") : s; };
  std::string out = "-----------------------------\n";
  out += "format     = " + (format ? *format : std::string("(null)")) + "\n";
  out += "job_flag   = " + std::to_string(a.job_flag ? 1 : 0) + "\n";
  out += "jobs       = " + str(a.jobs) + "\n";
  out += "partition  = " + str(a.partitions) + "\n";
  out += "users      = " + str(a.users) + "\n";
  out += "verbose    = " + std::to_string(a.verbose) + "\n";
  if (a.verbose > 1) {
    for (size_t i = 0; i < a.filter.job_ids.size(); ++i) {
      out += "job_list[" + std::to_string(i) + "] = " + std::to_string(a.filter.job_ids[i]) + "\n";
    }
    for (size_t i = 0; i < a.filter.uids.size(); ++i) {
      out += "user_list[" + std::to_string(i) + "] = " + std::to_string(a.filter.uids[i]) + "\n";
    }
  }
  out += "-----------------------------\n\n\n";
  return out;
}

}  // namespace

int SprioMain(int argc, char** argv) {
  static const struct option kLong[] = {
      {"noheader", no_argument, nullptr, 'h'},
      {"jobs", optional_argument, nullptr, 'j'},
      {"long", no_argument, nullptr, 'l'},
      {"cluster", required_argument, nullptr, 'M'},
      {"clusters", required_argument, nullptr, 'M'},
      {"norm", no_argument, nullptr, 'n'},
      {"format", required_argument, nullptr, 'o'},
      {"sort", required_argument, nullptr, 'S'},
      {"partition", required_argument, nullptr, 'p'},
      {"user", required_argument, nullptr, 'u'},
      {"users", required_argument, nullptr, 'u'},
      {"verbose", no_argument, nullptr, 'v'},
      {"version", no_argument, nullptr, 'V'},
      {"weights", no_argument, nullptr, 'w'},
      {"federation", no_argument, nullptr, kOptFederation},
      {"help", no_argument, nullptr, kOptHelp},
      {"local", no_argument, nullptr, kOptLocal},
      {"sib", no_argument, nullptr, kOptSibling},
      {"sibling", no_argument, nullptr, kOptSibling},
      {"usage", no_argument, nullptr, kOptUsage},
      {nullptr, 0, nullptr, 0},
  };
  Args a;
  // Environment defaults first; options override them.
  if (std::getenv("SLURM_CLUSTERS")) a.local = true;  // like -M: one cluster, implies --local
  if (std::getenv("SPRIO_LOCAL")) a.local = true;
  if (std::getenv("SPRIO_SIBLING")) a.sibling = true;
  // SPRIO_FEDERATION: accepted; a Shoal cluster is never in a federation.
  bool format_given = false;

  std::vector<char*> args(argv, argv + argc);
  static char kName[] = "sprio";
  if (!args.empty()) args[0] = kName;  // getopt's messages say "sprio: ..."
  args.push_back(nullptr);
  optind = 0;  // full re-initialisation (the binary may parse more than once)
  opterr = 1;
  int c;
  while ((c = getopt_long(argc, args.data(), "hj::lM:no:S:p:u:vVw", kLong, nullptr)) != -1) {
    switch (c) {
      case 'h':
        a.fmt.no_header = true;
        break;
      case 'j':
        // Optional argument: "-j12,13" / "--jobs=12,13"; a bare -j takes the first word left
        // over after the options (handled below), as in Slurm.
        if (optarg) {
          a.jobs = optarg;
          auto ids = ParseSprioJobIds(a.jobs);
          if (!ids.ok()) return Fail(ids.error());
          a.filter.job_ids = std::move(*ids);
        }
        a.job_flag = true;
        break;
      case 'l':
        a.fmt.long_output = true;
        break;
      case 'M':
        // One cluster only: the name is accepted and, as in Slurm, implies --local.
        a.local = true;
        break;
      case 'n':
        a.fmt.normalized = true;
        break;
      case 'o':
        a.fmt.format = optarg;
        a.fmt.has_format = true;
        format_given = true;
        break;
      case 'S':
        a.fmt.sort = optarg;
        break;
      case 'p':
        a.partitions = optarg;
        a.filter.partitions = fmt::SplitList(optarg);
        break;
      case 'u':
        a.users = optarg;
        a.filter.uids.clear();
        a.filter.uids_given = true;
        for (const std::string& u : fmt::SplitList(optarg)) {
          uint32_t uid = 0;
          // Slurm reports the bad name (its message ends in "\n", hence the blank line) and
          // goes on with the others.
          if (UidOfUser(u, &uid)) {
            a.filter.uids.push_back(uid);
          } else {
            PrintError("Invalid user: " + u + "\n");
          }
        }
        break;
      case 'v':
        ++a.verbose;
        break;
      case 'V':
        Write(stdout, "shoal " SHOAL_VERSION_STRING "\n");
        return 0;
      case 'w':
        a.fmt.weights = true;
        break;
      case kOptFederation:
        break;
      case kOptHelp:
        Write(stdout, kHelp);
        return 0;
      case kOptLocal:
        a.local = true;
        break;
      case kOptSibling:
        a.sibling = true;
        break;
      case kOptUsage:
        Write(stdout, kUsage);
        return 0;
      default:  // getopt has printed "sprio: invalid option -- 'x'" or similar
        Write(stderr, "Try \"sprio --help\" for more information\n");
        return 1;
    }
  }
  if (a.fmt.long_output && format_given) {
    Write(stderr,
          "sprio: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please "
          "remove one and retry.\n");
    return 1;
  }
  if (!a.fmt.long_output && !format_given) {
    const char* env = std::getenv("SPRIO_FORMAT");
    if (env && *env) {
      a.fmt.format = env;
      a.fmt.has_format = true;
    }
  }
  if (optind < argc) {
    if (a.job_flag) {
      a.jobs = args[optind++];
      auto ids = ParseSprioJobIds(a.jobs);
      if (!ids.ok()) return Fail(ids.error());
      a.filter.job_ids = std::move(*ids);
    }
    if (optind < argc) {
      PrintError(std::string("Unrecognized option: ") + args[optind]);
      Write(stdout, kUsage);
      return 1;
    }
  }
  if (a.verbose) Write(stdout, OptionsDump(a, a.fmt.has_format ? &a.fmt.format : nullptr));

  a.fmt.user_column = a.filter.uids_given;
  a.fmt.cluster_column = a.sibling && !a.local;
  a.fmt.user_name = UserNameOf;

  auto ctx = LoadClientContext();
  if (!ctx.ok()) return Fail(ctx.error());
  a.fmt.cluster_name = ctx->conf.ClusterName();

  // Checked before any RPC, from slurm.conf, as Slurm's sprio does.
  std::string prio_type = ctx->conf.Get("PriorityType", "priority/basic");
  if (fmt::Lower(prio_type) == "priority/basic") {
    Write(stderr, UnsupportedPluginText(prio_type));
    return 1;
  }

  pb::Request req;
  pb::PriorityQueryRequest* q = req.mutable_priority_query();
  for (uint32_t id : a.filter.job_ids) q->add_job_ids(id);
  for (uint32_t uid : a.filter.uids) q->add_uids(uid);
  q->set_weights_only(a.fmt.weights);

  auto resp = CallControllerRaw(*ctx, req);
  if (resp.ok() && resp->rc() != 0 && resp->error().rfind(kUnsupportedPluginPrefix, 0) == 0) {
    std::string text = resp->error();
    if (text.back() != '\n') text += '\n';
    Write(stderr, text);
    return 1;
  }
  if (!resp.ok() || resp->rc() != 0) {
    // slurm_perror's shape: "<context>: <error text>".
    Write(stderr, "Couldn't get priority factors from controller: " +
                      (resp.ok() ? resp->error() : resp.error()) + "\n");
    return 1;
  }
  const pb::PriorityQueryResponse& pq = resp->priority_query();
  pb::PriorityFactors weights = pq.has_weights() ? pq.weights() : WeightsFromConf(ctx->conf);

  std::vector<const pb::PriorityFactors*> jobs;
  for (const pb::PriorityFactors& j : pq.jobs()) {
    if (SprioJobMatches(j, a.filter)) jobs.push_back(&j);
  }
  if (!a.jobs.empty() && !a.fmt.weights && jobs.empty()) {
    Write(stdout, "Unable to find jobs matching user/id(s) specified\n");
    return 0;
  }

  SprioOutput out = FormatSprio(jobs, weights, a.fmt);
  for (const std::string& w : out.warnings) PrintError(w);
  Write(stdout, out.text);
  if (!out.error.empty()) {
    std::fflush(stdout);
    return Fail(out.error);
  }
  return 0;
}

}  // namespace shoal::cli
