// sinfo: options, one NodeQuery RPC per iteration, output in one buffered write.
#include <getopt.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format_fields.h"
#include "cli/identity.h"
#include "cli/sinfo_format.h"
#include "common/hostlist.h"
#include "sched/reservation.h"
#include "sched/reservation_record.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

constexpr char kUsage[] =
    "Usage: sinfo [-abdelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]\n"
    "             [-S fields] [-o format] [-O Format] [--federation] [--local]\n";

constexpr char kHelp[] =
    "Usage: sinfo [OPTIONS]\n"
    "  -a, --all                  show all partitions (including hidden and those\n"
    "                             not accessible)\n"
    "  -d, --dead                 show only non-responding nodes\n"
    "  -e, --exact                group nodes only on exact match of configuration\n"
    "  -h, --noheader             no headers on output\n"
    "  --hide                     do not show hidden or non-accessible partitions\n"
    "  -i, --iterate=seconds      specify an iteration period\n"
    "      --json                 Produce JSON output\n"
    "  -l, --long                 long output - displays more information\n"
    "  -n, --nodes=NODES          report on specific node(s)\n"
    "  --noconvert                don't convert units from their original type\n"
    "                             (e.g. 2048M won't be converted to 2G).\n"
    "  -N, --Node                 Node-centric format\n"
    "  -o, --format=format        format specification\n"
    "  -O, --Format=format        long format specification\n"
    "  -p, --partition=PARTITION  report on specific partition\n"
    "  -r, --responding           report only responding nodes\n"
    "  -R, --list-reasons         list reason nodes are down or drained\n"
    "  -s, --summarize            report state summary only\n"
    "  -S, --sort=fields          comma separated list of fields to sort on\n"
    "  -t, --states=node_state    specify the what states of nodes to view\n"
    "  -T, --reservation          show only reservation information\n"
    "  -v, --verbose              verbosity level\n"
    "  -V, --version              output version information and exit\n"
    "\n"
    "Help options:\n"
    "  --help                     show this help message\n"
    "  --usage                    display brief usage message\n";

// sinfo -o letters that exist (others are reported and print nothing).
constexpr char kKnownLetters[] = "aAbBcCdDeEfFgGhHIlLmMnNoOpPrRsStTuUvVwXYZz";

enum LongOnly : int {
  kOptHelp = 0x100,
  kOptUsage,
  kOptJson,
  kOptYaml,
  kOptNoconvert,
  kOptHide,
  kOptLocal,
  kOptFederation,
};

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

int Fail(const std::string& msg) {
  Write(stderr, "sinfo: error: " + msg + "\n");
  return 1;
}

}  // namespace

