// squeue: options, one JobQuery RPC per iteration, output in one buffered write.
#include <getopt.h>
#include <google/protobuf/message_lite.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format_fields.h"
#include "cli/identity.h"
#include "cli/job_answer.h"
#include "cli/squeue_format.h"
#include "cli/step_format.h"
#include "common/hostlist.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

constexpr char kUsage[] =
    "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n"
    "              [-n name] [-o format] [-p partitions] [--qos qos]\n"
    "              [--reservation reservation] [--sort fields] [--start]\n"
    "              [--step step_id] [-t states] [-u user_name] [--usage]\n"
    "              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n"
    "\t      [-ahjlrsv]\n";

constexpr char kHelp[] =
    "Usage: squeue [OPTIONS]\n"
    "  -A, --account=account(s)        comma separated list of accounts\n"
    "                                  to view, default is all accounts\n"
    "  -a, --all                       display jobs in hidden partitions\n"
    "  -h, --noheader                  no headers on output\n"
    "  -i, --iterate=seconds           specify an interation period\n"
    "  -j, --job=job(s)                comma separated list of jobs IDs\n"
    "                                  to view, default is all\n"
    "      --json                      Produce JSON output\n"
    "  -l, --long                      long report\n"
    "      --me                        equivalent to --user=<my user name>\n"
    "  -n, --name=job_name(s)          comma separated list of job names to view\n"
    "      --noconvert                 don't convert units from their original type\n"
    "                                  (e.g. 2048M won't be converted to 2G).\n"
    "  -o, --format=format             format specification\n"
    "  -O, --Format=format             format specification\n"
    "  -p, --partition=partition(s)    comma separated list of partitions\n"
    "                                  to view, default is all partitions\n"
    "  -q, --qos=qos(s)                comma separated list of qos's\n"
    "                                  to view, default is all qos's\n"
    "  -r, --array                     display one job array element per line\n"
    "  -S, --sort=fields               comma separated list of fields to sort on\n"
    "      --start                     print expected start times of pending jobs\n"
    "  -t, --states=states             comma separated list of states to view,\n"
    "                                  default is pending and running,\n"
    "                                  '--states=all' reports all states\n"
    "  -u, --user=user_name(s)         comma separated list of users to view\n"
    "  -v, --verbose                   verbosity level\n"
    "  -V, --version                   output version information and exit\n"
    "  -w, --nodelist=hostlist         list of nodes to view, default is\n"
    "                                  all nodes\n"
    "\n"
    "Help options:\n"
    "  --help                          show this help message\n"
    "  --usage                         display a brief summary of squeue options\n";

enum LongOnly : int {
  kOptHelp = 0x100,
  kOptUsage,
  kOptJson,
  kOptYaml,
  kOptMe,
  kOptNoconvert,
  kOptStart,
  kOptHide,
  kOptLocal,
  kOptFederation,
  kOptSibling,
  kOptArrayUnique,
};

void Write(FILE* f, const std::string& s) {
  if (!s.empty()) std::fwrite(s.data(), 1, s.size(), f);
}

int Fail(const std::string& msg) {
  Write(stderr, "squeue: error: " + msg + "\n");
  return 1;
}

struct Args {
  SqueueFormatOptions fmt;
  SqueueFilter filter;
  std::string users;
  std::string states;
  std::string nodelist;
  std::string jobs;
  bool me = false;
  bool json = false;
  bool steps = false;
  std::string step_list;  // --steps=<list>
  bool start = false;
  bool verbose = false;
  int iterate = 0;
};

void ApplyEnv(Args& a) {
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = env("SQUEUE_FORMAT")) a.fmt.format = v;
  if (const char* v = env("SQUEUE_FORMAT2")) a.fmt.long_format = v;
  if (const char* v = env("SQUEUE_SORT")) a.fmt.sort = v;
  if (const char* v = env("SQUEUE_STATES")) a.states = v;
  if (const char* v = env("SQUEUE_USERS")) a.users = v;
  if (const char* v = env("SQUEUE_PARTITION")) a.filter.partitions = fmt::SplitList(v);
  if (const char* v = env("SQUEUE_ACCOUNT")) a.filter.accounts = fmt::SplitList(v);
  if (const char* v = env("SQUEUE_QOS")) a.filter.qos = fmt::SplitList(v);
  if (const char* v = env("SQUEUE_NAMES")) a.filter.names = fmt::SplitList(v);
  if (env("SQUEUE_ARRAY")) a.fmt.array_one_per_line = true;
}

