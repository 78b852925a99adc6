#include "cli/sacctmgr_format.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

#include "cli/format_fields.h"
#include "common/name_service.h"
#include "common/units.h"

namespace shoal::cli::sacctmgr {
namespace {

struct FieldDef {
  const char* key;
  const char* header;
  int width;
};

// Every field sacctmgr can show, with Slurm's header and default width.
constexpr FieldDef kFields[] = {
    {"cluster", "Cluster", 10},
    {"account", "Account", 10},
    {"user", "User", 10},
    {"partition", "Partition", 10},
    {"share", "Share", 9},
    {"fairshare", "Share", 9},
    {"priority", "Priority", 10},
    {"grpjobs", "GrpJobs", 7},
    {"grptres", "GrpTRES", 13},
    {"grpsubmit", "GrpSubmit", 9},
    {"grpsubmitjobs", "GrpSubmit", 9},
    {"grpwall", "GrpWall", 11},
    {"grptresmins", "GrpTRESMins", 13},
    {"grptresrunmins", "GrpTRESRunMin", 13},
    {"grpnodes", "GrpNodes", 8},
    {"grpcpus", "GrpCPUs", 8},
    {"grpmem", "GrpMEM", 7},
    {"grpcpumins", "GrpCPUMins", 11},
    {"maxjobs", "MaxJobs", 7},
    {"maxtres", "MaxTRES", 13},
    {"maxtresperjob", "MaxTRES", 13},
    {"maxtrespernode", "MaxTRESPerNode", 14},
    {"maxsubmit", "MaxSubmit", 9},
    {"maxsubmitjobs", "MaxSubmit", 9},
    {"maxwall", "MaxWall", 11},
    {"maxwalldurationperjob", "MaxWall", 11},
    {"maxtresmins", "MaxTRESMins", 13},
    {"maxtresminsperjob", "MaxTRESMins", 13},
    {"maxnodes", "MaxNodes", 8},
    {"maxcpus", "MaxCPUs", 8},
    {"maxcpumins", "MaxCPUMins", 11},
    {"qos", "QOS", 20},
    {"defaultqos", "Def QOS", 9},
    {"id", "ID", 6},
    {"parentname", "Par Name", 10},
    {"parentid", "Par ID", 6},
    {"description", "Descr", 20},
    {"organization", "Org", 20},
    {"defaultaccount", "Def Acct", 10},
    {"adminlevel", "Admin", 9},
    {"coordinators", "Coord Accounts", 20},
    {"controlhost", "ControlHost", 15},
    {"controlport", "ControlPort", 12},
    {"rpc", "RPC", 5},
    {"tres", "TRES", 30},
    {"name", "Name", 10},
    {"gracetime", "GraceTime", 10},
    {"preempt", "Preempt", 10},
    {"preemptexempttime", "PreemptExemptTime", 19},
    {"preemptmode", "PreemptMode", 11},
    {"flags", "Flags", 40},
    {"usagethreshold", "UsageThres", 10},
    {"usagefactor", "UsageFactor", 11},
    {"maxtrespu", "MaxTRESPU", 13},
    {"maxtresperuser", "MaxTRESPU", 13},
    {"maxjobspu", "MaxJobsPU", 9},
    {"maxjobsperuser", "MaxJobsPU", 9},
    {"maxsubmitpu", "MaxSubmitPU", 11},
    {"maxsubmitjobspu", "MaxSubmitPU", 11},
    {"maxsubmitjobsperuser", "MaxSubmitPU", 11},
    {"maxtrespa", "MaxTRESPA", 13},
    {"maxjobspa", "MaxJobsPA", 9},
    {"maxjobsperaccount", "MaxJobsPA", 9},
    {"maxsubmitpa", "MaxSubmitPA", 11},
    {"maxsubmitjobspa", "MaxSubmitPA", 11},
    {"maxsubmitjobsperaccount", "MaxSubmitPA", 11},
    {"mintres", "MinTRES", 13},
    {"mintresperjob", "MinTRES", 13},
    {"type", "Type", 8},
    // events (sacctmgr show event)
    {"nodename", "NodeName", 15},
    {"timestart", "TimeStart", 19},
    {"timeend", "TimeEnd", 19},
    {"state", "State", 6},
    {"reason", "Reason", 30},
    {"duration", "Duration", 13},
    {"event", "Event", 7},
    {"cpus", "CPUs", 9},
};

// Short forms Slurm accepts that are not prefixes of the names above.
const std::map<std::string, std::string> kAliases = {
    {"acct", "account"},
    {"defqos", "defaultqos"},
    {"def qos", "defaultqos"},
    {"defacct", "defaultaccount"},
    {"def acct", "defaultaccount"},
    {"admin", "adminlevel"},
    {"descr", "description"},
    {"org", "organization"},
    {"grptresrunmin", "grptresrunmins"},
    {"usagethres", "usagethreshold"},
    {"qoslevel", "qos"},
};

const FieldDef* FindField(const std::string& name) {
  std::string l = fmt::Lower(name);
  if (auto it = kAliases.find(l); it != kAliases.end()) l = it->second;
  for (const auto& f : kFields) {
    if (l == f.key) return &f;
  }
  if (l.size() < 2) return nullptr;
  for (const auto& f : kFields) {  // Slurm takes abbreviations
    if (std::string_view(f.key).substr(0, l.size()) == l) return &f;
  }
  return nullptr;
}

std::string DefaultFormat(const std::string& entity, bool with_assoc, bool wolimits) {
  const std::string assoc_limits =
      "Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,GrpTRESMins,MaxJobs,MaxTRES,"
      "MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins";
  if (entity == "association")
    return wolimits ? "Cluster,Account,User,Partition"
                    : "Cluster,Account,User,Partition," + assoc_limits;
  if (entity == "account")
    return with_assoc ? "Account,Description,Organization,Cluster,ParentName,User,Share,"
                        "Priority,GrpJobs,GrpNodes,GrpCPUs,GrpMEM,GrpSubmit,GrpWall,GrpCPUMins,"
                        "MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,DefaultQOS"
                      : "Account,Description,Organization";
  if (entity == "user")
    return with_assoc ? "User,DefaultAccount,AdminLevel,Cluster,Account,Partition,Share,"
                        "Priority,MaxJobs,MaxNodes,MaxCPUs,MaxSubmit,MaxWall,MaxCPUMins,QOS,"
                        "DefaultQOS"
                      : "User,DefaultAccount,AdminLevel";
  if (entity == "cluster")
    return wolimits ? "Cluster,ControlHost,ControlPort,RPC"
                    : "Cluster,ControlHost,ControlPort,RPC,Share,GrpJobs,GrpTRES,GrpSubmit,"
                      "MaxJobs,MaxTRES,MaxSubmit,MaxWall,QOS,DefaultQOS";
  if (entity == "qos")
    return "Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags,UsageThres,"
           "UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,GrpWall,MaxTRES,"
           "MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU,MaxTRESPA,"
           "MaxJobsPA,MaxSubmitPA,MinTRES";
  if (entity == "tres") return "Type,Name,ID";
  if (entity == "event") return "Cluster,NodeName,TimeStart,TimeEnd,State,Reason,User";
  return "";
}

// One output line's sources.
struct Row {
  const pb::AcctCluster* cluster = nullptr;
  const pb::AcctAccount* account = nullptr;
  const pb::AcctUser* user = nullptr;
  const pb::AcctAssoc* assoc = nullptr;
  const pb::AcctQos* qos = nullptr;
  const pb::AcctEvent* event = nullptr;
  std::string tres;
  int tres_id = 0;
  int depth = 0;
};

// Event times as sacctmgr prints them: local ISO time; an open event ends "Unknown".
std::string EventTime(int64_t t) {
  if (t <= 0) return "Unknown";
  time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::string UserOf(uint32_t uid) {
  if (auto user = UserById(uid)) return user->name + "(" + std::to_string(uid) + ")";
  return std::to_string(uid);
}

std::string EventValue(const std::string& key, const pb::AcctEvent& e) {
  if (key == "cluster") return e.cluster();
  if (key == "nodename") return e.node_name();
  if (key == "timestart") return EventTime(e.time_start());
  if (key == "timeend") return EventTime(e.time_end());
  if (key == "state") return e.state();
  if (key == "reason") return e.reason();
  if (key == "user") return e.node_name().empty() ? "" : UserOf(e.reason_uid());
  if (key == "event") return e.node_name().empty() ? "Cluster" : "Node";
  if (key == "tres") return e.tres();
  if (key == "cpus") {
    for (const std::string& item : fmt::SplitList(e.tres(), ','))
      if (item.rfind("cpu=", 0) == 0) return item.substr(4);
    return "";
  }
  if (key == "duration") {
    int64_t end = e.time_end() > 0 ? e.time_end() : static_cast<int64_t>(::time(nullptr));
    int64_t secs = std::max<int64_t>(0, end - e.time_start());
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld",
                  static_cast<long long>(secs / 86400), static_cast<long long>(secs % 86400 / 3600),
                  static_cast<long long>(secs % 3600 / 60), static_cast<long long>(secs % 60));
    return buf;
  }
  return "";
}

std::string Num(const auto& has, int64_t v) { return has ? std::to_string(v) : ""; }

std::string SecondsText(int64_t secs) {
  char buf[64];
  int64_t d = secs / 86400, h = secs % 86400 / 3600, m = secs % 3600 / 60, s = secs % 60;
  if (d > 0) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d),
                  static_cast<long long>(h), static_cast<long long>(m), static_cast<long long>(s));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  }
  return buf;
}

