#include "cli/sacctmgr_parse.h"

#include <cctype>

#include "cli/format_fields.h"

namespace shoal::cli::sacctmgr {
namespace {

Status Fail(std::string msg) { return InvalidArgument(std::move(msg)); }

// `word` abbreviates `full` with at least `min` characters (case-insensitive), as Slurm allows.
bool Abbrev(const std::string& word, std::string_view full, size_t min) {
  std::string w = fmt::Lower(word);
  return w.size() >= min && w.size() <= full.size() && full.substr(0, w.size()) == w;
}

const char* kListEntities =
    "No valid entity in list command\n"
    "Input line must include \"Account\", \"Association\", \"Cluster\", \"Configuration\",\n"
    "\"Event\", \"Federation\", \"Problem\", \"QOS\", \"Resource\", \"Reservation\",\n"
    "\"RunAwayJobs\", \"Stats\", \"Transaction\", \"TRES\", \"User\", or \"WCKey\"";
const char* kAddEntities =
    "No valid entity in add command\n"
    "Input line must include \"Account\", \"Cluster\", \"Coordinator\", \"Federation\", "
    "\"QOS\", \"Resource\", or \"User\"";
const char* kModifyEntities =
    "No valid entity in modify command\n"
    "Input line must include \"Account\", \"Association\", \"Cluster\", \"Federation\", "
    "\"Job\", \"QOS\", \"Resource\", or \"User\"";
const char* kDeleteEntities =
    "No valid entity in delete command\n"
    "Input line must include \"Account\", \"Cluster\", \"Coordinator\", \"Federation\", "
    "\"QOS\", \"Resource\", \"User\", or \"WCKey\"";

// key=value, key+=value, key-=value; false for a bare word.
bool SplitKv(const std::string& word, pb::AcctKeyValue* kv) {
  auto eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  std::string key = word.substr(0, eq);
  std::string op = "=";
  if (key.back() == '+' || key.back() == '-') {
    op = std::string(1, key.back()) + "=";
    key.pop_back();
  }
  if (key.empty()) return false;
  kv->set_key(key);
  kv->set_op(op);
  kv->set_value(word.substr(eq + 1));
  return true;
}

}  // namespace

std::string CanonicalEntity(const std::string& word) {
  if (Abbrev(word, "accounts", 3) || fmt::Lower(word) == "acct") return "account";
  if (Abbrev(word, "associations", 3)) return "association";
  if (Abbrev(word, "clusters", 2)) return "cluster";
  if (Abbrev(word, "configuration", 3)) return "configuration";
  if (Abbrev(word, "coordinators", 3)) return "coordinator";
  if (Abbrev(word, "events", 1)) return "event";
  if (Abbrev(word, "federations", 3)) return "federation";
  if (Abbrev(word, "problems", 1)) return "problem";
  if (Abbrev(word, "qos", 1)) return "qos";
  if (Abbrev(word, "reservations", 4)) return "reservation";
  if (Abbrev(word, "resource", 4)) return "resource";
  if (Abbrev(word, "runawayjobs", 2)) return "runawayjobs";
  if (Abbrev(word, "stats", 2)) return "stats";
  if (Abbrev(word, "transactions", 2) || fmt::Lower(word) == "txn") return "transaction";
  if (Abbrev(word, "tres", 2)) return "tres";
  if (Abbrev(word, "users", 1)) return "user";
  if (Abbrev(word, "wckeys", 1)) return "wckey";
  return "";
}

Result<Options> ParseOptions(const std::vector<std::string>& args,
                             std::vector<std::string>* words) {
  Options o;
  auto bad = [](const std::string& what) {
    return Fail("sacctmgr: " + what + "\nTry \"sacctmgr --help\" for more information");
  };
  // Options may come anywhere (getopt permutes): `sacctmgr show assoc format=user -P`.
  words->clear();
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      words->push_back(a);
      continue;
    }
    if (a == "--") {
      ++i;
      break;
    }
    if (a[1] == '-') {
      std::string name = a.substr(2);
      if (name == "immediate")
        o.immediate = true;
      else if (name == "noheader")
        o.noheader = true;
      else if (name == "parsable")
        o.parsable = 1;
      else if (name == "parsable2")
        o.parsable = 2;
      else if (name == "quiet")
        o.quiet = true;
      else if (name == "readonly")
        o.readonly = true;
      else if (name == "associations")
        o.with_assoc = true;
      else if (name == "verbose")
        o.verbose++;
      else if (name == "help" || name == "usage")
        o.help = true;
      else if (name == "version")
        o.version = true;
      else
        return bad("unrecognized option '" + a + "'");
      continue;
    }
    for (size_t j = 1; j < a.size(); ++j) {
      switch (a[j]) {
        case 'i':
          o.immediate = true;
          break;
        case 'n':
          o.noheader = true;
          break;
        case 'p':
          o.parsable = 1;
          break;
        case 'P':
          o.parsable = 2;
          break;
        case 'Q':
          o.quiet = true;
          break;
        case 'r':
          o.readonly = true;
          break;
        case 's':
          o.with_assoc = true;
          break;
        case 'v':
          o.verbose++;
          break;
        case 'h':
          o.help = true;
          break;
        case 'V':
          o.version = true;
          break;
        default:
          return bad(std::string("invalid option -- '") + a[j] + "'");
      }
    }
  }
  words->insert(words->end(), args.begin() + static_cast<long>(i), args.end());
  return o;
}