// squeue -s: one StepQuery per iteration; -j, -u, -p and --steps filter, -t does not (as in
// Slurm).
int ShowSteps(const Args& a, const ClientContext& ctx) {
  StepFilter filter;
  if (!a.step_list.empty()) {
    auto list = ParseSqueueStepList(a.step_list);
    if (!list.ok()) return Fail(list.error());
    filter.steps = std::move(*list);
  }
  filter.jobs = a.filter.jobs;
  filter.uids = a.filter.uids;
  filter.partitions = a.filter.partitions;
  SqueueStepOptions opts;
  opts.format = a.fmt.format;
  opts.long_format = a.fmt.long_format;
  opts.no_header = a.fmt.no_header;
  opts.user_name = a.fmt.user_name;

  pb::Request req;
  pb::StepQueryRequest* q = req.mutable_step_query();
  for (uint32_t uid : filter.uids) q->add_uids(uid);
  bool first_iteration = true;
  while (true) {
    std::string out;
    if (!first_iteration) out += '\n';
    first_iteration = false;
    auto resp = CallController(ctx, req);
    if (!resp.ok()) {
      Write(stdout, out);
      std::fflush(stdout);
      Write(stderr, "slurm_get_job_steps error: " + resp.error() + "\n");
      if (a.iterate == 0) return 1;
      sleep(static_cast<unsigned>(a.iterate));
      continue;
    }
    const pb::StepQueryResponse& sq = resp->step_query();
    int64_t now = sq.server_time() ? sq.server_time() : static_cast<int64_t>(std::time(nullptr));
    std::vector<StepRef> steps;
    for (const StepRef& r : CollectSteps(sq))
      if (StepMatches(*r.step, r.job, filter)) steps.push_back(r);
    StepListing listing = FormatSqueueSteps(std::move(steps), opts, now);
    for (const std::string& e : listing.errors) Write(stderr, "squeue: error: " + e + "\n");
    if (!a.fmt.no_header && (a.iterate || a.verbose || a.fmt.long_output)) {
      out += fmt::DateLine(static_cast<int64_t>(std::time(nullptr)));
      out += '\n';
    }
    out += listing.text;
    Write(stdout, out);
    if (a.iterate == 0) break;
    std::fflush(stdout);
    sleep(static_cast<unsigned>(a.iterate));
  }
  return 0;
}

}  // namespace

