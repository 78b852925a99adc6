// sdiag: one REQUEST_STATS_INFO (or reset) RPC, Slurm 22.05's report and messages.
#include <getopt.h>
#include <sys/time.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/sdiag_format.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

constexpr char kUsage[] = "Usage: sdiag [-M cluster] [-aritT]\n";
constexpr char kHelp[] =
    "Usage: sdiag [OPTIONS]\n"
    "  -a, --all             all statistics\n"
    "  -M, --cluster=        direct the request to a specific cluster\n"
    "  -r, --reset           reset statistics\n"
    "  -i, --sort-by-id      sort RPCs by id\n"
    "  -t, --sort-by-time    sort RPCs by total run time\n"
    "  -T, --sort-by-time2   sort RPCs by average run time\n"
    "  -V, --version         display current version number\n"
    "\nHelp options:\n"
    "  --help                show this help message\n"
    "  --usage               display brief usage message\n";

enum LongOnly : int { kOptHelp = 0x100, kOptUsage };

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

// What Slurm's controller measures at start for the report's latency line.
int GettimeofdayLatencyUs() {
  auto start = std::chrono::steady_clock::now();
  timeval tv{};
  for (int i = 0; i < 1000; ++i) ::gettimeofday(&tv, nullptr);
  return static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count());
}

}  // namespace

int SdiagMain(int argc, char** argv) {
  static const struct option kLong[] = {
      {"all", no_argument, nullptr, 'a'},
      {"cluster", required_argument, nullptr, 'M'},
      {"clusters", required_argument, nullptr, 'M'},
      {"reset", no_argument, nullptr, 'r'},
      {"sort-by-id", no_argument, nullptr, 'i'},
      {"sort-by-time", no_argument, nullptr, 't'},
      {"sort-by-time2", no_argument, nullptr, 'T'},
      {"version", no_argument, nullptr, 'V'},
      {"help", no_argument, nullptr, kOptHelp},
      {"usage", no_argument, nullptr, kOptUsage},
      {nullptr, 0, nullptr, 0},
  };
  bool reset = false;
  SdiagSort sort = SdiagSort::kCount;
  std::vector<char*> args(argv, argv + argc);
  static char kName[] = "sdiag";
  if (!args.empty()) args[0] = kName;  // getopt's messages say "sdiag: ..."
  args.push_back(nullptr);
  optind = 0;
  opterr = 1;
  int c;
  while ((c = getopt_long(argc, args.data(), "ahM:ritTV", kLong, nullptr)) != -1) {
    switch (c) {
      case 'a':
        break;
      case 'M':
        break;  // one cluster: the name is accepted
      case 'r':
        reset = true;
        break;
      case 'i':
        sort = SdiagSort::kId;
        break;
      case 't':
        sort = SdiagSort::kTime;
        break;
      case 'T':
        sort = SdiagSort::kTime2;
        break;
      case 'V':
        Write(stdout, std::string("slurm ") + SHOAL_VERSION_STRING + "\n");
        return 0;
      case 'h':
      case kOptHelp:
        Write(stdout, kHelp);
        return 0;
      case kOptUsage:
        Write(stdout, kUsage);
        return 0;
      default:
        Write(stderr, "Try \"sdiag --help\" for more information\n");
        return 1;
    }
  }
  if (optind < argc) {
    Write(stderr, std::string("sdiag: error: Unknown argument: ") + argv[optind] + "\n");
    Write(stderr, "Try \"sdiag --help\" for more information\n");
    return 1;
  }
  auto ctx = LoadClientContext();
  if (!ctx) {
    Write(stderr, "sdiag: error: " + ctx.error() + "\n");
    return 1;
  }
  pb::Request req;
  req.mutable_diag()->set_reset(reset);
  auto resp = CallController(*ctx, req);
  // Slurm: slurm_perror() of the API call, and exit(rc) with rc = SLURM_ERROR (255).
  if (!resp) {
    Write(stderr, std::string(reset ? "slurm_reset_statistics" : "slurm_get_statistics") + ": " +
                      resp.error() + "\n");
    return 255;
  }
  if (reset) {
    Write(stdout, "Reset scheduling statistics\n");
    return 0;
  }
  Write(stdout, FormatSdiag(resp->diag(), sort, GettimeofdayLatencyUs()));
  return 0;
}

}  // namespace shoal::cli
