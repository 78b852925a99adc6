#include "cli/scancel_options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string Upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

enum class Arg { kNone, kRequired };

struct LongOpt {
  const char* name;
  Arg arg;
  char short_name;  // the equivalent short option, or a private code
};

// Private codes for long-only options.
constexpr char kMe = 1, kWckey = 2, kHelp = 3, kUsage = 4, kCtld = 5, kSibling = 6;

constexpr LongOpt kLongOpts[] = {
    {"account", Arg::kRequired, 'A'},
    {"batch", Arg::kNone, 'b'},
    {"clusters", Arg::kRequired, 'M'},
    {"ctld", Arg::kNone, kCtld},
    {"full", Arg::kNone, 'f'},
    {"help", Arg::kNone, kHelp},
    {"hurry", Arg::kNone, 'H'},
    {"interactive", Arg::kNone, 'i'},
    {"jobname", Arg::kRequired, 'n'},
    {"me", Arg::kNone, kMe},
    {"name", Arg::kRequired, 'n'},
    {"nodelist", Arg::kRequired, 'w'},
    {"partition", Arg::kRequired, 'p'},
    {"qos", Arg::kRequired, 'q'},
    {"quiet", Arg::kNone, 'Q'},
    {"reservation", Arg::kRequired, 'R'},
    {"sibling", Arg::kRequired, kSibling},
    {"signal", Arg::kRequired, 's'},
    {"state", Arg::kRequired, 't'},
    {"usage", Arg::kNone, kUsage},
    {"user", Arg::kRequired, 'u'},
    {"verbose", Arg::kNone, 'v'},
    {"version", Arg::kNone, 'V'},
    {"wckey", Arg::kRequired, kWckey},
};

constexpr std::string_view kShortWithArg = "AMnpqRstuw";
constexpr std::string_view kShortFlags = "bfHiQvV";

const std::string kTryHelp = "Try \"scancel --help\" for more information";

Status ParseStates(std::string_view text, std::vector<pb::JobState>* out) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view part =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    auto st = ParseJobState(part);
    if (!st || (*st != pb::JOB_PENDING && *st != pb::JOB_RUNNING && *st != pb::JOB_SUSPENDED)) {
      return InvalidArgument("Invalid job state specified: " + std::string(part) +
                             "\nValid job states are PENDING, RUNNING, and SUSPENDED");
    }
    out->push_back(*st);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return Status::Ok();
}

Status Apply(ScancelOptions& o, char opt, const std::string& value) {
  switch (opt) {
    case 'A':
      o.account = value;
      break;
    case 'b':
      o.batch = true;
      break;
    case 'f':
      o.full = true;
      break;
    case 'H':
      o.hurry = true;
      break;
    case 'i':
      o.interactive = true;
      break;
    case 'M':
      break;  // single cluster: accepted and ignored
    case 'n':
      o.name = value;
      break;
    case 'p':
      o.partition = value;
      break;
    case 'q':
      o.qos = value;
      break;
    case 'Q':
      o.quiet = true;
      break;
    case 'R':
      o.reservation = value;
      break;
    case 's': {
      auto sig = ParseSignal(value);
      if (!sig.ok()) return InvalidArgument("Unknown job signal: " + value);
      o.signal = *sig;
      break;
    }
    case 't': {
      o.states.clear();
      if (Status s = ParseStates(value, &o.states); !s.ok()) return s;
      break;
    }
    case 'u':
      o.user = value;
      break;
    case 'v':
      ++o.verbose;
      break;
    case 'V':
      o.version = true;
      break;
    case 'w':
      o.nodelist = value;
      break;
    case kMe:
      o.me = true;
      break;
    case kWckey:
      o.wckey = value;
      break;
    case kHelp:
      o.help = true;
      break;
    case kUsage:
      o.usage = true;
      break;
    case kCtld:
      break;
    case kSibling:
      break;
    default:
      break;
  }
  return Status::Ok();
}

bool Truthy(const std::string& v) {
  std::string u = Upper(v);
  return !(u.empty() || u == "0" || u == "NO" || u == "FALSE" || u == "N");
}

}  // namespace