// One TRES out of a TRES list ("cpu" of "cpu=4,mem=2G").
std::string TresItem(const std::string& list, const std::string& name) {
  for (const std::string& item : fmt::SplitList(list, ',')) {
    auto eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == name) return item.substr(eq + 1);
  }
  return "";
}

std::string Join(const auto& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + std::string(s);
  return out;
}

std::string Value(const std::string& key, const Row& r, bool tree) {
  if (r.event) return EventValue(key, *r.event);
  static const pb::AcctLimits kNone;
  const pb::AcctLimits& l = r.qos ? r.qos->limits() : r.assoc ? r.assoc->limits() : kNone;
  bool limits = r.qos || r.assoc;
  if (key == "cluster") return r.assoc ? r.assoc->cluster() : r.cluster ? r.cluster->name() : "";
  if (key == "account") {
    if (r.assoc)
      return tree ? std::string(static_cast<size_t>(r.depth), ' ') + r.assoc->account()
                  : r.assoc->account();
    return r.account ? r.account->name() : "";
  }
  if (key == "user") return r.assoc ? r.assoc->user() : r.user ? r.user->name() : "";
  if (key == "partition") return r.assoc ? r.assoc->partition() : "";
  if (key == "share" || key == "fairshare") {
    if (!r.assoc) return "";
    return r.assoc->shares() == kSharesParent ? "parent" : std::to_string(r.assoc->shares());
  }
  if (key == "priority") {
    if (r.qos) return std::to_string(r.qos->priority());
    return r.assoc && r.assoc->priority() >= 0 ? std::to_string(r.assoc->priority()) : "";
  }
  if (key == "id") {
    if (r.qos) return std::to_string(r.qos->id());
    if (r.assoc) return std::to_string(r.assoc->id());
    return r.tres_id ? std::to_string(r.tres_id) : "";
  }
  if (key == "parentname")
    return r.assoc && r.assoc->user().empty() ? r.assoc->parent_account() : "";
  if (key == "description")
    return r.qos ? r.qos->description() : r.account ? r.account->description() : "";
  if (key == "organization") return r.account ? r.account->organization() : "";
  if (key == "defaultaccount") return r.user ? r.user->default_account() : "";
  if (key == "adminlevel") return r.user ? r.user->admin_level() : "";
  if (key == "coordinators") return r.user ? Join(r.user->coordinator_of()) : "";
  if (key == "controlhost") return r.cluster ? r.cluster->control_host() : "";
  if (key == "controlport")
    return r.cluster && r.cluster->control_port() ? std::to_string(r.cluster->control_port()) : "";
  if (key == "rpc") return r.cluster ? r.cluster->rpc_version() : "";
  if (key == "tres") return r.cluster ? r.cluster->tres() : "";
  if (key == "type") return r.tres.substr(0, r.tres.find('/'));
  if (key == "name") {
    if (r.qos) return r.qos->name();
    auto slash = r.tres.find('/');
    return slash == std::string::npos ? "" : r.tres.substr(slash + 1);
  }
  if (key == "qos") return r.assoc ? Join(r.assoc->qos()) : "";
  if (key == "defaultqos") return r.assoc ? r.assoc->default_qos() : "";
  if (r.qos) {
    const pb::AcctQos& q = *r.qos;
    if (key == "gracetime") return SecondsText(q.grace_time_s());
    if (key == "preempt") return Join(q.preempt());
    if (key == "preemptexempttime")
      return q.preempt_exempt_time_s() > 0 ? SecondsText(q.preempt_exempt_time_s()) : "";
    if (key == "preemptmode") return q.preempt_mode().empty() ? "cluster" : q.preempt_mode();
    if (key == "flags") return Join(q.flags());
    if (key == "usagefactor" || key == "usagethreshold") {
      double v = key == "usagefactor" ? q.usage_factor() : q.usage_threshold();
      if (key == "usagethreshold" && v == 0) return "";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", v);
      return buf;
    }
  }
  if (!limits) return "";
  if (key == "grpjobs") return Num(l.has_grp_jobs(), l.grp_jobs());
  if (key == "grpsubmit" || key == "grpsubmitjobs")
    return Num(l.has_grp_submit_jobs(), l.grp_submit_jobs());
  if (key == "maxjobs" || key == "maxjobspu" || key == "maxjobsperuser")
    return Num(l.has_max_jobs(), l.max_jobs());
  if (key == "maxsubmit" || key == "maxsubmitjobs" || key == "maxsubmitpu" ||
      key == "maxsubmitjobspu" || key == "maxsubmitjobsperuser")
    return Num(l.has_max_submit_jobs(), l.max_submit_jobs());
  if (key == "maxjobspa" || key == "maxjobsperaccount")
    return Num(l.has_max_jobs_per_account(), l.max_jobs_per_account());
  if (key == "maxsubmitpa" || key == "maxsubmitjobspa" || key == "maxsubmitjobsperaccount")
    return Num(l.has_max_submit_jobs_per_account(), l.max_submit_jobs_per_account());
  if (key == "grptres") return l.grp_tres();
  if (key == "grptresmins") return l.grp_tres_mins();
  if (key == "grptresrunmins") return l.grp_tres_run_mins();
  if (key == "maxtres" || key == "maxtresperjob") return l.max_tres_per_job();
  if (key == "maxtrespernode") return l.max_tres_per_node();
  if (key == "maxtresmins" || key == "maxtresminsperjob") return l.max_tres_mins_per_job();
  if (key == "maxtrespu" || key == "maxtresperuser") return l.max_tres_per_user();
  if (key == "mintres" || key == "mintresperjob") return l.min_tres_per_job();
  if (key == "maxwall" || key == "maxwalldurationperjob")
    return l.has_max_wall_minutes() ? MinutesText(l.max_wall_minutes()) : "";
  if (key == "grpwall") return l.has_grp_wall_minutes() ? MinutesText(l.grp_wall_minutes()) : "";
  if (key == "grpnodes") return TresItem(l.grp_tres(), "node");
  if (key == "grpcpus") return TresItem(l.grp_tres(), "cpu");
  if (key == "grpmem") return TresItem(l.grp_tres(), "mem");
  if (key == "grpcpumins") return TresItem(l.grp_tres_mins(), "cpu");
  if (key == "maxnodes") return TresItem(l.max_tres_per_job(), "node");
  if (key == "maxcpus") return TresItem(l.max_tres_per_job(), "cpu");
  if (key == "maxcpumins") return TresItem(l.max_tres_mins_per_job(), "cpu");
  return "";
}

