#include "restd/json_jobs.h"

#include <sys/wait.h>

#include <algorithm>

#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"
#include "restd/json_writer.h"

namespace shoal::restd {
namespace {

// The enum values of v0.0.44 mail_type.
json MailTypes(const std::string& spec) {
  static const std::vector<std::string> kAll = {"BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT"};
  static const std::vector<std::string> kKnown = {
      "BEGIN",    "END",      "FAIL",      "REQUEUE",     "TIME=100%",         "TIME=90%",
      "TIME=80%", "TIME=50%", "STAGE_OUT", "ARRAY_TASKS", "INVALID_DEPENDENCY"};
  json out = json::array();
  std::string s;
  for (char c : spec) s.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  for (const auto& item : CsvList(s)) {
    std::string v = item.get<std::string>();
    if (v == "ALL") {
      for (const auto& a : kAll) out.push_back(a);
    } else if (v == "TIME_LIMIT") {
      out.push_back("TIME=100%");
    } else if (v.rfind("TIME_LIMIT_", 0) == 0) {
      out.push_back("TIME=" + v.substr(11) + "%");
    } else if (std::find(kKnown.begin(), kKnown.end(), v) != kKnown.end()) {
      out.push_back(v);
    }
  }
  return out;
}

json ExitCode(int32_t status, bool pending) {
  json sig = {{"id", NoValUnset()}, {"name", ""}};
  json out;
  if (pending) {
    out["status"] = json::array({"PENDING"});
    out["return_code"] = NoValUnset();
  } else if (WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    out["status"] = json::array({WCOREDUMP(status) ? "CORE_DUMPED" : "SIGNALED"});
    out["return_code"] = NoValUnset();
    sig = {{"id", NoVal(s)}, {"name", SignalName(s)}};
  } else {
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    out["status"] = json::array({rc == 0 ? "SUCCESS" : "ERROR"});
    out["return_code"] = NoVal(rc);
  }
  out["signal"] = sig;
  return out;
}

json SharedArray(const pb::JobSpec& spec) {
  json out = json::array();
  if (spec.exclusive()) {
    const std::string& m = spec.exclusive_mode();
    if (m == "user" || m == "mcs" || m == "topo")
      out.push_back(m);
    else
      out.push_back("none");
  } else if (spec.oversubscribe()) {
    out.push_back("oversubscribe");
  }
  return out;
}

json JobResources(const pb::JobRecord& job) {
  json alloc = json::array();
  uint32_t cpus = 0;
  for (int i = 0; i < job.nodes_size(); ++i) {
    uint32_t c = i < job.cpus_per_node_size() ? job.cpus_per_node(i) : 0;
    uint64_t mem = i < job.mem_alloc_mb_size() ? job.mem_alloc_mb(i) : job.mem_per_node_mb();
    cpus += c;
    alloc.push_back({{"index", i},
                     {"name", job.nodes(i)},
                     {"cpus", {{"count", c}, {"used", c}}},
                     {"memory", {{"used", mem}, {"allocated", mem}}},
                     {"sockets", json::array()}});
  }
  std::vector<std::string> nodes(job.nodes().begin(), job.nodes().end());
  return {{"select_type", json::array({"CPU", "MEMORY"})},
          {"nodes",
           {{"count", job.nodes_size()},
            {"select_type", json::array({"AVAILABLE"})},
            {"list", CompressHostlist(nodes)},
            {"whole", job.spec().exclusive()},
            {"allocation", alloc}}},
          {"cpus", cpus},
          {"threads_per_core", NoValUnset()}};
}

}  // namespace

json JobStateArray(const pb::JobRecord& job) {
  json out = json::array({JobStateName(job.state())});
  if (job.held() && job.state() == pb::JOB_PENDING && job.held_by_admin() &&
      job.reason() == "JobHeldAdmin" && job.restart_count() > 0)
    out.push_back("REQUEUE_HOLD");
  if (job.prolog_pending_nodes_size() > 0) out.push_back("CONFIGURING");
  if (job.completing()) out.push_back("COMPLETING");
  return out;
}

std::string JobJsonText(const pb::JobRecord& job, const std::string& cluster) {
  const pb::JobSpec& s = job.spec();
  bool pending = job.state() == pb::JOB_PENDING;
  bool array_task = job.array_task_id() != kNoArrayTask;
  std::vector<std::string> nodes(job.nodes().begin(), job.nodes().end());
  std::string text;
  text.reserve(4096);
  JsonObjectWriter w(&text);
  w.Field("account", s.account());
  w.Field("accrue_time", NV::Time(job.accrue_time()));
  w.Field("admin_comment", "");
  w.Field("allocating_node", s.submit_host());
  w.Field("array_job_id", array_task ? NV::Set(job.array_job_id()) : NV::Set(0));
  w.Field("array_task_id", array_task ? NV::Set(job.array_task_id()) : NV::Unset());
  w.Field("array_max_tasks", NV::Set(0));
  w.Field("array_task_string", (array_task || s.array().empty()) ? "" : s.array());
  w.Field("association_id", 0);
  w.Field("batch_features", "");
  w.Field("batch_flag", !s.interactive());
  w.Field("batch_host", job.batch_host());
  w.Field("flags", json::array());
  w.Field("burst_buffer", "");
  w.Field("burst_buffer_state", "");
  w.Field("cluster", cluster);
  w.Field("cluster_features", s.cluster_features());
  w.Field("command", s.command());
  w.Field("comment", s.comment());
  w.Field("container", s.container());
  w.Field("container_id", "");
  w.Field("contiguous", false);
  w.Field("core_spec", 0);
  w.Field("thread_spec", 0);
  w.Field("cores_per_socket", NV::Unset());
  w.Field("billable_tres", NV::Double(job.num_cpus()));
  w.Field("cpus_per_task", NV::Set(std::max<uint32_t>(s.cpus_per_task(), 1)));
  w.Field("cpu_frequency_minimum", NV::Unset());
  w.Field("cpu_frequency_maximum", NV::Unset());
  w.Field("cpu_frequency_governor", NV::Unset());
  w.Field("cpus_per_tres", "");
  w.Field("cron", "");
  w.Field("deadline", NV::Time(s.deadline()));
  w.Field("delay_boot", NV::Set(0));
  w.Field("dependency", s.dependency());
  w.Field("derived_exit_code", ExitCode(job.derived_exit_status(), pending));
  w.Field("eligible_time", NV::Time(job.eligible_time()));
  w.Field("end_time", NV::Time(job.end_time()));
  w.Field("excluded_nodes", s.exclude());
  w.Field("exit_code", ExitCode(job.exit_status(), pending));
  w.Field("extra", "");
  w.Field("failed_node", "");
  w.Field("features", s.constraint());
  w.Field("federation_origin", "");
  w.Field("federation_siblings_active", "");
  w.Field("federation_siblings_viable", "");
  w.Field("gres_detail", StringList({job.gres_alloc().begin(), job.gres_alloc().end()}));
  w.Field("group_id", s.gid());
  w.Field("group_name", "");
  w.Field("het_job_id", NV::Set(0));
  w.Field("het_job_id_set", "");
  w.Field("het_job_offset", NV::Set(0));
  w.Field("job_id", job.job_id());
  w.Field("job_size_str", json::array());
  w.Field("job_state", JobStateArray(job));
  w.Field("last_sched_evaluation", NV::Time(job.last_sched_eval()));
  w.Field("licenses", s.licenses());
  w.Field("licenses_allocated", pending ? "" : s.licenses());
  w.Field("mail_type", MailTypes(s.mail_type()));
  w.Field("mail_user", s.mail_user());
  w.Field("max_cpus", NV::Set(0));
  w.Field("max_nodes", NV::Set(s.max_nodes()));
  w.Field("mcs_label", "");
  w.Field("memory_per_tres", "");
  w.Field("name", s.name());
  w.Field("network", "");
  w.Field("nodes", CompressHostlist(nodes));
  w.Field("nice", s.nice());
  w.Field("tasks_per_core", NV::Unset());
  w.Field("tasks_per_tres", NV::Set(0));
  w.Field("tasks_per_node", s.ntasks_per_node() ? NV::Set(s.ntasks_per_node()) : NV::Unset());
  w.Field("tasks_per_socket", NV::Unset());
  w.Field("tasks_per_board", NV::Set(0));
  w.Field("cpus", NV::Set(job.num_cpus()));
  w.Field("node_count", NV::Set(job.num_nodes()));
  w.Field("tasks", NV::Set(job.num_tasks()));
  w.Field("partition", job.partition().empty() ? s.partition() : job.partition());
  w.Field("prefer", "");
  w.Field("memory_per_cpu", s.mem_per_cpu_mb() ? NV::Set(s.mem_per_cpu_mb()) : NV::Unset());
  w.Field("memory_per_node", s.mem_per_node_mb() ? NV::Set(s.mem_per_node_mb())
                             : job.mem_per_node_mb() && !s.mem_per_cpu_mb()
                                 ? NV::Set(job.mem_per_node_mb())
                                 : NV::Unset());
  w.Field("minimum_cpus_per_node", NV::Set(s.min_cpus_per_node()));
  w.Field("minimum_tmp_disk_per_node", NV::Set(0));
  w.Field("power", json{{"flags", json::array()}});
  w.Field("preempt_time", NV::Time(job.preempt_time()));
  w.Field("preemptable_time", NV::Set(0));
  w.Field("pre_sus_time", NV::Set(0));
  w.Field("hold", job.held());
  w.Field("priority", NV::Set(job.priority()));
  w.Field("priority_by_partition", json::array());
  w.Field("profile", json::array({"NOT_SET"}));
  w.Field("qos", s.qos());
  w.Field("reboot", false);
  w.Field("required_nodes", s.nodelist());
  w.Field("required_switches", s.switches());
  w.Field("requeue", job.requeue());
  w.Field("resize_time", NV::Set(0));
  w.Field("restart_cnt", job.restart_count());
  w.Field("resv_name", job.reservation().empty() ? s.reservation() : job.reservation());
  w.Field("scheduled_nodes", job.sched_nodes());
  w.Field("segment_size", 0);
  w.Field("selinux_context", "");
  w.Field("shared", SharedArray(s));
  w.Field("sockets_per_board", 0);
  w.Field("sockets_per_node", NV::Unset());
  w.Field("start_time", pending ? NV::Time(job.expected_start()) : NV::Time(job.start_time()));
  w.Field("state_description", job.state_desc());
  w.Field("state_reason", job.reason().empty() ? "None" : job.reason());
  w.Field("standard_input", s.std_in().empty() ? "/dev/null" : s.std_in());
  w.Field("standard_output", s.std_out());
  w.Field("standard_error", s.std_err());
  w.Field("stdin_expanded", "");
  w.Field("stdout_expanded", "");
  w.Field("stderr_expanded", "");
  w.Field("submit_time", NV::Time(job.submit_time()));
  w.Field("submit_line", "");
  w.Field("suspend_time", NV::Time(job.suspend_time()));
  w.Field("system_comment", "");
  w.Field("time_limit", NV::U32(job.time_limit()));
  w.Field("time_minimum", s.time_min() == kTimeNoVal ? NV::Set(0) : NV::U32(s.time_min()));
  w.Field("threads_per_core", NV::Unset());
  w.Field("tres_bind", "");
  w.Field("tres_freq", "");
  w.Field("tres_per_job", s.gpus().empty() ? "" : "gres/gpu:" + s.gpus());
  w.Field("tres_per_node", s.gres().empty() ? "" : "gres/" + s.gres());
  w.Field("tres_per_socket", "");
  w.Field("tres_per_task", s.gpus_per_task().empty() ? "" : "gres/gpu:" + s.gpus_per_task());
  w.Field("tres_req_str",
          "cpu=" + std::to_string(job.num_cpus()) + ",node=" + std::to_string(job.num_nodes()));
  w.Field("tres_alloc_str", pending ? ""
                                    : "cpu=" + std::to_string(job.num_cpus()) +
                                          ",node=" + std::to_string(job.num_nodes()));
  w.Field("user_id", s.uid());
  w.Field("user_name", s.user_name());
  w.Field("maximum_switch_wait_time", s.switches_wait_s() ? s.switches_wait_s() - 1 : 0);
  w.Field("wckey", s.wckey());
  w.Field("current_working_directory", s.work_dir());
  if (!pending && job.nodes_size() > 0) w.Field("job_resources", JobResources(job));
  w.Finish();
  return text;
}

json JobToJson(const pb::JobRecord& job, const std::string& cluster) {
  return json::parse(JobJsonText(job, cluster));
}

// --- job_desc_msg -> JobSpec --------------------------------------------------------------------

Result<pb::JobSpec> JobDescToSpec(const json& desc, const std::string& script, const Submitter& who,
                                  std::vector<std::string>* warnings) {
  if (!desc.is_object()) return InvalidArgument("job description must be an object");
  pb::JobSpec spec;
  spec.set_time_limit(kTimeNoVal);
  spec.set_time_min(kTimeNoVal);
  spec.set_requeue(-1);
  bool bad = false;
  std::string bad_field;
  auto check = [&](const char* key) {
    if (bad && bad_field.empty()) bad_field = key;
  };
#define STR(key, setter)                                     \
  if (auto v = ReadString(desc, key, &bad)) spec.setter(*v); \
  check(key)
#define LIST(key, setter)                                          \
  if (auto v = ReadStringOrList(desc, key, &bad)) spec.setter(*v); \
  check(key)
  STR("account", set_account);
  STR("array", set_array);
  STR("comment", set_comment);
  STR("constraints", set_constraint);
  STR("container", set_container);
  STR("dependency", set_dependency);
  LIST("excluded_nodes", set_exclude);
  STR("licenses", set_licenses);
  STR("mail_user", set_mail_user);
  STR("name", set_name);
  STR("partition", set_partition);
  STR("qos", set_qos);
  LIST("required_nodes", set_nodelist);
  STR("reservation", set_reservation);
  STR("standard_error", set_std_err);
  STR("standard_input", set_std_in);
  STR("standard_output", set_std_out);
  STR("wckey", set_wckey);
  STR("current_working_directory", set_work_dir);
  STR("cpu_binding", set_cpu_bind);
  STR("memory_binding", set_mem_bind);
  STR("cluster_constraint", set_cluster_features);
  STR("tres_per_task", set_gpus_per_task);
#undef STR
#undef LIST
  if (auto v = ReadStringOrList(desc, "mail_type", &bad)) spec.set_mail_type(*v);
  check("mail_type");
  if (auto v = ReadInt(desc, "time_limit", &bad, kTimeInfinite))
    spec.set_time_limit(static_cast<uint32_t>(*v));
  check("time_limit");
  if (auto v = ReadInt(desc, "time_minimum", &bad)) spec.set_time_min(static_cast<uint32_t>(*v));
  check("time_minimum");
  if (auto v = ReadInt(desc, "tasks", &bad)) spec.set_num_tasks(static_cast<uint32_t>(*v));
  check("tasks");
  if (auto v = ReadInt(desc, "cpus_per_task", &bad))
    spec.set_cpus_per_task(static_cast<uint32_t>(*v));
  check("cpus_per_task");
  if (auto v = ReadInt(desc, "tasks_per_node", &bad))
    spec.set_ntasks_per_node(static_cast<uint32_t>(*v));
  check("tasks_per_node");
  if (auto v = ReadInt(desc, "minimum_nodes", &bad)) spec.set_min_nodes(static_cast<uint32_t>(*v));
  check("minimum_nodes");
  if (auto v = ReadInt(desc, "maximum_nodes", &bad)) spec.set_max_nodes(static_cast<uint32_t>(*v));
  check("maximum_nodes");
  if (auto v = ReadString(desc, "nodes", &bad)) {
    // "N" or "min-max"
    auto dash = v->find('-');
    char* end = nullptr;
    unsigned long lo = std::strtoul(v->c_str(), &end, 10);
    if (end == v->c_str()) return InvalidArgument("Invalid node count specification: " + *v);
    spec.set_min_nodes(static_cast<uint32_t>(lo));
    if (dash != std::string::npos)
      spec.set_max_nodes(static_cast<uint32_t>(std::strtoul(v->c_str() + dash + 1, nullptr, 10)));
  }
  check("nodes");
  if (auto v = ReadInt(desc, "minimum_cpus_per_node", &bad))
    spec.set_min_cpus_per_node(static_cast<uint32_t>(*v));
  check("minimum_cpus_per_node");
  if (auto v = ReadInt(desc, "memory_per_node", &bad)) {
    spec.set_mem_per_node_mb(static_cast<uint64_t>(*v));
    if (*v == 0) spec.set_mem_whole_node(true);
  }
  check("memory_per_node");
  if (auto v = ReadInt(desc, "memory_per_cpu", &bad))
    spec.set_mem_per_cpu_mb(static_cast<uint64_t>(*v));
  check("memory_per_cpu");
  if (auto v = ReadInt(desc, "nice", &bad)) spec.set_nice(static_cast<int32_t>(*v));
  check("nice");
  if (auto v = ReadInt(desc, "begin_time", &bad)) spec.set_begin_time(*v);
  check("begin_time");
  if (auto v = ReadInt(desc, "deadline", &bad)) spec.set_deadline(*v);
  check("deadline");
  if (auto v = ReadBool(desc, "hold", &bad)) spec.set_hold(*v);
  check("hold");
  if (auto v = ReadBool(desc, "overcommit", &bad)) spec.set_overcommit(*v);
  check("overcommit");
  if (auto v = ReadBool(desc, "requeue", &bad)) spec.set_requeue(*v ? 1 : 0);
  check("requeue");
  if (auto v = ReadString(desc, "tres_per_node", &bad)) {
    // "gres/gpu:2" -> --gres=gpu:2
    std::string g = *v;
    std::string out;
    for (const auto& item : CsvList(g)) {
      std::string t = item.get<std::string>();
      if (t.rfind("gres/", 0) == 0) t = t.substr(5);
      if (!out.empty()) out.push_back(',');
      out += t;
    }
    spec.set_gres(out);
  }
  check("tres_per_node");
  if (auto v = ReadString(desc, "tres_per_job", &bad)) {
    std::string t = *v;
    if (t.rfind("gres/gpu:", 0) == 0)
      t = t.substr(9);
    else if (t.rfind("gres/gpu", 0) == 0)
      t = "1";
    spec.set_gpus(t);
  }
  check("tres_per_job");
  if (desc.contains("shared") && desc["shared"].is_array()) {
    for (const auto& s : desc["shared"]) {
      if (!s.is_string()) continue;
      std::string v = s.get<std::string>();
      if (v == "none")
        spec.set_exclusive(true);
      else if (v == "oversubscribe")
        spec.set_oversubscribe(true);
      else if (v == "user" || v == "mcs" || v == "topo") {
        spec.set_exclusive(true);
        spec.set_exclusive_mode(v);
      }
    }
  }
  if (desc.contains("open_mode") && desc["open_mode"].is_array()) {
    for (const auto& s : desc["open_mode"])
      if (s.is_string() && s.get<std::string>() == "APPEND") spec.set_open_mode_append(true);
  }
  if (desc.contains("argv")) {
    if (!desc["argv"].is_array()) return InvalidArgument("argv must be an array of strings");
    // argv[0] is the script name in slurmrestd's convention; the rest are its arguments.
    bool first = true;
    for (const auto& a : desc["argv"]) {
      if (!a.is_string()) return InvalidArgument("argv must be an array of strings");
      if (first) {
        first = false;
        continue;
      }
      spec.add_argv(a.get<std::string>());
    }
  }
  if (desc.contains("environment") && !desc["environment"].is_null()) {
    const json& env = desc["environment"];
    if (env.is_array()) {
      for (const auto& e : env) {
        if (!e.is_string()) return InvalidArgument("environment must be an array of strings");
        spec.add_environment(e.get<std::string>());
      }
    } else if (env.is_object()) {
      for (auto it = env.begin(); it != env.end(); ++it)
        if (it.value().is_string())
          spec.add_environment(it.key() + "=" + it.value().get<std::string>());
    } else {
      return InvalidArgument("environment must be an array of strings");
    }
  }
  if (!bad_field.empty()) return InvalidArgument("Invalid value for field \"" + bad_field + "\"");
  for (const char* unsupported : {"burst_buffer", "crontab", "x11", "network", "reboot"}) {
    if (desc.contains(unsupported) && !desc[unsupported].is_null())
      warnings->push_back(std::string("field \"") + unsupported +
                          "\" is not supported and was ignored");
  }

  std::string text = script;
  if (auto v = ReadString(desc, "script", &bad); v && !v->empty()) text = *v;
  spec.set_script(text);
  if (spec.name().empty()) spec.set_name("restd");
  if (spec.work_dir().empty()) return InvalidArgument("current_working_directory is required");
  spec.set_submit_dir(spec.work_dir());
  spec.set_uid(who.uid);
  spec.set_gid(who.gid);
  spec.set_user_name(who.user);
  return spec;
}

Result<pb::JobSpec> SubmitRequestToSpec(const json& body, const Submitter& who,
                                        std::vector<std::string>* warnings) {
  bool bad = false;
  std::string script = ReadString(body, "script", &bad).value_or("");
  const json* desc = nullptr;
  if (body.contains("job") && body["job"].is_object()) {
    desc = &body["job"];
  } else if (body.contains("jobs") && body["jobs"].is_array()) {
    if (body["jobs"].size() != 1 || !body["jobs"][0].is_object())
      return Error(ErrorCode::kNotSupported, "heterogeneous jobs are not supported");
    desc = &body["jobs"][0];
  }
  if (!desc) return InvalidArgument("Request is missing the \"job\" description");
  auto spec = JobDescToSpec(*desc, script, who, warnings);
  if (!spec) return spec;
  if (spec->script().empty()) return InvalidArgument("Batch job script is missing");
  if (spec->script().rfind("#!", 0) != 0)
    return InvalidArgument(
        "This does not look like a batch script.  The first line must start "
        "with #! followed by the path to an interpreter.");
  return spec;
}

Result<JobUpdate> JobDescToUpdate(const json& desc, std::vector<std::string>* warnings) {
  if (!desc.is_object()) return InvalidArgument("job description must be an object");
  JobUpdate u;
  bool bad = false;
  auto fail = [](const char* key) {
    return InvalidArgument(std::string("Invalid value for field \"") + key + "\"");
  };
  for (auto it = desc.begin(); it != desc.end(); ++it) {
    const std::string& key = it.key();
    if (it.value().is_null()) continue;
    if (key == "time_limit") {
      auto v = ReadInt(desc, "time_limit", &bad, kTimeInfinite);
      if (bad || !v) return fail("time_limit");
      u.fields["TimeLimit"] =
          static_cast<uint32_t>(*v) == kTimeInfinite ? "UNLIMITED" : std::to_string(*v);
    } else if (key == "name" || key == "comment" || key == "partition" || key == "dependency") {
      auto v = ReadString(desc, key.c_str(), &bad);
      if (bad || !v) return fail(key.c_str());
      static const std::map<std::string, std::string> kNames = {{"name", "Name"},
                                                                {"comment", "Comment"},
                                                                {"partition", "Partition"},
                                                                {"dependency", "Dependency"}};
      u.fields[kNames.at(key)] = *v;
    } else if (key == "nice" || key == "priority" || key == "minimum_nodes" ||
               key == "begin_time" || key == "deadline") {
      auto v = ReadInt(desc, key.c_str(), &bad);
      if (bad || !v) return fail(key.c_str());
      static const std::map<std::string, std::string> kNames = {{"nice", "Nice"},
                                                                {"priority", "Priority"},
                                                                {"minimum_nodes", "NumNodes"},
                                                                {"begin_time", "StartTime"},
                                                                {"deadline", "Deadline"}};
      if (key == "begin_time" || key == "deadline") {
        // scontrol takes these as times; a unix time reads as "now+N seconds" relative to 0 is
        // not expressible, so pass the ISO form.
        time_t t = static_cast<time_t>(*v);
        struct tm tm;
        localtime_r(&t, &tm);
        char buf[32];
        std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
        u.fields[kNames.at(key)] = buf;
      } else {
        u.fields[kNames.at(key)] = std::to_string(*v);
      }
    } else if (key == "requeue") {
      auto v = ReadBool(desc, "requeue", &bad);
      if (bad || !v) return fail("requeue");
      u.fields["Requeue"] = *v ? "1" : "0";
    } else if (key == "hold") {
      auto v = ReadBool(desc, "hold", &bad);
      if (bad || !v) return fail("hold");
      u.hold = *v;
    } else if (key == "job_id") {
      // Ignored: the path names the job.
    } else {
      warnings->push_back("field \"" + key + "\" cannot be updated and was ignored");
    }
  }
  return u;
}

Result<int> SignalFromText(const std::optional<std::string>& text, int def) {
  if (!text || text->empty()) return def;
  auto s = ParseSignal(*text);
  if (!s) return InvalidArgument("Invalid signal: " + *text);
  return *s;
}

Result<pb::CancelJobRequest> KillJobsToRequest(const json& body) {
  pb::CancelJobRequest req;
  bool bad = false;
  if (body.contains("jobs") && !body["jobs"].is_null()) {
    if (!body["jobs"].is_array()) return InvalidArgument("\"jobs\" must be an array");
    for (const auto& j : body["jobs"]) {
      if (j.is_string())
        req.add_job_ids(j.get<std::string>());
      else if (j.is_number_integer())
        req.add_job_ids(std::to_string(j.get<int64_t>()));
      else
        return InvalidArgument("\"jobs\" must hold job ids");
    }
  }
  auto sig = SignalFromText(ReadString(body, "signal", &bad), 0);
  if (!sig) return sig.status();
  req.set_signal(*sig);
  if (auto v = ReadString(body, "job_name", &bad)) req.set_filter_name(*v);
  if (auto v = ReadString(body, "partition", &bad)) req.set_filter_partition(*v);
  if (auto v = ReadString(body, "account", &bad)) req.set_filter_account(*v);
  if (auto v = ReadString(body, "qos", &bad)) req.set_filter_qos(*v);
  if (auto v = ReadStringOrList(body, "nodes", &bad)) req.add_filter_nodes(*v);
  if (auto v = ReadString(body, "user_id", &bad)) {
    char* end = nullptr;
    unsigned long uid = std::strtoul(v->c_str(), &end, 10);
    if (end == v->c_str() || *end) return InvalidArgument("Invalid user_id: " + *v);
    req.set_filter_uid(static_cast<uint32_t>(uid));
    req.set_has_filter_uid(true);
  }
  if (body.contains("job_state") && body["job_state"].is_array()) {
    for (const auto& s : body["job_state"]) {
      if (!s.is_string()) return InvalidArgument("Invalid job_state");
      auto st = ParseJobState(s.get<std::string>());
      if (!st) return InvalidArgument("Invalid job state: " + s.get<std::string>());
      req.add_filter_states(*st);
    }
  }
  if (body.contains("flags") && body["flags"].is_array()) {
    for (const auto& f : body["flags"]) {
      if (!f.is_string()) continue;
      std::string v = f.get<std::string>();
      if (v == "BATCH_JOB") req.set_batch_only(true);
      if (v == "FULL_JOB" || v == "FULL_STEPS_ONLY") req.set_full(true);
    }
  }
  if (bad) return InvalidArgument("Invalid field type in kill_jobs request");
  if (req.job_ids_size() == 0 && req.filter_name().empty() && req.filter_partition().empty() &&
      req.filter_account().empty() && req.filter_qos().empty() && req.filter_nodes_size() == 0 &&
      !req.has_filter_uid() && req.filter_states_size() == 0)
    return InvalidArgument("No job selected: give \"jobs\" or a filter");
  return req;
}

std::vector<uint32_t> ParseJobIdList(const std::string& text, bool* bad) {
  std::vector<uint32_t> out;
  for (const auto& item : CsvList(text)) {
    std::string s = item.get<std::string>();
    char* end = nullptr;
    unsigned long id = std::strtoul(s.c_str(), &end, 10);
    if (end == s.c_str() || (*end && *end != '_')) {
      *bad = true;
      continue;
    }
    out.push_back(static_cast<uint32_t>(id));
  }
  return out;
}

}  // namespace shoal::restd