int SqueueMain(int argc, char** argv) {
  static const struct option kLong[] = {
      {"account", required_argument, nullptr, 'A'},
      {"all", no_argument, nullptr, 'a'},
      {"array", no_argument, nullptr, 'r'},
      {"array-unique", no_argument, nullptr, kOptArrayUnique},
      {"clusters", required_argument, nullptr, 'M'},
      {"cluster", required_argument, nullptr, 'M'},
      {"federation", no_argument, nullptr, kOptFederation},
      {"format", required_argument, nullptr, 'o'},
      {"Format", required_argument, nullptr, 'O'},
      {"help", no_argument, nullptr, kOptHelp},
      {"hide", no_argument, nullptr, kOptHide},
      {"iterate", required_argument, nullptr, 'i'},
      {"jobs", optional_argument, nullptr, 'j'},
      {"job", optional_argument, nullptr, 'j'},
      {"json", no_argument, nullptr, kOptJson},
      {"licenses", required_argument, nullptr, 'L'},
      {"local", no_argument, nullptr, kOptLocal},
      {"long", no_argument, nullptr, 'l'},
      {"me", no_argument, nullptr, kOptMe},
      {"name", required_argument, nullptr, 'n'},
      {"noconvert", no_argument, nullptr, kOptNoconvert},
      {"noheader", no_argument, nullptr, 'h'},
      {"nodelist", required_argument, nullptr, 'w'},
      {"partition", required_argument, nullptr, 'p'},
      {"priority", no_argument, nullptr, 'P'},
      {"qos", required_argument, nullptr, 'q'},
      {"reservation", required_argument, nullptr, 'R'},
      {"sibling", no_argument, nullptr, kOptSibling},
      {"sort", required_argument, nullptr, 'S'},
      {"start", no_argument, nullptr, kOptStart},
      {"steps", optional_argument, nullptr, 's'},
      {"states", required_argument, nullptr, 't'},
      {"usage", no_argument, nullptr, kOptUsage},
      {"user", required_argument, nullptr, 'u'},
      {"users", required_argument, nullptr, 'u'},
      {"verbose", no_argument, nullptr, 'v'},
      {"version", no_argument, nullptr, 'V'},
      {"yaml", no_argument, nullptr, kOptYaml},
      {nullptr, 0, nullptr, 0},
  };
  Args a;
  ApplyEnv(a);
  bool format_given = false, long_given = false;

  std::vector<char*> args(argv, argv + argc);
  static char kName[] = "squeue";
  if (!args.empty()) args[0] = kName;
  args.push_back(nullptr);
  optind = 0;  // full re-initialisation (the binary may parse more than once)
  opterr = 1;
  int c;
  while ((c = getopt_long(argc, args.data(), "A:ahi:j::lL:M:n:o:O:p:Pq:R:rs::S:t:u:vVw:", kLong,
                          nullptr)) != -1) {
    switch (c) {
      case 'A':
        a.filter.accounts = fmt::SplitList(optarg);
        break;
      case 'a':
        break;
      case 'h':
        a.fmt.no_header = true;
        break;
      case 'i': {
        char* end = nullptr;
        long v = std::strtol(optarg, &end, 10);
        if (!*optarg || *end || v <= 0 || v > 0x7fffffff) {
          Write(stderr, std::string("squeue: error: --iterate=") + optarg + "\n\n");
          return 1;
        }
        a.iterate = static_cast<int>(v);
        break;
      }
      case 'j':
        if (optarg) {
          a.jobs = optarg;
        } else if (optind < argc && args[optind][0] != '-') {
          a.jobs = args[optind++];
        } else {
          a.jobs.clear();
        }
        break;
      case 'l':
        a.fmt.long_output = true;
        long_given = true;
        break;
      case 'L':
        break;  // licenses: Shoal jobs request none that could match
      case 'M':
        break;  // single cluster
      case 'n':
        a.filter.names = fmt::SplitList(optarg);
        break;
      case 'o':
        a.fmt.format = optarg;
        format_given = true;
        break;
      case 'O':
        a.fmt.long_format = optarg;
        a.fmt.format.clear();
        format_given = true;
        break;
      case 'p':
        a.filter.partitions = fmt::SplitList(optarg);
        break;
      case 'P':
        break;
      case 'q':
        a.filter.qos = fmt::SplitList(optarg);
        break;
      case 'R':
        break;
      case 'r':
        a.fmt.array_one_per_line = true;
        break;
      case 's':
        a.steps = true;
        if (optarg) {
          a.step_list = optarg;
        } else if (optind < argc && args[optind][0] != '-') {
          a.step_list = args[optind++];  // "squeue -s 12.0", as Slurm reads it
        }
        break;
      case 'S':
        a.fmt.sort = optarg;
        break;
      case 't':
        a.states = optarg;
        break;
      case 'u':
        a.users = optarg;
        break;
      case 'v':
        a.verbose = true;
        break;
      case 'V':
        Write(stdout, "shoal " SHOAL_VERSION_STRING "\n");
        return 0;
      case 'w':
        a.nodelist = optarg;
        break;
      case kOptHelp:
        Write(stdout, kHelp);
        return 0;
      case kOptUsage:
        Write(stdout, kUsage);
        return 0;
      case kOptJson:
        a.json = true;
        break;
      case kOptYaml:
        return Fail("--yaml is not supported; use --json");
      case kOptMe:
        a.me = true;
        break;
      case kOptNoconvert:
        a.fmt.noconvert = true;
        break;
      case kOptStart:
        a.start = true;
        break;
      case kOptHide:
      case kOptLocal:
      case kOptFederation:
      case kOptSibling:
      case kOptArrayUnique:
        break;
      default:
        Write(stderr, "Try \"squeue --help\" for more information\n");
        return 1;
    }
  }
  if (optind < argc) {
    // Slurm takes a trailing word as the job list of a bare -j; anything else is an error.
    Write(stderr, std::string("squeue: error: Unrecognized option: ") + args[optind] + "\n");
    Write(stderr, "Try \"squeue --help\" for more information\n");
    return 1;
  }
  if (long_given && format_given) {
    Write(stderr,
          "squeue: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please "
          "remove one and retry.\n");
    return 1;
  }
  if (a.start) {
    if (a.fmt.format.empty() && a.fmt.long_format.empty()) a.fmt.format = kSqueueStartFormat;
    if (a.fmt.sort.empty()) a.fmt.sort = "S";
    if (a.states.empty()) a.states = "PENDING";
  }

  // Filters.
  if (!a.jobs.empty()) {
    auto ids = ParseSqueueJobIds(a.jobs);
    if (!ids.ok()) return Fail(ids.error());
    a.filter.jobs = std::move(*ids);
  }
  if (!a.states.empty()) {
    auto st = ParseSqueueStates(a.states);
    if (!st.ok()) return Fail(st.error() + "\n");
    a.filter.states = std::move(*st);
  }
  if (!a.users.empty()) {
    for (const std::string& u : fmt::SplitList(a.users)) {
      uint32_t uid = 0;
      if (!UidOfUser(u, &uid)) return Fail("Invalid user: " + u + "\n");
      a.filter.uids.push_back(uid);
    }
  }
  if (a.me) a.filter.uids.push_back(static_cast<uint32_t>(getuid()));
  if (!a.nodelist.empty()) {
    auto hosts = ExpandHostlist(a.nodelist);
    if (!hosts.ok()) return Fail(hosts.error());
    a.filter.nodes = std::move(*hosts);
  }
  a.fmt.user_name = UserNameOf;
  a.fmt.group_name = GroupNameOf;

  auto ctx = LoadClientContext();
  if (!ctx.ok()) return Fail(ctx.error());

  if (a.steps && !a.json) return ShowSteps(a, *ctx);

  pb::Request req;
  if (a.json) {
    // --json ignores filtering and formatting options.
    pb::JobQueryRequest* q = req.mutable_job_query();
    q->set_omit_script(true);
    q->set_include_finished(true);
  } else {
    pb::JobQueryRequest* q = req.mutable_job_query();
    *q = BuildJobQuery(a.filter);
    q->set_stream(true);
    // Only the fields the output reads travel (an invalid -O fails in FormatSqueue below).
    // SHOAL_SQUEUE_WHOLE_RECORDS=1 asks for whole records: a diagnostic, and the reference the
    // projection tests compare against.
    auto needs = SqueueQueryFields(a.fmt, a.filter);
    if (needs.ok() && !std::getenv("SHOAL_SQUEUE_WHOLE_RECORDS")) {
      for (uint32_t f : needs->fields) q->add_fields(f);
      for (uint32_t f : needs->spec_fields) q->add_spec_fields(f);
    }
  }

  bool first_iteration = true;
  while (true) {
    std::string out;
    if (!first_iteration) out += '\n';
    first_iteration = false;
    auto failed = [&](const std::string& message) {
      Write(stdout, out);
      std::fflush(stdout);
      Write(stderr, "slurm_load_jobs error: " + message + "\n");
    };
    if (a.json) {
      // The answer lives on an arena: thousands of records are built and dropped in a few
      // large blocks instead of one malloc and free per string.
      google::protobuf::ArenaOptions arena_options;
      arena_options.start_block_size = 64 << 10;
      arena_options.max_block_size = 4 << 20;
      google::protobuf::Arena arena(arena_options);
      auto* resp = google::protobuf::Arena::CreateMessage<pb::Response>(&arena);
      Status called = CallControllerInto(*ctx, req, resp);
      if (called.ok()) {
        const pb::JobQueryResponse& jq = resp->job_query();
        int64_t now =
            jq.server_time() ? jq.server_time() : static_cast<int64_t>(std::time(nullptr));
        std::vector<const pb::JobRecord*> jobs;
        jobs.reserve(static_cast<size_t>(jq.jobs_size()));
        for (const pb::JobRecord& j : jq.jobs()) jobs.push_back(&j);
        out += FormatSqueueJson(jobs, a.fmt, now, ctx->conf.ClusterName());
        Write(stdout, out);
        return 0;
      }
      failed(called.message());
      if (a.iterate == 0) return 1;
      sleep(static_cast<unsigned>(a.iterate));
      continue;
    }
    // Each job is decoded into one reused record, filtered and formatted at once: no message
    // per job (about 1 KB of protobuf objects each, most of squeue's page faults). The answer
    // comes in parts, decoded here while the controller encodes the next.
    std::optional<SqueueFormatter> formatter;
    std::optional<Status> format_failed;  // an unknown -O field: not worth another iteration
    pb::JobRecord job;
    Status answered = CallControllerParts(*ctx, req, [&](std::string& bytes) -> Result<bool> {
      Result<JobAnswer> answer = SplitJobAnswer(bytes);
      if (!answer.ok()) return answer.status();
      if (answer->head.rc() != 0)
        return Error(static_cast<ErrorCode>(answer->head.rc()), answer->head.error());
      if (!formatter) {
        // The first part carries the controller's clock, which TIME columns count from.
        int64_t now =
            answer->server_time ? answer->server_time : static_cast<int64_t>(std::time(nullptr));
        auto made = SqueueFormatter::Make(a.fmt, now);
        if (!made.ok()) {
          format_failed = made.status();
          return made.status();
        }
        formatter.emplace(std::move(*made));
        formatter->Reserve(answer->more ? answer->jobs_hint : answer->jobs.size());
      }
      for (std::string_view bytes_of_job : answer->jobs) {
        // Clear() would free the spec and parsing allocate a new one: keep it and its
        // strings.
        pb::JobSpec* spec = job.release_spec();
        if (spec) spec->Clear();
        job.Clear();
        job.set_allocated_spec(spec);
        // Straight from the bytes: MergeFromCodedStream's stream wrapper cost more than the
        // parse of a projected record. MergeFromImpl is what ParseFromArray calls inside
        // protobuf-lite (3.21, Debian 12); the public calls either clear the record (dropping
        // the reused spec) or take a std::string (a copy).
        if (!google::protobuf::internal::MergeFromImpl<false>(
                google::protobuf::StringPiece(bytes_of_job.data(), bytes_of_job.size()), &job,
                google::protobuf::MessageLite::kMerge))
          return Error(ErrorCode::kProtocol, "malformed response");
        if (JobMatches(job, a.filter)) formatter->Add(job);
      }
      return answer->more;
    });
    if (format_failed) return Fail(format_failed->message());
    if (!answered.ok()) {
      failed(answered.message());
      if (a.iterate == 0) return 1;
      sleep(static_cast<unsigned>(a.iterate));
      continue;
    }
    if (!a.fmt.no_header && (a.iterate || a.verbose || a.fmt.long_output)) {
      out += fmt::DateLine(static_cast<int64_t>(std::time(nullptr)));
      out += '\n';
    }
    Write(stdout, out);
    formatter->FinishTo(stdout);
    if (a.iterate == 0) break;
    std::fflush(stdout);
    sleep(static_cast<unsigned>(a.iterate));
  }
  return 0;
}

}  // namespace shoal::cli