int SinfoMain(int argc, char** argv) {
  static const struct option kLong[] = {
      {"all", no_argument, nullptr, 'a'},
      {"dead", no_argument, nullptr, 'd'},
      {"exact", no_argument, nullptr, 'e'},
      {"federation", no_argument, nullptr, kOptFederation},
      {"noheader", no_argument, nullptr, 'h'},
      {"help", no_argument, nullptr, kOptHelp},
      {"hide", no_argument, nullptr, kOptHide},
      {"iterate", required_argument, nullptr, 'i'},
      {"json", no_argument, nullptr, kOptJson},
      {"local", no_argument, nullptr, kOptLocal},
      {"long", no_argument, nullptr, 'l'},
      {"clusters", required_argument, nullptr, 'M'},
      {"cluster", required_argument, nullptr, 'M'},
      {"nodes", required_argument, nullptr, 'n'},
      {"noconvert", no_argument, nullptr, kOptNoconvert},
      {"Node", no_argument, nullptr, 'N'},
      {"format", required_argument, nullptr, 'o'},
      {"Format", required_argument, nullptr, 'O'},
      {"partition", required_argument, nullptr, 'p'},
      {"responding", no_argument, nullptr, 'r'},
      {"list-reasons", no_argument, nullptr, 'R'},
      {"summarize", no_argument, nullptr, 's'},
      {"sort", required_argument, nullptr, 'S'},
      {"states", required_argument, nullptr, 't'},
      {"reservation", no_argument, nullptr, 'T'},
      {"usage", no_argument, nullptr, kOptUsage},
      {"verbose", no_argument, nullptr, 'v'},
      {"version", no_argument, nullptr, 'V'},
      {"yaml", no_argument, nullptr, kOptYaml},
      {nullptr, 0, nullptr, 0},
  };
  SinfoFormatOptions o;
  SinfoFilter filter;
  std::string states, nodes;
  bool json = false, verbose = false, reservations = false, format_given = false;
  int iterate = 0;
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = env("SINFO_FORMAT")) o.format = v;
  if (const char* v = env("SINFO_PARTITION")) filter.partitions = fmt::SplitList(v);
  if (const char* v = env("SINFO_SORT")) o.sort = v;
  if (env("SINFO_ALL")) filter.all_partitions = true;

  std::vector<char*> args(argv, argv + argc);
  static char kName[] = "sinfo";
  if (!args.empty()) args[0] = kName;
  args.push_back(nullptr);
  optind = 0;
  opterr = 1;
  int c;
  while ((c = getopt_long(argc, args.data(), "abdehi:lM:n:No:O:p:rRsS:t:TvV", kLong, nullptr)) !=
         -1) {
    switch (c) {
      case 'a':
        filter.all_partitions = true;
        break;
      case 'd':
        filter.dead_only = true;
        break;
      case 'e':
        o.exact = true;
        break;
      case 'h':
        o.no_header = true;
        break;
      case 'i': {
        char* end = nullptr;
        long v = std::strtol(optarg, &end, 10);
        if (!*optarg || *end || v <= 0 || v > 0x7fffffff) {
          return Fail(std::string("Error: invalid entry for --iterate=") + optarg);
        }
        iterate = static_cast<int>(v);
        break;
      }
      case 'l':
        o.long_output = true;
        break;
      case 'M':
        break;
      case 'n':
        nodes = optarg;
        break;
      case 'N':
        o.node_oriented = true;
        break;
      case 'o':
        o.format = optarg;
        format_given = true;
        break;
      case 'O':
        o.long_format = optarg;
        o.format.clear();
        format_given = true;
        break;
      case 'p':
        filter.partitions = fmt::SplitList(optarg);
        break;
      case 'r':
        filter.responding_only = true;
        break;
      case 'R':
        o.list_reasons = true;
        break;
      case 's':
        o.summarize = true;
        break;
      case 'S':
        o.sort = optarg;
        break;
      case 't':
        states = optarg;
        break;
      case 'T':
        reservations = true;
        break;
      case 'v':
        verbose = true;
        break;
      case 'V':
        Write(stdout, "shoal " SHOAL_VERSION_STRING "\n");
        return 0;
      case kOptHelp:
        Write(stdout, kHelp);
        return 0;
      case kOptUsage:
        Write(stdout, kUsage);
        return 0;
      case kOptJson:
        json = true;
        break;
      case kOptYaml:
        return Fail("--yaml is not supported; use --json");
      case kOptNoconvert:
      case kOptHide:
      case kOptLocal:
      case kOptFederation:
        break;
      default:
        Write(stderr, "Try \"sinfo --help\" for more information\n");
        return 1;
    }
  }
  if (optind < argc) {
    Write(stderr, std::string("sinfo: error: Unrecognized option: ") + args[optind] + "\n");
    Write(stderr, "Try \"sinfo --help\" for more information\n");
    return 1;
  }
  if (o.long_output && format_given) {
    Write(stderr,
          "sinfo: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please "
          "remove one and retry.\n");
    return 1;
  }
  if (!states.empty()) {
    auto st = ParseSinfoStates(states);
    if (!st.ok()) return Fail(st.error());
    filter.states = std::move(*st);
  }
  if (!nodes.empty()) {
    auto hosts = ExpandHostlist(nodes);
    if (!hosts.ok()) return Fail(hosts.error());
    filter.nodes = std::move(*hosts);
  }
  if (o.format.empty() == false) {
    for (const fmt::FieldSpec& f : fmt::ParsePercentFormat(o.format)) {
      if (f.code != 0 && !std::strchr(kKnownLetters, f.code)) {
        Write(stderr, std::string("Invalid node format specification: ") + f.code + "\n");
      }
    }
  }
  o.user_name = UserNameOf;

  auto ctx = LoadClientContext();
  if (!ctx.ok()) return Fail(ctx.error());

  pb::Request req;
  if (reservations && !json) {
    req.mutable_reservation_query();
  } else {
    pb::NodeQueryRequest* q = req.mutable_node_query();
    if (!json) {
      for (const std::string& n : filter.nodes) q->add_names(n);
    }
  }

  bool first_iteration = true;
  while (true) {
    std::string out;
    if (!first_iteration) out += '\n';
    first_iteration = false;
    auto resp = CallController(*ctx, req);
    if (!resp.ok()) {
      Write(stdout, out);
      std::fflush(stdout);
      Write(stderr, std::string(req.has_reservation_query() ? "slurm_load_reservations: "
                                                            : "slurm_load_partitions: ") +
                        resp.error() + "\n");
      if (iterate == 0) return 1;
      sleep(static_cast<unsigned>(iterate));
      continue;
    }
    if (req.has_reservation_query()) {
      // sinfo -T: Slurm's reservation table (sched::FormatReservationTable), -h drops its header.
      const pb::ReservationQueryResponse& rq = resp->reservation_query();
      int64_t rnow = rq.server_time() ? rq.server_time() : static_cast<int64_t>(std::time(nullptr));
      std::vector<sched::Reservation> resvs;
      for (const auto& rec : rq.reservations()) resvs.push_back(sched::FromRecord(rec));
      std::vector<const sched::Reservation*> ptrs;
      for (const auto& r : resvs) ptrs.push_back(&r);
      if (!o.no_header && (iterate || verbose || o.long_output)) {
        out += fmt::DateLine(static_cast<int64_t>(std::time(nullptr)));
        out += '\n';
      }
      std::string table = sched::FormatReservationTable(ptrs, rnow);
      if (o.no_header) table.erase(0, table.find('\n') + 1);
      out += table;
      Write(stdout, out);
      if (iterate == 0) break;
      std::fflush(stdout);
      sleep(static_cast<unsigned>(iterate));
      continue;
    }
    const pb::NodeQueryResponse& data = resp->node_query();
    int64_t now =
        data.server_time() ? data.server_time() : static_cast<int64_t>(std::time(nullptr));
    if (json) {
      Write(stdout, FormatSinfoJson(data, SinfoFilter{}, now, ctx->conf.ClusterName()));
      return 0;
    }
    if (!o.no_header && (iterate || verbose || o.long_output)) {
      out += fmt::DateLine(static_cast<int64_t>(std::time(nullptr)));
      out += '\n';
    }
    {
      auto text = FormatSinfo(data, o, filter, now);
      if (!text.ok()) return Fail(text.error());
      out += *text;
    }
    Write(stdout, out);
    if (iterate == 0) break;
    std::fflush(stdout);
    sleep(static_cast<unsigned>(iterate));
  }
  return 0;
}

}  // namespace shoal::cli