Result<Command> ParseCommand(const std::vector<std::string>& words, const Options& opts) {
  Command cmd;
  if (opts.help) {
    cmd.action = Action::kHelp;
    return cmd;
  }
  if (opts.version) {
    cmd.action = Action::kVersion;
    return cmd;
  }
  if (words.empty()) return cmd;  // interactive mode is the caller's business
  const std::string& verb = words[0];
  std::string v = fmt::Lower(verb);
  if (v == "help") {
    cmd.action = Action::kHelp;
    return cmd;
  }
  if (v == "version") {
    cmd.action = Action::kVersion;
    return cmd;
  }
  bool show = Abbrev(verb, "show", 3) || Abbrev(verb, "list", 3);
  pb::AcctAdminRequest::Verb admin_verb = pb::AcctAdminRequest::ADD;
  const char* entities_msg = kListEntities;
  if (show) {
    cmd.action = Action::kShow;
  } else if (Abbrev(verb, "add", 3) || Abbrev(verb, "create", 3)) {
    admin_verb = pb::AcctAdminRequest::ADD;
    entities_msg = kAddEntities;
  } else if (Abbrev(verb, "modify", 1) || Abbrev(verb, "update", 1)) {
    admin_verb = pb::AcctAdminRequest::MODIFY;
    entities_msg = kModifyEntities;
  } else if (Abbrev(verb, "delete", 3) || Abbrev(verb, "remove", 3)) {
    admin_verb = pb::AcctAdminRequest::DELETE;
    entities_msg = kDeleteEntities;
  } else {
    return Fail("invalid keyword: " + verb);
  }
  if (!show && opts.readonly) return Fail("Can't run this command in readonly mode.");
  if (words.size() < 2) {
    if (show) return Fail(entities_msg);
    return Fail("Too few arguments for keyword:" + verb);
  }
  std::string entity = CanonicalEntity(words[1]);
  if (entity.empty()) return Fail(entities_msg);

  if (show) {
    pb::AcctShowRequest& req = cmd.show;
    req.set_entity(entity);
    req.set_with_assoc(opts.with_assoc);
    for (size_t i = 2; i < words.size(); ++i) {
      const std::string& w = words[i];
      std::string l = fmt::Lower(w);
      pb::AcctKeyValue kv;
      if (l == "where" || l == "set") continue;
      if (SplitKv(w, &kv)) {
        std::string key = fmt::Lower(kv.key());
        if (key == "format" || key == "formats") {
          for (auto& f : fmt::SplitList(kv.value(), ',')) cmd.format.push_back(f);
        } else {
          *req.add_where() = kv;
        }
        continue;
      }
      if (Abbrev(w, "withassoc", 5) || Abbrev(w, "associations", 5)) {
        req.set_with_assoc(true);
      } else if (Abbrev(w, "withdeleted", 5)) {
        req.set_with_deleted(true);
      } else if (l == "tree") {
        cmd.tree = true;
      } else if (l == "wolimits") {
        cmd.wolimits = true;
      } else if (l == "onlydefaults" || l == "woplimits" || l == "wopinfo" ||
                 l == "withsubaccounts" || l == "withcoord" || l == "withrawqoslevel") {
        pb::AcctKeyValue flag;
        flag.set_key(l);
        *req.add_where() = flag;
      } else {
        for (auto& n : fmt::SplitList(w, ',')) req.add_names(n);
      }
    }
    return cmd;
  }

  cmd.action = Action::kAdmin;
  pb::AcctAdminRequest& req = cmd.admin;
  req.set_verb(admin_verb);
  req.set_entity(entity);
  // Before "set" (or after "where") a spec is a condition; after "set" a value. add has no
  // conditions: everything is a setting.
  bool in_set = admin_verb == pb::AcctAdminRequest::ADD;
  bool saw_set = false;
  for (size_t i = 2; i < words.size(); ++i) {
    const std::string& w = words[i];
    std::string l = fmt::Lower(w);
    if (l == "where") {
      in_set = false;
      continue;
    }
    if (l == "set") {
      in_set = true;
      saw_set = true;
      continue;
    }
    pb::AcctKeyValue kv;
    if (SplitKv(w, &kv)) {
      if (in_set) {
        *req.add_set() = kv;
      } else if (kv.op() != "=") {
        return Fail(" Unknown condition: " + w + "\n Use keyword 'set' to modify value");
      } else {
        *req.add_where() = kv;
      }
      continue;
    }
    if (in_set && admin_verb != pb::AcctAdminRequest::ADD)
      return Fail(" Unknown option: " + w + "\n Use keyword 'where' to modify condition");
    for (auto& n : fmt::SplitList(w, ',')) req.add_names(n);
  }
  if (admin_verb == pb::AcctAdminRequest::MODIFY && !saw_set)
    return Fail(" You didn't give me anything to set");
  return cmd;
}

}  // namespace shoal::cli::sacctmgr