bool IsScancelJobId(std::string_view id) {
  // job[_array][.step] or job+hetcomp[.step]; array may be N or [list].
  size_t dot = id.find('.');
  std::string_view job = id.substr(0, dot);
  if (dot != std::string_view::npos) {
    std::string_view step = id.substr(dot + 1);
    if (!AllDigits(step) && step != "batch" && step != "extern") return false;
  }
  size_t sep = job.find_first_of("_+");
  std::string_view base = job.substr(0, sep);
  if (!AllDigits(base) || base.size() > 10) return false;
  uint64_t v = std::strtoull(std::string(base).c_str(), nullptr, 10);
  if (v == 0 || v >= 0xfffffff0ull) return false;
  if (sep == std::string_view::npos) return true;
  std::string_view rest = job.substr(sep + 1);
  if (job[sep] == '+') return AllDigits(rest);
  if (AllDigits(rest)) return true;
  if (rest.size() < 3 || rest.front() != '[' || rest.back() != ']') return false;
  rest = rest.substr(1, rest.size() - 2);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string_view part =
        rest.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      if (!AllDigits(part)) return false;
    } else if (!AllDigits(part.substr(0, dash)) || !AllDigits(part.substr(dash + 1))) {
      return false;
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return true;
}

std::string_view StepPart(std::string_view id) {
  size_t dot = id.find('.');
  return dot == std::string_view::npos ? std::string_view() : id.substr(dot + 1);
}

Result<ScancelOptions> ParseScancelArgs(const std::vector<std::string>& args,
                                        const EnvLookup& env) {
  ScancelOptions o;
  if (env) {
    auto get = [&](const char* name) { return env(name); };
    if (auto v = get("SCANCEL_ACCOUNT")) o.account = *v;
    if (auto v = get("SCANCEL_BATCH")) o.batch = Truthy(*v);
    if (auto v = get("SCANCEL_FULL")) o.full = Truthy(*v);
    if (auto v = get("SCANCEL_HURRY")) o.hurry = Truthy(*v);
    if (auto v = get("SCANCEL_INTERACTIVE")) o.interactive = Truthy(*v);
    if (auto v = get("SCANCEL_NAME")) o.name = *v;
    if (auto v = get("SCANCEL_PARTITION")) o.partition = *v;
    if (auto v = get("SCANCEL_QOS")) o.qos = *v;
    if (auto v = get("SCANCEL_STATE")) {
      if (Status s = ParseStates(*v, &o.states); !s.ok()) return s;
    }
    if (auto v = get("SCANCEL_USER")) o.user = *v;
    if (auto v = get("SCANCEL_VERBOSE")) o.verbose = Truthy(*v) ? 1 : 0;
    if (auto v = get("SCANCEL_WCKEY")) o.wckey = *v;
  }

  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      for (++i; i < args.size(); ++i) positional.push_back(args[i]);
      break;
    }
    if (a.rfind("--", 0) == 0) {
      std::string body = a.substr(2);
      std::string name = body, value;
      bool has_value = false;
      if (size_t eq = body.find('='); eq != std::string::npos) {
        name = body.substr(0, eq);
        value = body.substr(eq + 1);
        has_value = true;
      }
      // Exact match, else a unique prefix (as getopt_long allows).
      const LongOpt* match = nullptr;
      int prefix_matches = 0;
      for (const auto& lo : kLongOpts) {
        if (name == lo.name) {
          match = &lo;
          prefix_matches = 1;
          break;
        }
        if (!name.empty() && std::string_view(lo.name).substr(0, name.size()) == name) {
          // "--name"/"--jobname" style duplicates share a code; count distinct codes.
          if (!match || match->short_name != lo.short_name) ++prefix_matches;
          match = &lo;
        }
      }
      if (!match) {
        return InvalidArgument("scancel: unrecognized option '" + a + "'\n" + kTryHelp);
      }
      if (prefix_matches > 1) {
        return InvalidArgument("scancel: option '" + a + "' is ambiguous\n" + kTryHelp);
      }
      if (match->arg == Arg::kRequired && !has_value) {
        if (i + 1 >= args.size()) {
          return InvalidArgument("scancel: option '--" + std::string(match->name) +
                                 "' requires an argument\n" + kTryHelp);
        }
        value = args[++i];
      } else if (match->arg == Arg::kNone && has_value) {
        return InvalidArgument("scancel: option '--" + std::string(match->name) +
                               "' doesn't allow an argument\n" + kTryHelp);
      }
      if (Status s = Apply(o, match->short_name, value); !s.ok()) return s;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      for (size_t k = 1; k < a.size(); ++k) {
        char c = a[k];
        if (kShortWithArg.find(c) != std::string_view::npos) {
          std::string value;
          if (k + 1 < a.size()) {
            value = a.substr(k + 1);
          } else if (i + 1 < args.size()) {
            value = args[++i];
          } else {
            return InvalidArgument(std::string("scancel: option requires an argument -- '") + c +
                                   "'\n" + kTryHelp);
          }
          if (Status s = Apply(o, c, value); !s.ok()) return s;
          break;
        }
        if (kShortFlags.find(c) != std::string_view::npos) {
          if (Status s = Apply(o, c, ""); !s.ok()) return s;
          continue;
        }
        return InvalidArgument(std::string("scancel: invalid option -- '") + c + "'\n" + kTryHelp);
      }
      continue;
    }
    positional.push_back(a);
  }

  if (o.help || o.usage || o.version) return o;
  for (const std::string& p : positional) {
    if (!IsScancelJobId(p)) return InvalidArgument("scancel: error: Invalid job id " + p);
    o.job_ids.push_back(p);
  }
  if (o.job_ids.empty() && !HasFilters(o)) {
    return InvalidArgument("scancel: error: No job identification provided");
  }
  return o;
}

