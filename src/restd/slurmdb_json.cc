#include "restd/slurmdb_json.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>

#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"
#include "restd/json_common.h"

namespace shoal::restd::slurmdb {
namespace {

constexpr const char* kStdTres[] = {"cpu",     "mem",     "energy", "node",
                                    "billing", "fs/disk", "vmem",   "pages"};

// Slurm's fixed TRES ids; GRES and others after 1000 (gres/gpu is 1001 on a fresh database).
int TresId(const std::string& name) {
  for (int i = 0; i < 8; ++i)
    if (name == kStdTres[i]) return i + 1;
  if (name == "gres/gpu") return 1001;
  return 1002;
}

json TresItem(const std::string& name, int64_t count, int id) {
  std::string type = name, sub;
  if (auto slash = name.find('/'); slash != std::string::npos) {
    type = name.substr(0, slash);
    sub = name.substr(slash + 1);
  }
  return json{{"type", type}, {"name", sub}, {"id", id}, {"count", count}};
}

// "1G" -> 1024 (MB), "512M" -> 512, "2T", "100K"; plain numbers are MB.
int64_t MemMb(const std::string& v) {
  if (v.empty()) return 0;
  char* end = nullptr;
  double n = std::strtod(v.c_str(), &end);
  switch (end && *end ? std::toupper(static_cast<unsigned char>(*end)) : 'M') {
    case 'K':
      return static_cast<int64_t>(n / 1024);
    case 'G':
      return static_cast<int64_t>(n * 1024);
    case 'T':
      return static_cast<int64_t>(n * 1024 * 1024);
    default:
      return static_cast<int64_t>(n);
  }
}

json Seconds(uint64_t usec) {
  return json{{"seconds", static_cast<int64_t>(usec / 1000000)},
              {"microseconds", static_cast<int64_t>(usec % 1000000)}};
}

std::string StepIdText(uint32_t job_id, uint32_t step_id) {
  std::string s = std::to_string(job_id) + ".";
  if (step_id == kBatchStepId) return s + "batch";
  if (step_id == kExternStepId) return s + "extern";
  if (step_id == kInteractiveStepId) return s + "interactive";
  return s + std::to_string(step_id);
}

std::vector<const pb::AcctAssoc*> AssocsWhere(const pb::AcctShowResponse& show,
                                              const std::function<bool(const pb::AcctAssoc&)>& f) {
  std::vector<const pb::AcctAssoc*> out;
  for (const auto& a : show.assocs())
    if (f(a)) out.push_back(&a);
  return out;
}

// Unset (no limit) when absent; otherwise the number.
template <typename Opt>
json Limit(bool has, Opt v) {
  return has ? NoVal(static_cast<int64_t>(v)) : NoValUnset();
}

std::string QosFlagName(const std::string& flag) {
  static const std::map<std::string, std::string> kNames = {
      {"denyonlimit", "DENY_LIMIT"},
      {"enforceusagethreshold", "ENFORCE_USAGE_THRESHOLD"},
      {"nodecay", "NO_DECAY"},
      {"noreserve", "NO_RESERVE"},
      {"overpartqos", "OVERRIDE_PARTITION_QOS"},
      {"partitionmaxnodes", "PARTITION_MAXIMUM_NODE"},
      {"partitionminnodes", "PARTITION_MINIMUM_NODE"},
      {"partitiontimelimit", "PARTITION_TIME_LIMIT"},
      {"partitionqos", "PARTITION_QOS"},
      {"requiresreservation", "REQUIRED_RESERVATION"},
      {"usagefactorsafe", "USAGE_FACTOR_SAFE"},
      {"relative", "RELATIVE"},
  };
  std::string lower = flag;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto it = kNames.find(lower);
  return it == kNames.end() ? "" : it->second;
}

std::string PreemptModeName(const std::string& mode) {
  std::string m = mode;
  std::transform(m.begin(), m.end(), m.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (m == "SUSPEND" || m == "REQUEUE" || m == "CANCEL" || m == "GANG") return m;
  return "DISABLED";  // "cluster" (the cluster's PreemptMode) and "off"
}

}  // namespace

json TresList(const std::string& spec) {
  json out = json::array();
  size_t i = 0;
  while (i < spec.size()) {
    size_t j = spec.find(',', i);
    if (j == std::string::npos) j = spec.size();
    std::string item = spec.substr(i, j - i);
    i = j + 1;
    auto eq = item.find('=');
    if (item.empty() || eq == std::string::npos) continue;
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    int64_t count = name == "mem" ? MemMb(value) : std::strtoll(value.c_str(), nullptr, 10);
    out.push_back(TresItem(name, count, TresId(name)));
  }
  return out;
}

json TresCatalog(const google::protobuf::RepeatedPtrField<std::string>& names) {
  // Same numbering as `sacctmgr show tres`: the standard ones by their fixed ids, the rest
  // from 1001 in the order listed.
  json out = json::array();
  int next = 1001;
  for (const auto& n : names) {
    int id = 0;
    for (int i = 0; i < 8; ++i)
      if (n == kStdTres[i]) id = i + 1;
    if (!id) id = next++;
    json item = TresItem(n, 0, id);
    item.erase("count");
    out.push_back(std::move(item));
  }
  return out;
}

json ExitCode(int32_t wait_status, bool ended) {
  json out;
  json signal = {{"id", NoValUnset()}, {"name", ""}};
  if (!ended) {
    out["status"] = json::array({"PENDING"});
    out["return_code"] = NoValUnset();
  } else if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    out["status"] = json::array({WCOREDUMP(wait_status) ? "CORE_DUMPED" : "SIGNALED"});
    out["return_code"] = NoValUnset();
    const char* abbrev = sigabbrev_np(sig);
    signal = {{"id", NoVal(sig)}, {"name", abbrev ? std::string("SIG") + abbrev : ""}};
  } else {
    int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0;
    out["status"] = json::array({code == 0 ? "SUCCESS" : "ERROR"});
    out["return_code"] = NoVal(code);
  }
  out["signal"] = std::move(signal);
  return out;
}

json StepJson(const pb::AcctJob& job, const pb::AcctStep& step, int64_t now,
              const UidName& uid_name) {
  int64_t end = step.end_time() ? step.end_time() : now;
  int64_t elapsed = step.start_time() && end > step.start_time() ? end - step.start_time() : 0;
  json nodes_list = json::array();
  if (auto hosts = ExpandHostlist(step.nodelist()); hosts.ok())
    for (const auto& h : *hosts) nodes_list.push_back(h);
  json s;
  s["time"] = {{"elapsed", elapsed},
               {"end", NoValTime(step.end_time())},
               {"start", NoValTime(step.start_time())},
               {"suspended", step.suspended_s()},
               {"system", Seconds(step.sys_cpu_usec())},
               {"limit", NoValU32(job.time_limit())},
               {"total", Seconds(step.user_cpu_usec() + step.sys_cpu_usec())},
               {"user", Seconds(step.user_cpu_usec())}};
  s["exit_code"] = ExitCode(step.exit_status(), step.end_time() != 0);
  s["nodes"] = {{"count", step.nnodes()}, {"range", step.nodelist()}, {"list", nodes_list}};
  s["tasks"] = {{"count", step.ntasks()}};
  s["pid"] = "";
  s["kill_request_user"] =
      step.requid() != kNoUid && uid_name ? uid_name(step.requid()) : std::string();
  s["state"] = json::array({JobStateName(step.state())});
  s["step"] = {{"id", StepIdText(job.job_id(), step.step_id())}, {"name", step.name()}};
  // Peak memory (bytes) is the step's requested/max "mem", as sacct's MaxRSS comes from there.
  json max_rss = json::array();
  if (step.max_rss_kb())
    max_rss.push_back({{"type", "mem"},
                       {"name", ""},
                       {"id", 2},
                       {"count", static_cast<int64_t>(step.max_rss_kb() * 1024)}});
  s["tres"] = {{"allocated", TresList(step.tres_alloc())},
               {"requested",
                {{"max", max_rss},
                 {"min", json::array()},
                 {"average", json::array()},
                 {"total", json::array()}}}};
  return s;
}

json JobJson(const pb::AcctJob& job, int64_t now, const UidName& uid_name) {
  bool started = job.start_time() > 0;
  bool ended = job.end_time() > 0;
  int64_t elapsed = 0;
  if (started) elapsed = std::max<int64_t>(0, (ended ? job.end_time() : now) - job.start_time());
  uint64_t user_usec = 0, sys_usec = 0;
  for (const auto& st : job.steps()) {
    user_usec += st.user_cpu_usec();
    sys_usec += st.sys_cpu_usec();
  }
  json j;
  j["account"] = job.account();
  j["comment"] = {{"administrator", ""}, {"job", job.comment()}, {"system", ""}};
  j["allocation_nodes"] = job.alloc_nodes();
  bool array = job.array_task_id() != kNoArrayTask || !job.array_task_str().empty();
  j["array"] = {
      {"job_id", array ? job.array_job_id() : 0},
      {"limits", {{"max", {{"running", {{"tasks", job.array_max_tasks()}}}}}}},
      {"task_id", job.array_task_id() != kNoArrayTask ? NoVal(job.array_task_id()) : NoValUnset()},
      {"task", job.array_task_str()}};
  j["association"] = {{"account", job.account()},
                      {"cluster", job.cluster()},
                      {"partition", job.partition()},
                      {"user", job.user()},
                      {"id", 0}};
  j["cluster"] = job.cluster();
  j["constraints"] = job.constraints();
  j["derived_exit_code"] = ExitCode(job.derived_exit_status(), ended);
  j["time"] = {{"elapsed", elapsed},
               {"eligible", job.eligible_time()},
               {"end", job.end_time()},
               {"planned", NoValUnset()},
               {"start", job.start_time()},
               {"submission", job.submit_time()},
               {"suspended", job.suspended_s()},
               {"system", Seconds(sys_usec)},
               {"limit", NoValU32(job.time_limit())},
               {"total", Seconds(user_usec + sys_usec)},
               {"user", Seconds(user_usec)}};
  j["exit_code"] = ExitCode(job.exit_status(), ended);
  j["failed_node"] = "";
  j["flags"] = json::array();
  j["group"] = job.group();
  j["het"] = {{"job_id", 0}, {"job_offset", NoValUnset()}};
  j["job_id"] = job.job_id();
  j["name"] = job.name();
  j["mcs"] = {{"label", ""}};
  j["nodes"] = job.nodelist().empty() ? "None assigned" : job.nodelist();
  j["partition"] = job.partition();
  j["hold"] = job.state() == pb::JOB_PENDING && job.priority() == 0;
  j["priority"] = NoVal(job.priority());
  j["qos"] = job.qos();
  j["required"] = {
      {"CPUs", job.req_cpus()},
      {"memory_per_cpu",
       job.req_mem_per_cpu() ? NoVal(static_cast<int64_t>(job.req_mem_mb())) : NoValUnset()},
      {"memory_per_node",
       !job.req_mem_per_cpu() ? NoVal(static_cast<int64_t>(job.req_mem_mb())) : NoValUnset()}};
  j["kill_request_user"] =
      job.requid() != kNoUid && uid_name ? uid_name(job.requid()) : std::string();
  j["restart_cnt"] = job.restart_count();
  j["reservation"] = {{"id", 0}, {"name", job.reservation()}, {"requested", job.reservation()}};
  j["state"] = {{"current", json::array({JobStateName(job.state())})},
                {"reason", job.reason().empty() ? "None" : job.reason()}};
  json steps = json::array();
  for (const auto& st : job.steps()) steps.push_back(StepJson(job, st, now, uid_name));
  j["steps"] = std::move(steps);
  j["submit_line"] = job.submit_line();
  j["tres"] = {{"allocated", TresList(job.tres_alloc())}, {"requested", TresList(job.tres_req())}};
  j["used_gres"] = "";
  j["user"] = job.user();
  j["wckey"] = {{"wckey", job.wckey()}, {"flags", json::array()}};
  j["working_directory"] = job.work_dir();
  return j;
}

json AssocShort(const pb::AcctAssoc& a) {
  return json{{"account", a.account()},
              {"cluster", a.cluster()},
              {"partition", a.partition()},
              {"user", a.user()},
              {"id", a.id()}};
}

json AssocJson(const pb::AcctAssoc& a) {
  const pb::AcctLimits& l = a.limits();
  json j;
  j["accounting"] = json::array();
  j["account"] = a.account();
  j["cluster"] = a.cluster();
  j["comment"] = "";
  j["default"] = {{"qos", a.default_qos()}};
  j["flags"] = a.deleted() ? json::array({"DELETED"}) : json::array();
  j["max"] = {
      {"jobs",
       {{"per",
         {{"count", Limit(l.has_max_jobs(), l.max_jobs())},
          {"accruing", NoValUnset()},
          {"submitted", Limit(l.has_max_submit_jobs(), l.max_submit_jobs())},
          {"wall_clock", Limit(l.has_max_wall_minutes(), l.max_wall_minutes())}}},
        {"active", Limit(l.has_grp_jobs(), l.grp_jobs())},
        {"accruing", NoValUnset()},
        {"total", Limit(l.has_grp_submit_jobs(), l.grp_submit_jobs())}}},
      {"tres",
       {{"total", TresList(l.grp_tres())},
        {"group",
         {{"minutes", TresList(l.grp_tres_mins())}, {"active", TresList(l.grp_tres_run_mins())}}},
        {"minutes",
         {{"total", json::array()}, {"per", {{"job", TresList(l.max_tres_mins_per_job())}}}}},
        {"per",
         {{"job", TresList(l.max_tres_per_job())}, {"node", TresList(l.max_tres_per_node())}}}}},
      {"per",
       {{"account", {{"wall_clock", Limit(l.has_grp_wall_minutes(), l.grp_wall_minutes())}}}}}};
  j["id"] = a.id();
  j["is_default"] = a.is_default();
  j["lineage"] = "";
  j["min"] = {{"priority_threshold", NoValUnset()}};
  j["parent_account"] = a.parent_account();
  j["partition"] = a.partition();
  j["priority"] = a.priority() < 0 ? NoValUnset() : NoVal(a.priority());
  json qos = json::array();
  for (const auto& q : a.qos()) qos.push_back(q);
  j["qos"] = std::move(qos);
  j["shares_raw"] = a.shares();
  j["user"] = a.user();
  return j;
}

json AccountJson(const pb::AcctAccount& account, const pb::AcctShowResponse& show, bool with_assocs,
                 bool with_coords) {
  json j;
  j["name"] = account.name();
  j["description"] = account.description();
  j["organization"] = account.organization();
  json flags = json::array();
  if (account.deleted()) flags.push_back("DELETED");
  j["flags"] = std::move(flags);
  if (with_assocs) {
    json assocs = json::array();
    for (const auto* a :
         AssocsWhere(show, [&](const pb::AcctAssoc& x) { return x.account() == account.name(); }))
      assocs.push_back(AssocShort(*a));
    j["associations"] = std::move(assocs);
  }
  if (with_coords) {
    json coords = json::array();
    for (const auto& u : show.users())
      for (const auto& c : u.coordinator_of())
        if (c == account.name()) coords.push_back({{"name", u.name()}, {"direct", true}});
    j["coordinators"] = std::move(coords);
  }
  return j;
}

json UserJson(const pb::AcctUser& user, const pb::AcctShowResponse& show, bool with_assocs,
              bool with_coords) {
  json j;
  j["name"] = user.name();
  const std::string& level = user.admin_level();
  j["administrator_level"] =
      json::array({level == "Administrator" || level == "Operator" ? level : std::string("None")});
  j["default"] = {{"account", user.default_account()}, {"wckey", user.default_wckey()}};
  j["flags"] = user.deleted() ? json::array({"DELETED"}) : json::array({"NONE"});
  j["old_name"] = "";
  j["wckeys"] = json::array();
  if (with_assocs) {
    json assocs = json::array();
    for (const auto* a :
         AssocsWhere(show, [&](const pb::AcctAssoc& x) { return x.user() == user.name(); }))
      assocs.push_back(AssocShort(*a));
    j["associations"] = std::move(assocs);
  }
  if (with_coords) {
    json coords = json::array();
    for (const auto& c : user.coordinator_of()) coords.push_back({{"name", c}, {"direct", true}});
    j["coordinators"] = std::move(coords);
  }
  return j;
}

json QosJson(const pb::AcctQos& q) {
  const pb::AcctLimits& l = q.limits();
  json j;
  j["description"] = q.description();
  json flags = json::array();
  for (const auto& f : q.flags())
    if (std::string n = QosFlagName(f); !n.empty()) flags.push_back(n);
  if (q.deleted()) flags.push_back("DELETED");
  j["flags"] = std::move(flags);
  j["id"] = q.id();
  j["limits"] = {{"grace_time", q.grace_time_s()},
                 {"max",
                  {{"active_jobs",
                    {{"accruing", NoValUnset()}, {"count", Limit(l.has_grp_jobs(), l.grp_jobs())}}},
                   {"jobs",
                    {{"count", Limit(l.has_grp_submit_jobs(), l.grp_submit_jobs())},
                     {"active_jobs",
                      {{"per",
                        {{"account", Limit(l.has_max_jobs_per_account(), l.max_jobs_per_account())},
                         {"user", Limit(l.has_max_jobs(), l.max_jobs())}}}}},
                     {"per",
                      {{"account", Limit(l.has_max_submit_jobs_per_account(),
                                         l.max_submit_jobs_per_account())},
                       {"user", Limit(l.has_max_submit_jobs(), l.max_submit_jobs())}}}}},
                   {"tres",
                    {{"total", TresList(l.grp_tres())},
                     {"minutes",
                      {{"total", TresList(l.grp_tres_mins())},
                       {"per",
                        {{"qos", json::array()},
                         {"job", TresList(l.max_tres_mins_per_job())},
                         {"account", json::array()},
                         {"user", json::array()}}}}},
                     {"per",
                      {{"account", json::array()},
                       {"job", TresList(l.max_tres_per_job())},
                       {"node", TresList(l.max_tres_per_node())},
                       {"user", TresList(l.max_tres_per_user())}}}}},
                   {"wall_clock",
                    {{"per",
                      {{"qos", Limit(l.has_grp_wall_minutes(), l.grp_wall_minutes())},
                       {"job", Limit(l.has_max_wall_minutes(), l.max_wall_minutes())}}}}},
                   {"accruing", {{"per", {{"account", NoValUnset()}, {"user", NoValUnset()}}}}}}},
                 {"factor", NoValUnset()},
                 {"min",
                  {{"priority_threshold", NoValUnset()},
                   {"tres", {{"per", {{"job", TresList(l.min_tres_per_job())}}}}}}}};
  j["name"] = q.name();
  json preempt = json::array();
  for (const auto& p : q.preempt()) preempt.push_back(p);
  j["preempt"] = {{"list", std::move(preempt)},
                  {"mode", json::array({PreemptModeName(q.preempt_mode())})},
                  {"exempt_time", q.preempt_exempt_time_s() > 0 ? NoVal(q.preempt_exempt_time_s())
                                                                : NoValUnset()}};
  j["priority"] = NoVal(q.priority());
  j["usage_factor"] = NoValDouble(q.usage_factor());
  j["usage_threshold"] = q.usage_threshold() > 0
                             ? NoValDouble(q.usage_threshold())
                             : json{{"set", false}, {"infinite", false}, {"number", 0.0}};
  return j;
}

json ClusterJson(const pb::AcctCluster& c) {
  json j;
  j["controller"] = {{"host", c.control_host()}, {"port", c.control_port()}};
  j["flags"] = c.deleted() ? json::array({"DELETED"}) : json::array();
  j["name"] = c.name();
  j["nodes"] = "";
  j["select_plugin"] = "";
  j["associations"] = {
      {"root", {{"account", "root"}, {"cluster", c.name()}, {"partition", ""}, {"user", ""}}}};
  j["rpc_version"] = std::strtol(c.rpc_version().c_str(), nullptr, 10);
  j["tres"] = TresList(c.tres());
  return j;
}

// ---- query parameters -------------------------------------------------------------------------

bool FlagOn(const std::map<std::string, std::string>& query, const std::string& key) {
  auto it = query.find(key);
  if (it == query.end()) return false;
  std::string v = it->second;
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v.empty() || v == "true" || v == "1" || v == "yes" || v == "on";
}

namespace {

std::vector<std::string> Csv(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

Result<int64_t> ParseTime(const std::string& key, const std::string& v) {
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0)
    return InvalidArgument("Invalid " + key + ": " + v + " (expected unix seconds)");
  return static_cast<int64_t>(n);
}

}  // namespace

Result<pb::AcctJobQuery> JobQueryFromParams(const std::map<std::string, std::string>& query,
                                            const std::string& cluster) {
  pb::AcctJobQuery q;
  q.set_include_steps(!FlagOn(query, "skip_steps"));
  q.set_duplicates(FlagOn(query, "show_duplicates"));
  for (const auto& [key, value] : query) {
    auto items = Csv(value);
    auto add = [&](auto* field) {
      for (const auto& i : items) field->Add(std::string(i));
    };
    if (key == "account") {
      add(q.mutable_accounts());
    } else if (key == "cluster") {
      add(q.mutable_clusters());
    } else if (key == "users") {
      add(q.mutable_users());
    } else if (key == "partition") {
      add(q.mutable_partitions());
    } else if (key == "qos") {
      add(q.mutable_qos());
    } else if (key == "job_name") {
      add(q.mutable_names());
    } else if (key == "node") {
      add(q.mutable_nodes());
    } else if (key == "reason") {
      add(q.mutable_reasons());
    } else if (key == "step") {
      for (const auto& i : items) {
        q.add_job_id_texts(i);
        uint32_t id = static_cast<uint32_t>(std::strtoul(i.c_str(), nullptr, 10));
        if (id) q.add_job_ids(id);
      }
    } else if (key == "state") {
      for (const auto& i : items) {
        auto st = ParseJobState(i);
        if (!st) return InvalidArgument("Invalid job state: " + i);
        q.add_states(*st);
      }
    } else if (key == "start_time" || key == "end_time") {
      auto t = ParseTime(key, value);
      if (!t) return t.status();
      if (key == "start_time")
        q.set_start(*t);
      else
        q.set_end(*t);
    }
  }
  if (q.clusters_size() == 0 && !cluster.empty()) q.add_clusters(cluster);
  q.set_by_state_window(q.states_size() > 0 && q.start() > 0);
  return q;
}

Result<pb::AcctShowRequest> ShowFromParams(const std::string& entity,
                                           const std::map<std::string, std::string>& query) {
  pb::AcctShowRequest req;
  req.set_entity(entity);
  // Filters sacctmgr knows under the same meaning; the rest of slurmrestd's flags only shape
  // the answer (with_assocs, with_coords) or do not apply.
  static const std::map<std::string, std::map<std::string, std::string>> kKeys = {
      {"account", {{"description", "description"}}},
      {"user", {{"admin_level", "adminlevel"}, {"default_account", "defaultaccount"}}},
      {"association",
       {{"account", "account"},
        {"cluster", "cluster"},
        {"user", "user"},
        {"partition", "partition"},
        {"parent_account", "parent"},
        {"id", "id"}}},
      {"qos", {{"name", "name"}, {"id", "id"}, {"description", "description"}}},
  };
  auto keys = kKeys.find(entity);
  for (const auto& [key, value] : query) {
    if (keys == kKeys.end()) break;
    auto k = keys->second.find(key);
    if (k == keys->second.end() || value.empty()) continue;
    pb::AcctKeyValue* kv = req.add_where();
    kv->set_key(k->second);
    kv->set_value(value);
    kv->set_op("=");
  }
  if (FlagOn(query, "with_deleted") || FlagOn(query, "DELETED") ||
      FlagOn(query, "Include deleted associations") || FlagOn(query, "Include deleted QOS"))
    req.set_with_deleted(true);
  if (FlagOn(query, "with_assocs") || FlagOn(query, "WithAssociations")) req.set_with_assoc(true);
  if (FlagOn(query, "Filter to only defaults")) {
    pb::AcctKeyValue* kv = req.add_where();
    kv->set_key("onlydefaults");
    kv->set_op("=");
  }
  return req;
}

// ---- POST bodies ------------------------------------------------------------------------------

namespace {

void Set(pb::AcctAdminRequest* r, const std::string& key, const std::string& value) {
  pb::AcctKeyValue* kv = r->add_set();
  kv->set_key(key);
  kv->set_value(value);
  kv->set_op("=");
}

const json* ArrayAt(const json& body, const char* key) {
  if (!body.is_object()) return nullptr;
  auto it = body.find(key);
  if (it == body.end() || !it->is_array()) return nullptr;
  return &*it;
}

}  // namespace

Result<std::vector<pb::AcctAdminRequest>> AddRequestsFromBody(const std::string& entity,
                                                              const json& body) {
  static const std::map<std::string, const char*> kListKey = {
      {"account", "accounts"}, {"user", "users"}, {"association", "associations"}, {"qos", "qos"}};
  auto lk = kListKey.find(entity);
  if (lk == kListKey.end()) return InvalidArgument("unsupported entity " + entity);
  const json* list = ArrayAt(body, lk->second);
  if (!list) return InvalidArgument(std::string("expected an array in \"") + lk->second + "\"");
  std::vector<pb::AcctAdminRequest> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string where = std::string(lk->second) + "[" + std::to_string(i) + "]";
    bool bad = false;
    auto str = [&](const char* key) { return ReadString(item, key, &bad).value_or(""); };
    pb::AcctAdminRequest r;
    r.set_verb(pb::AcctAdminRequest::ADD);
    if (entity == "account") {
      std::string name = str("name");
      if (name.empty()) return InvalidArgument(where + ": missing name");
      r.set_entity("account");
      r.add_names(name);
      if (auto d = str("description"); !d.empty()) Set(&r, "description", d);
      if (auto o = str("organization"); !o.empty()) Set(&r, "organization", o);
    } else if (entity == "user") {
      std::string name = str("name");
      if (name.empty()) return InvalidArgument(where + ": missing name");
      r.set_entity("user");
      r.add_names(name);
      if (item.contains("default") && item["default"].is_object()) {
        bool b = false;
        if (auto a = ReadString(item["default"], "account", &b); a && !a->empty()) {
          Set(&r, "defaultaccount", *a);
          Set(&r, "account", *a);
        }
      }
      if (auto lv = ReadStringOrList(item, "administrator_level", &bad); lv && !lv->empty())
        Set(&r, "adminlevel", *lv);
    } else if (entity == "association") {
      std::string account = str("account"), user = str("user");
      if (account.empty()) return InvalidArgument(where + ": missing account");
      if (user.empty()) {
        r.set_entity("account");
        r.add_names(account);
        if (auto p = str("parent_account"); !p.empty()) Set(&r, "parent", p);
      } else {
        r.set_entity("user");
        r.add_names(user);
        Set(&r, "account", account);
      }
      if (auto c = str("cluster"); !c.empty()) Set(&r, "cluster", c);
      if (auto p = str("partition"); !p.empty()) Set(&r, "partition", p);
      if (auto s = ReadInt(item, "shares_raw", &bad); s) Set(&r, "fairshare", std::to_string(*s));
    } else {
      std::string name = str("name");
      if (name.empty()) return InvalidArgument(where + ": missing name");
      r.set_entity("qos");
      r.add_names(name);
      if (auto d = str("description"); !d.empty()) Set(&r, "description", d);
      if (auto p = ReadInt(item, "priority", &bad); p) Set(&r, "priority", std::to_string(*p));
    }
    if (bad) return InvalidArgument(where + ": a field has the wrong type");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace shoal::restd::slurmdb