void Cell(std::string& out, const std::string& text, int width, bool header) {
  size_t w = static_cast<size_t>(width < 0 ? -width : width);
  std::string v = text;
  if (v.size() > w) v = header || w == 0 ? v.substr(0, w) : v.substr(0, w - 1) + "+";
  fmt::AppendField(out, v, static_cast<int>(w), width > 0);
  out += ' ';
}

// Depth of each association in its cluster's tree (root = 0; users one below their account).
int Depth(const pb::AcctShowResponse& resp, const pb::AcctAssoc& a) {
  std::map<std::string, std::string> parent;
  for (const auto& x : resp.assocs()) {
    if (x.cluster() == a.cluster() && x.user().empty()) parent[x.account()] = x.parent_account();
  }
  int depth = a.user().empty() ? 0 : 1;
  std::string cur = a.account();
  for (int i = 0; i < 64; ++i) {
    auto it = parent.find(cur);
    if (it == parent.end() || it->second.empty()) break;
    ++depth;
    cur = it->second;
  }
  return depth;
}

std::vector<Row> Rows(const std::string& entity, const pb::AcctShowResponse& resp) {
  std::vector<Row> rows;
  if (entity == "association") {
    for (const auto& a : resp.assocs()) {
      Row r;
      r.assoc = &a;
      r.depth = Depth(resp, a);
      rows.push_back(r);
    }
  } else if (entity == "user") {
    for (const auto& u : resp.users()) {
      bool any = false;
      for (const auto& a : resp.assocs()) {
        if (a.user() != u.name()) continue;
        Row r;
        r.user = &u;
        r.assoc = &a;
        rows.push_back(r);
        any = true;
      }
      if (!any) {
        Row r;
        r.user = &u;
        rows.push_back(r);
      }
    }
  } else if (entity == "account") {
    for (const auto& acct : resp.accounts()) {
      bool any = false;
      for (const auto& a : resp.assocs()) {
        if (a.account() != acct.name()) continue;
        Row r;
        r.account = &acct;
        r.assoc = &a;
        rows.push_back(r);
        any = true;
      }
      if (!any) {
        Row r;
        r.account = &acct;
        rows.push_back(r);
      }
    }
  } else if (entity == "cluster") {
    for (const auto& c : resp.clusters()) {
      Row r;
      r.cluster = &c;
      for (const auto& a : resp.assocs()) {
        if (a.cluster() == c.name() && a.account() == "root" && a.user().empty()) r.assoc = &a;
      }
      rows.push_back(r);
    }
  } else if (entity == "qos") {
    for (const auto& q : resp.qos()) {
      Row r;
      r.qos = &q;
      rows.push_back(r);
    }
  } else if (entity == "event") {
    for (const auto& e : resp.events()) {
      Row r;
      r.event = &e;
      rows.push_back(r);
    }
  } else if (entity == "tres") {
    static const char* kStd[] = {"cpu",     "mem",     "energy", "node",
                                 "billing", "fs/disk", "vmem",   "pages"};
    int next = 1001;
    for (const auto& t : resp.tres()) {
      Row r;
      r.tres = t;
      for (int i = 0; i < 8; ++i) {
        if (t == kStd[i]) r.tres_id = i + 1;
      }
      if (!r.tres_id) r.tres_id = next++;
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace

std::string MinutesText(uint64_t minutes) {
  return SecondsText(static_cast<int64_t>(minutes) * 60);
}

Result<std::vector<Column>> ResolveColumns(const std::string& entity,
                                           const std::vector<std::string>& format, bool with_assoc,
                                           bool tree, bool wolimits) {
  std::vector<std::string> specs = format;
  if (specs.empty()) specs = fmt::SplitList(DefaultFormat(entity, with_assoc, wolimits), ',');
  std::vector<Column> out;
  for (const std::string& spec : specs) {
    std::string name = spec;
    std::optional<int> width;
    if (auto pct = spec.find('%'); pct != std::string::npos) {
      name = spec.substr(0, pct);
      std::string w = spec.substr(pct + 1);
      char* end = nullptr;
      long v = std::strtol(w.c_str(), &end, 10);
      if (!w.empty() && *end == '\0' && v != 0 && v > -1000 && v < 1000)
        width = static_cast<int>(v);
    }
    const FieldDef* f = FindField(name);
    if (!f) return InvalidArgument("Unknown field '" + name + "'");
    Column c{f->key, f->header, f->width};
    if (entity == "tres" && c.key == "name") c.width = 15;
    if (tree && c.key == "account") c.width = -20;  // indented names read left to right
    if (width) c.width = *width;
    out.push_back(std::move(c));
  }
  return out;
}

std::string RenderShow(const std::string& entity, const pb::AcctShowResponse& resp,
                       const std::vector<Column>& columns, const RenderOptions& opts) {
  std::string out;
  auto parsable_line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      out += cells[i];
      if (opts.parsable == 1 || i + 1 < cells.size()) out += '|';
    }
    out += '\n';
  };
  if (!opts.noheader) {
    if (opts.parsable) {
      std::vector<std::string> h;
      for (const auto& c : columns) h.push_back(c.header);
      parsable_line(h);
    } else {
      for (const auto& c : columns) Cell(out, c.header, c.width, true);
      out += '\n';
      for (const auto& c : columns) {
        out += std::string(static_cast<size_t>(c.width < 0 ? -c.width : c.width), '-');
        out += ' ';
      }
      out += '\n';
    }
  }
  for (const Row& r : Rows(entity, resp)) {
    if (opts.parsable) {
      std::vector<std::string> cells;
      for (const auto& c : columns) cells.push_back(Value(c.key, r, opts.tree));
      parsable_line(cells);
      continue;
    }
    for (const auto& c : columns) Cell(out, Value(c.key, r, opts.tree), c.width, false);
    out += '\n';
  }
  return out;
}

}  // namespace shoal::cli::sacctmgr