bool HasFilters(const ScancelOptions& o) {
  return o.me || !o.user.empty() || !o.name.empty() || !o.states.empty() || !o.partition.empty() ||
         !o.nodelist.empty() || !o.account.empty() || !o.qos.empty() || !o.reservation.empty() ||
         !o.wckey.empty();
}

pb::CancelJobRequest BuildCancelRequest(const ScancelOptions& o, std::optional<uint32_t> uid,
                                        const std::vector<std::string>& nodes) {
  pb::CancelJobRequest req;
  for (const auto& id : o.job_ids) req.add_job_ids(id);
  req.set_signal(o.signal.value_or(0));
  req.set_batch_only(o.batch && !o.full);
  req.set_full(o.full);
  if (uid) {
    req.set_filter_uid(*uid);
    req.set_has_filter_uid(true);
  }
  req.set_filter_name(o.name);
  for (auto st : o.states) req.add_filter_states(st);
  req.set_filter_partition(o.partition);
  for (const auto& n : nodes) req.add_filter_nodes(n);
  req.set_filter_account(o.account);
  req.set_filter_qos(o.qos);
  return req;
}

std::string CancelPrompt(const pb::JobRecord& job) {
  std::string id = std::to_string(job.job_id());
  if (job.array_job_id() != 0 && job.array_task_id() != kNoArrayTask) {
    id = std::to_string(job.array_job_id()) + "_" + std::to_string(job.array_task_id());
  }
  return "Cancel job_id=" + id + " name=" + job.spec().name() + " partition=" + job.partition() +
         " [y/n]? ";
}

std::string ScancelUsage() {
  return "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]\n"
         "               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]\n"
         "               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]\n"
         "               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]\n"
         "               [job_id[_array_id][.step_id]]\n";
}

std::string ScancelHelp() {
  return "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]\n"
         "  -A, --account=account           act only on jobs charging this account\n"
         "  -b, --batch                     signal batch shell for specified job\n"
         "  -f, --full                      signal batch shell and all steps for specified job\n"
         "  -H, --hurry                     avoid burst buffer stage out\n"
         "  -i, --interactive               require response from user for each job\n"
         "  -M, --clusters                  clusters to issue commands to.\n"
         "      --me                        act only on jobs of the calling user\n"
         "  -n, --name=job_name             act only on jobs with this name\n"
         "  -p, --partition=partition       act only on jobs in this partition\n"
         "  -Q, --quiet                     disable warnings\n"
         "  -q, --qos=qos                   act only on jobs with this quality of service\n"
         "  -R, --reservation=reservation   act only on jobs with this reservation\n"
         "  -s, --signal=name | integer     signal to send to job, default is SIGKILL\n"
         "  -t, --state=states              act only on jobs in this state.  Valid job\n"
         "                                  states are PENDING, RUNNING and SUSPENDED\n"
         "  -u, --user=user_name            act only on jobs of this user\n"
         "  -V, --version                   output version information and exit\n"
         "  -v, --verbose                   verbosity level\n"
         "  -w, --nodelist                  act only on jobs on these nodes\n"
         "      --wckey=wckey               act only on jobs with this workload\n"
         "                                  charactization key\n"
         "\n"
         "Help options:\n"
         "  --help                          show this help message\n"
         "  --usage                         display brief usage message\n";
}

}  // namespace shoal::cli
