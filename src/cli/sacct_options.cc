#include "cli/sacct_options.h"

#include <getopt.h>

#include <cctype>
#include <ctime>

#include "cli/format_fields.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

enum LongOnly : int {
  kOptDelimiter = 0x100,
  kOptLocal,
  kOptName,
  kOptNoconvert,
  kOptUnits,
  kOptFederation,
  kOptWholeHetjob,
  kOptJson,
  kOptYaml,
  kOptUsage,
  kOptEnvVars,
  kOptUseLocalUid,
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool ParseU32(std::string_view s, uint32_t* out) {
  if (!AllDigits(s) || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<uint64_t>(c - '0');
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// True when the text names a year ("2026-11-22", "11/22/26", "112226", "11.22.26").
bool HasYear(std::string_view s) {
  size_t t = s.find_first_of("Tt");
  std::string_view date = s.substr(0, t);
  if (date.size() >= 5 && AllDigits(date.substr(0, 4)) && date[4] == '-') return true;
  size_t slashes = 0, dots = 0;
  for (char c : date) {
    slashes += c == '/';
    dots += c == '.';
  }
  if (slashes == 2 || dots == 2) return true;
  size_t dash = date.find('-');
  std::string_view digits = date.substr(0, dash);
  return AllDigits(digits) && digits.size() == 6;
}

bool IsTimeOfDayOnly(std::string_view s) {
  return s.find(':') != std::string_view::npos &&
         s.find_first_of("/-.Tt") == std::string_view::npos;
}

// Slurm's "MMDD[YY]-HH:MM" and "MM/DD[/YY]-HH:MM" use '-' before the time; ParseBeginTime wants
// 'T'.
std::string NormalizeDateTime(std::string_view s) {
  std::string out(s);
  if (out.size() >= 5 && AllDigits(out.substr(0, 4)) && out[4] == '-') return out;  // ISO date
  size_t dash = out.find('-');
  if (dash != std::string::npos && out.find(':', dash) != std::string::npos) out[dash] = 'T';
  return out;
}

}  // namespace

int64_t LocalMidnight(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  if (!localtime_r(&tt, &tm)) return t;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(std::mktime(&tm));
}

Result<int64_t> ParseSacctTime(std::string_view text, int64_t now) {
  const std::string bad = "Invalid time specification (pos=0): " + std::string(text);
  std::string lower = fmt::Lower(text);
  if (lower == "today" || lower == "midnight") return LocalMidnight(now);
  if (lower.rfind("now", 0) == 0) {
    std::string rest = lower.substr(3);
    size_t i = rest.find_first_not_of(' ');
    if (i != std::string::npos && rest[i] == '-') {
      // "now-1hour": the mirror image of "now+1hour".
      auto ahead = ParseBeginTime("now+" + rest.substr(i + 1), now);
      if (!ahead.ok()) return InvalidArgument(bad);
      return now - (*ahead - now);
    }
  }
  std::string norm = NormalizeDateTime(text);
  // Anchor at today's midnight so a time of day stays today instead of moving to tomorrow.
  int64_t midnight = LocalMidnight(now);
  bool relative = lower.rfind("now", 0) == 0;
  auto t = ParseBeginTime(norm, relative ? now : midnight);
  if (!t.ok()) return InvalidArgument(bad);
  int64_t v = *t;
  if (!relative && !IsTimeOfDayOnly(norm) && !HasYear(norm) && v > now) {
    // A date without a year in the future means last year (sacct looks back).
    std::time_t tt = static_cast<std::time_t>(v);
    std::tm tm{};
    if (localtime_r(&tt, &tm)) {
      tm.tm_year -= 1;
      if (v - midnight >= 365 * 86400) tm.tm_year -= 1;  // ParseBeginTime moved it a year ahead
      tm.tm_isdst = -1;
      v = static_cast<int64_t>(std::mktime(&tm));
    }
  }
  return v;
}

Result<std::vector<SacctJobSelector>> ParseSacctJobList(std::string_view text) {
  std::vector<SacctJobSelector> out;
  for (const std::string& item : fmt::SplitList(text)) {
    const Status bad = InvalidArgument("sacct: fatal: Bad job/step specified: " + item);
    SacctJobSelector sel;
    std::string_view rest = item;
    size_t dot = rest.find('.');
    std::string_view job = rest.substr(0, dot);
    size_t us = job.find('_');
    if (!ParseU32(job.substr(0, us), &sel.job_id) || sel.job_id == 0) return bad;
    if (us != std::string_view::npos) {
      uint32_t task = 0;
      if (!ParseU32(job.substr(us + 1), &task)) return bad;
      sel.task = task;
    }
    if (dot != std::string_view::npos) {
      std::string step = fmt::Lower(rest.substr(dot + 1));
      uint32_t n = 0;
      if (step == "batch") {
        sel.step = kBatchStepId;
      } else if (step == "extern") {
        sel.step = kExternStepId;
      } else if (step == "interactive") {
        sel.step = kInteractiveStepId;
      } else if (ParseU32(step, &n)) {
        sel.step = n;
      } else {
        return bad;
      }
    }
    out.push_back(sel);
  }
  return out;
}

Result<SacctOptions> ParseSacctArgs(int argc, char** argv, const SacctEnv& env) {
  static const struct option kLong[] = {
      {"allusers", no_argument, nullptr, 'a'},
      {"accounts", required_argument, nullptr, 'A'},
      {"allocations", no_argument, nullptr, 'X'},
      {"brief", no_argument, nullptr, 'b'},
      {"batch-script", no_argument, nullptr, 'B'},
      {"completion", no_argument, nullptr, 'c'},
      {"constraints", required_argument, nullptr, 'C'},
      {"delimiter", required_argument, nullptr, kOptDelimiter},
      {"duplicates", no_argument, nullptr, 'D'},
      {"env-vars", no_argument, nullptr, kOptEnvVars},
      {"federation", no_argument, nullptr, kOptFederation},
      {"helpformat", no_argument, nullptr, 'e'},
      {"help-fields", no_argument, nullptr, 'e'},
      {"endtime", required_argument, nullptr, 'E'},
      {"file", required_argument, nullptr, 'f'},
      {"flags", required_argument, nullptr, 'F'},
      {"gid", required_argument, nullptr, 'g'},
      {"group", required_argument, nullptr, 'g'},
      {"help", no_argument, nullptr, 'h'},
      {"json", no_argument, nullptr, kOptJson},
      {"local", no_argument, nullptr, kOptLocal},
      {"name", required_argument, nullptr, kOptName},
      {"nnodes", required_argument, nullptr, 'i'},
      {"ncpus", required_argument, nullptr, 'I'},
      {"jobs", required_argument, nullptr, 'j'},
      {"timelimit-min", required_argument, nullptr, 'k'},
      {"timelimit-max", required_argument, nullptr, 'K'},
      {"long", no_argument, nullptr, 'l'},
      {"allclusters", no_argument, nullptr, 'L'},
      {"cluster", required_argument, nullptr, 'M'},
      {"clusters", required_argument, nullptr, 'M'},
      {"nodelist", required_argument, nullptr, 'N'},
      {"noconvert", no_argument, nullptr, kOptNoconvert},
      {"units", required_argument, nullptr, kOptUnits},
      {"noheader", no_argument, nullptr, 'n'},
      {"fields", required_argument, nullptr, 'o'},
      {"format", required_argument, nullptr, 'o'},
      {"parsable", no_argument, nullptr, 'p'},
      {"parsable2", no_argument, nullptr, 'P'},
      {"qos", required_argument, nullptr, 'q'},
      {"partition", required_argument, nullptr, 'r'},
      {"reason", required_argument, nullptr, 'R'},
      {"state", required_argument, nullptr, 's'},
      {"starttime", required_argument, nullptr, 'S'},
      {"truncate", no_argument, nullptr, 'T'},
      {"uid", required_argument, nullptr, 'u'},
      {"usage", no_argument, nullptr, kOptUsage},
      {"use-local-uid", no_argument, nullptr, kOptUseLocalUid},
      {"user", required_argument, nullptr, 'u'},
      {"verbose", no_argument, nullptr, 'v'},
      {"version", no_argument, nullptr, 'V'},
      {"wckeys", required_argument, nullptr, 'W'},
      {"whole-hetjob", optional_argument, nullptr, kOptWholeHetjob},
      {"associations", required_argument, nullptr, 'x'},
      {"yaml", no_argument, nullptr, kOptYaml},
      {nullptr, 0, nullptr, 0},
  };
  SacctOptions o;
  pb::AcctJobQuery& q = o.query;
  bool brief = false, long_out = false, all_users = false, all_clusters = false;
  bool start_set = false, end_set = false;
  std::string fields;
  std::vector<std::string> users;

  std::vector<char*> args(argv, argv + argc);
  static char kName[] = "sacct";
  if (!args.empty()) args[0] = kName;
  args.push_back(nullptr);
  optind = 0;  // full re-initialisation (tests parse repeatedly)
  opterr = 1;
  int c;
  while ((c = getopt_long(argc, args.data(),
                          "aA:bBcC:DeE:f:F:g:hi:I:j:k:K:lLM:nN:o:pPq:r:R:s:S:Ttu:UvVW:x:X", kLong,
                          nullptr)) != -1) {
    switch (c) {
      case 'a':
        all_users = true;
        break;
      case 'A':
        for (const std::string& a : fmt::SplitList(optarg)) q.add_accounts(a);
        break;
      case 'b':
        brief = true;
        break;
      case 'D':
        q.set_duplicates(true);
        break;
      case 'e':
        o.action = SacctAction::kHelpFormat;
        break;
      case 'E': {
        auto t = ParseSacctTime(optarg, env.now);
        if (!t.ok()) return t.status();
        o.end = *t;
        end_set = true;
        break;
      }
      case 'h':
        o.action = SacctAction::kHelp;
        break;
      case kOptUsage:
      case 'U':
        o.action = SacctAction::kUsage;
        break;
      case 'V':
        o.action = SacctAction::kVersion;
        return o;
      case 'i': {
        std::string v = optarg;
        size_t dash = v.find('-');
        uint32_t lo = 0, hi = 0;
        if (!ParseU32(v.substr(0, dash), &lo) ||
            (dash != std::string::npos && !ParseU32(v.substr(dash + 1), &hi)))
          return InvalidArgument("sacct: error: invalid node range -i '" + v + "'");
        q.set_min_nodes(lo);
        q.set_max_nodes(dash == std::string::npos ? lo : hi);
        break;
      }
      case 'j': {
        auto sel = ParseSacctJobList(optarg);
        if (!sel.ok()) return sel.status();
        for (const SacctJobSelector& s : *sel) {
          o.jobs.push_back(s);
          q.add_job_ids(s.job_id);
        }
        for (const std::string& t : fmt::SplitList(optarg)) q.add_job_id_texts(t);
        break;
      }
      case 'l':
        long_out = true;
        break;
      case 'L':
        all_clusters = true;
        break;
      case 'M':
        if (fmt::Lower(optarg) == "all" || std::string_view(optarg) == "-1") {
          all_clusters = true;
        } else {
          all_clusters = false;
          for (const std::string& m : fmt::SplitList(optarg)) q.add_clusters(m);
        }
        break;
      case 'n':
        o.no_header = true;
        break;
      case 'N':
        for (const std::string& n : fmt::SplitList(optarg)) q.add_nodes(n);
        break;
      case kOptName:
        for (const std::string& n : fmt::SplitList(optarg)) q.add_names(n);
        break;
      case 'o':
        fields += optarg;
        fields += ',';
        break;
      case 'p':
        o.parsable = 1;
        break;
      case 'P':
        o.parsable = 2;
        break;
      case kOptDelimiter:
        o.delimiter = optarg;
        break;
      case 'q':
        for (const std::string& n : fmt::SplitList(optarg)) q.add_qos(n);
        break;
      case 'r':
        for (const std::string& n : fmt::SplitList(optarg)) q.add_partitions(n);
        break;
      case 'R':
        for (const std::string& n : fmt::SplitList(optarg)) q.add_reasons(n);
        break;
      case 's':
        for (const std::string& n : fmt::SplitList(optarg)) {
          auto st = ParseJobState(n);
          if (!st) return InvalidArgument("sacct: fatal: unrecognized job state value '" + n + "'");
          q.add_states(*st);
        }
        break;
      case 'S': {
        auto t = ParseSacctTime(optarg, env.now);
        if (!t.ok()) return t.status();
        o.start = *t;
        start_set = true;
        break;
      }
      case 'T':
        o.truncate = true;
        break;
      case 'u':
        if (std::string_view(optarg) == "-1") {
          all_users = true;
          break;
        }
        all_users = false;
        for (const std::string& u : fmt::SplitList(optarg)) {
          std::string name;
          if (!env.resolve_user || !env.resolve_user(u, &name))
            return InvalidArgument("Invalid user id: " + u);
          users.push_back(name);
        }
        break;
      case 'v':
        o.verbose = true;
        break;
      case 't':  // deprecated spelling of -X
      case 'X':
        o.allocations = true;
        break;
      case kOptJson:
        o.json = true;
        break;
      case kOptYaml:
        return InvalidArgument("sacct: error: --yaml is not supported; use --json");
      case kOptNoconvert:
        o.noconvert = true;
        break;
      case kOptUnits: {
        char u = static_cast<char>(std::toupper(static_cast<unsigned char>(optarg[0])));
        if (std::string_view("KMGTP").find(u) == std::string_view::npos || optarg[1])
          return InvalidArgument("sacct: fatal: Invalid unit type");
        o.units = u;
        break;
      }
      case kOptWholeHetjob:
        if (optarg && fmt::Lower(optarg) != "yes" && fmt::Lower(optarg) != "y" &&
            fmt::Lower(optarg) != "no" && fmt::Lower(optarg) != "n")
          return InvalidArgument(std::string("sacct: error: Invalid --whole-hetjob value \"") +
                                 optarg + "\". Valid values: [yes|no].");
        break;
      // Accepted for compatibility; Shoal records nothing they could select on.
      case 'B':
      case 'c':
      case 'C':
      case 'f':
      case 'F':
      case 'g':
      case 'I':
      case 'k':
      case 'K':
      case 'W':
      case 'x':
      case kOptLocal:
      case kOptFederation:
      case kOptEnvVars:
      case kOptUseLocalUid:
        break;
      default:
        return InvalidArgument("");  // getopt has explained it
    }
  }
  if (o.action != SacctAction::kList) return o;
  if (optind < argc) {
    std::string msg = "sacct: error: Unknown arguments:";
    for (int i = optind; i < argc; ++i) msg += std::string("\nsacct: error:  ") + args[i];
    return InvalidArgument(msg);
  }

  // Time window (man sacct, DEFAULT TIME WINDOW).
  bool have_jobs = !o.jobs.empty();
  bool have_states = q.states_size() > 0;
  if (!start_set) {
    if (have_jobs)
      o.start = 0;
    else if (have_states)
      o.start = env.now;
    else
      o.start = LocalMidnight(env.now);
  }
  if (!end_set && have_states) o.end = start_set ? o.start : 0;
  if (o.end != 0 && o.end < o.start) {
    return InvalidArgument("sacct: error: Start time (" + FormatTimestamp(o.start) +
                           ") requested is after end time (" + FormatTimestamp(o.end) + ").");
  }
  q.set_start(o.start);
  q.set_end(o.end);
  q.set_by_state_window(have_states);
  q.set_include_steps(!o.allocations);

  // Clusters: the local one unless -M or -L.
  if (!all_clusters && q.clusters_size() == 0 && !env.cluster.empty()) q.add_clusters(env.cluster);
  if (all_clusters) q.clear_clusters();
  o.all_clusters = all_clusters;

  // Users: jobs or nodes asked for, or root, mean everybody; otherwise the caller.
  if (users.empty() && (have_jobs || q.nodes_size() > 0)) all_users = true;
  if (users.empty() && env.uid == 0) all_users = true;
  if (!all_users) {
    if (users.empty())
      users.push_back(env.user_name.empty() ? std::to_string(env.uid) : env.user_name);
    for (const std::string& u : users) q.add_users(u);
  }

  // Output fields: -o first, then -b and -l appended; SACCT_FORMAT or the default otherwise.
  if (brief) fields += std::string(kSacctBriefFields) + ",";
  if (long_out) fields += std::string(kSacctLongFields) + ",";
  if (fields.empty()) fields = env.sacct_format.empty() ? kSacctDefaultFields : env.sacct_format;
  o.fields = fields;
  return o;
}

const char* SacctUsageText() { return "Usage: sacct [options]\n\tUse --help for help\n"; }

const char* SacctHelpText() {
  return "sacct [<OPTION>]                                                            \n"
         "     Valid <OPTION> values are:                                              \n"
         "     -a, --allusers:                                                        \n"
         "\t           Display jobs for all users. By default, only the         \n"
         "                   current user's jobs are displayed.  If ran by user root  \n"
         "                   this is the default.                                     \n"
         "     -A, --accounts:                                                        \n"
         "\t           Use this comma separated list of accounts to select jobs \n"
         "                   to display.  By default, all accounts are selected.      \n"
         "     -b, --brief:                                                           \n"
         "\t           Equivalent to '--format=jobstep,state,error'.            \n"
         "     -B, --batch-script:                                                    \n"
         "\t           Print batch script of job.                               \n"
         "                   NOTE: AccountingStoreFlags=job_script is required for this\n"
         "                   NOTE: Requesting specific job(s) with '-j' is required   \n"
         "                         for this.                                          \n"
         "     -c, --completion: Use job completion instead of accounting data.       \n"
         "         --delimiter:                                                       \n"
         "\t           ASCII characters used to separate the fields when        \n"
         "\t           specifying the  -p  or  -P options. The default delimiter\n"
         "\t           is a '|'. This options is ignored if -p or -P options    \n"
         "\t           are not specified.                                       \n"
         "     -D, --duplicates:                                                      \n"
         "\t           If Slurm job ids are reset, some job numbers may         \n"
         "\t           appear more than once referring to different jobs.       \n"
         "\t           Without this option only the most recent jobs will be    \n"
         "                   displayed.                                               \n"
         "     -e, --helpformat:                                                      \n"
         "\t           Print a list of fields that can be specified with the    \n"
         "\t           '--format' option                                        \n"
         "     -E, --endtime:                                                         \n"
         "                   Select jobs eligible before this time.  If states are    \n"
         "                   given with the -s option return jobs in this state before\n"
         "                   this period.                                             \n"
         "         --env-vars:                                                        \n"
         "\t           Print the environment to launch the batch script of job. \n"
         "                   NOTE: AccountingStoreFlags=job_env is required for this  \n"
         "                   NOTE: Requesting specific job(s) with '-j' is required   \n"
         "                         for this.                                          \n"
         "         --federation: Report jobs from federation if a member of a one.    \n"
         "     -f, --file=file:                                                       \n"
         "\t           Read data from the specified file, rather than Slurm's   \n"
         "                   current accounting log file. (Only appliciable when      \n"
         "                   running the jobcomp/filetxt plugin.)                     \n"
         "     -g, --gid, --group:                                                    \n"
         "\t           Use this comma separated list of gids or group names     \n"
         "                   to select jobs to display.  By default, all groups are   \n"
         "                   selected.                                                \n"
         "     -h, --help:   Print this description of use.                           \n"
         "     -i, --nnodes=N:                                                        \n"
         "                   Return jobs which ran on this many nodes (N = min[-max]) \n"
         "     -I, --ncpus=N:                                                         \n"
         "                   Return jobs which ran on this many cpus (N = min[-max])  \n"
         "     -j, --jobs:                                                            \n"
         "\t           Format is <job(.step)>. Display information about this   \n"
         "                   job or comma-separated list of jobs. The default is all  \n"
         "                   jobs. Adding .step will display the specific job step of \n"
         "                   that job. (A step id of 'batch' will display the         \n"
         "                   information about the batch step.)                       \n"
         "     --json:                                                                \n"
         "                   Produce JSON output                                      \n"
         "     -k, --timelimit-min:                                                   \n"
         "                   Only send data about jobs with this timelimit.           \n"
         "                   If used with timelimit_max this will be the minimum      \n"
         "                   timelimit of the range.  Default is no restriction.      \n"
         "     -K, --timelimit-max:                                                   \n"
         "                   Ignored by itself, but if timelimit_min is set this will \n"
         "                   be the maximum timelimit of the range.  Default is no    \n"
         "                   restriction.                                             \n"
         "         --local   Report information only about jobs on the local cluster. \n"
         "\t           Overrides --federation.                                  \n"
         "     -l, --long:                                                            \n"
         "\t           Equivalent to specifying                                 \n"
         "\t           '--format=jobid,jobidraw,jobname,partition,maxvmsize,    \n"
         "                             maxvmsizenode,maxvmsizetask,avevmsize,maxrss,  \n"
         "                             maxrssnode,maxrsstask,averss,maxpages,         \n"
         "                             maxpagesnode,maxpagestask,avepages,mincpu,     \n"
         "                             mincpunode,mincputask,avecpu,ntasks,alloccpus, \n"
         "                             elapsed,state,exitcode,avecpufreq,reqcpufreqmin,\n"
         "                             reqcpufreqmax,reqcpufreqgov,reqmem,            \n"
         "                             consumedenergy,maxdiskread,maxdiskreadnode,    \n"
         "                             maxdiskreadtask,avediskread,maxdiskwrite,      \n"
         "                             maxdiskwritenode,maxdiskwritetask,avediskwrite,\n"
         "                             reqtres,alloctres,                             \n"
         "                             tresusageinave,tresusageinmax,tresusageinmaxn, \n"
         "                             tresusageinmaxt,tresusageinmin,tresusageinminn,\n"
         "                             tresusageinmint,tresusageintot,tresusageoutmax,\n"
         "                             tresusageoutmaxn,tresusageoutmaxt,             \n"
         "                             tresusageoutave,tresusageouttot                \n"
         "     -L, --allclusters:                                                     \n"
         "\t           Display jobs ran on all clusters. By default, only jobs  \n"
         "                   ran on the cluster from where sacct is called are        \n"
         "                   displayed.                                               \n"
         "     -M, --clusters:                                                        \n"
         "                   Only send data about these clusters. Use \"all\" for all \n"
         "                   clusters.\n"
         "     -n, --noheader:                                                        \n"
         "\t           No header will be added to the beginning of output.      \n"
         "                   The default is to print a header.                        \n"
         "     --noconvert:                                                           \n"
         "\t\t   Don't convert units from their original type             \n"
         "\t\t   (e.g. 2048M won't be converted to 2G).                   \n"
         "     -N, --nodelist:                                                        \n"
         "                   Display jobs that ran on any of these nodes,             \n"
         "                   can be one or more using a ranged string.                \n"
         "     --name:                                                                \n"
         "                   Display jobs that have any of these name(s).             \n"
         "     -o, --format:                                                          \n"
         "\t           Comma separated list of fields. (use \"--helpformat\"    \n"
         "                   for a list of available fields).                         \n"
         "     -p, --parsable: output will be '|' delimited with a '|' at the end     \n"
         "     -P, --parsable2: output will be '|' delimited without a '|' at the end \n"
         "     -q, --qos:                                                             \n"
         "                   Only send data about jobs using these qos.  Default is all.\n"
         "     -r, --partition:                                                       \n"
         "\t           Comma separated list of partitions to select jobs and    \n"
         "                   job steps from. The default is all partitions.           \n"
         "     -s, --state:                                                           \n"
         "\t           Select jobs based on their current state or the state    \n"
         "                   they were in during the time period given: running (r),  \n"
         "                   completed (cd), failed (f), timeout (to), resizing (rs), \n"
         "                   deadline (dl) and node_fail (nf).                        \n"
         "     -S, --starttime:                                                       \n"
         "                   Select jobs eligible after this time.  Default is        \n"
         "                   00:00:00 of the current day, unless '-s' is set then     \n"
         "                   the default is 'now'.                                    \n"
         "     -T, --truncate:                                                        \n"
         "                   Truncate time.  So if a job started before --starttime   \n"
         "                   the start time would be truncated to --starttime.        \n"
         "                   The same for end time and --endtime.                     \n"
         "     -u, --uid, --user:                                                     \n"
         "\t           Use this comma separated list of uids or user names      \n"
         "                   to select jobs to display.  By default, the running      \n"
         "                   user's uid is used.                                      \n"
         "     --units=[KMGTP]:                                                       \n"
         "                   Display values in specified unit type. Takes precedence  \n"
         "\t\t   over --noconvert option.                                 \n"
         "     --usage:      Display brief usage message.                             \n"
         "     -v, --verbose:                                                         \n"
         "\t           Primarily for debugging purposes, report the state of    \n"
         "                   various variables during processing.                     \n"
         "     -V, --version: Print version.                                          \n"
         "     -W, --wckeys:                                                          \n"
         "                   Only send data about these wckeys.  Default is all.      \n"
         "     --whole-hetjob[=yes|no]:                                               \n"
         "\t\t   If set to 'yes' (or no argument), then information about \n"
         "\t\t   all the heterogeneous components will be retrieved. If   \n"
         "\t\t   set to 'no' only the specific filtered components will   \n"
         "\t\t   be retrieved. The default behavior without this option is\n"
         "\t\t   that all components are retrieved only if filtering the  \n"
         "\t\t   leader component with --jobs.                            \n"
         "     -x, --associations:                                                    \n"
         "                   Only send data about these association id.  Default is all.\n"
         "     -X, --allocations:                                                     \n"
         "\t           Only show statistics relevant to the job allocation      \n"
         "\t           itself, not taking steps into consideration.             \n"
         "     --yaml:                                                                \n"
         "                   Produce YAML output                                      \n"
         "\t                                                                    \n"
         "     Note, valid start/end time formats are...                              \n"
         "\t           HH:MM[:SS] [AM|PM]                                       \n"
         "\t           MMDD[YY] or MM/DD[/YY] or MM.DD[.YY]                     \n"
         "\t           MM/DD[/YY]-HH:MM[:SS]                                    \n"
         "\t           YYYY-MM-DD[THH:MM[:SS]]                                  \n"
         "\t           now[{+|-}count[seconds(default)|minutes|hours|days|weeks]]\n"
         "\n";
}

}  // namespace shoal::cli
