// /slurm/v0.0.44/... : each handler turns the HTTP request into controller requests (acting as
// the caller) and the answers into v0.0.44 JSON with the json_* mappings.
#include <chrono>

#include "common/units.h"
#include "restd/json_jobs.h"
#include "restd/json_misc.h"
#include "restd/json_nodes.h"
#include "restd/router.h"

namespace shoal::restd {
namespace {

void AddWarnings(json& resp, const std::vector<std::string>& warnings, const std::string& source) {
  for (const auto& w : warnings) AddWarning(resp, w, source);
}

// "123" or "123_4" (an array task).
struct JobRef {
  uint32_t job_id = 0;
  std::optional<uint32_t> task;
};
std::optional<JobRef> ParseJobRef(const std::string& text) {
  JobRef r;
  char* end = nullptr;
  unsigned long id = std::strtoul(text.c_str(), &end, 10);
  if (end == text.c_str() || id == 0 || id > 0xffffffffUL) return std::nullopt;
  r.job_id = static_cast<uint32_t>(id);
  if (*end == '_') {
    char* e2 = nullptr;
    unsigned long t = std::strtoul(end + 1, &e2, 10);
    if (e2 == end + 1 || *e2) return std::nullopt;
    r.task = static_cast<uint32_t>(t);
  } else if (*end) {
    return std::nullopt;
  }
  return r;
}

HttpResponse InvalidJob(const HttpRequest& req, const std::string& source) {
  return ErrorReply(req, Error(ErrorCode::kInvalidJobId, "Invalid job id specified"), source);
}

// The jobs a job reference names (a whole array when no task is given).
Result<std::vector<pb::JobRecord>> QueryJob(const HttpRequest& req, Backend& backend,
                                            const JobRef& ref) {
  pb::Request q;
  auto* jq = q.mutable_job_query();
  jq->add_job_ids(ref.job_id);
  jq->set_include_finished(true);
  auto r = backend.CallController(req.caller, q);
  if (!r) return r.status();
  std::vector<pb::JobRecord> out;
  for (const auto& job : r->job_query().jobs()) {
    if (ref.task && !(job.array_job_id() == ref.job_id && job.array_task_id() == *ref.task))
      continue;
    out.push_back(job);
  }
  return out;
}

HttpResponse JobsList(const HttpRequest& req, Backend& backend, pb::Request q,
                      const std::string& source) {
  json resp = NewResponse(req);
  q.mutable_job_query()->set_omit_script(true);
  q.mutable_job_query()->set_include_finished(true);
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), source);
  resp["last_backfill"] = NoValUnset();
  resp["last_update"] = NoValTime(r->job_query().server_time());
  // Each job is written out as soon as it is built: a large queue never exists as one JSON tree
  // (building and freeing that tree dominated the time of GET jobs/ with 10,000 jobs).
  std::string body = "{\"jobs\":[";
  bool first = true;
  for (const auto& job : r->job_query().jobs()) {
    if (!first) body.push_back(',');
    first = false;
    body += JobJsonText(job, req.cluster);
  }
  body += "],";
  std::string rest = resp.dump(-1, ' ', false, json::error_handler_t::replace);
  body.append(rest, 1, std::string::npos);  // the envelope's fields, without its '{'
  HttpResponse out;
  out.body = std::move(body);
  return out;
}

// Per-job results of a cancel as kill_jobs_resp_msg entries (failures only, as slurmrestd).
json KillStatus(const pb::CancelJobResponse& r, bool* any_failed, Status* first) {
  json status = json::array();
  for (const auto& res : r.results()) {
    if (res.rc() == 0) continue;
    if (!*any_failed) *first = Error(static_cast<ErrorCode>(res.rc()), res.error());
    *any_failed = true;
    auto ref = ParseJobRef(res.job_id());
    status.push_back({{"error",
                       {{"string", res.error()},
                        {"code", SlurmErrnoFor(static_cast<ErrorCode>(res.rc()))},
                        {"message", res.error()}}},
                      {"step_id", res.job_id()},
                      {"job_id", ref ? NoVal(ref->job_id) : NoValUnset()},
                      {"federation", {{"sibling", ""}}}});
  }
  return status;
}

// --- handlers ----------------------------------------------------------------------------------

HttpResponse Ping(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request q;
  q.mutable_ping();
  auto t0 = std::chrono::steady_clock::now();
  auto r = backend.CallController(req.caller, q);
  int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!r) return ErrorReply(resp, r.status(), "slurm_ping");
  resp["pings"] = PingToJson(r->ping(), us);
  return JsonReply(200, resp);
}

HttpResponse Diag(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request q;
  q.mutable_diag();
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_get_statistics");
  resp["statistics"] = DiagToJson(r->diag());
  return JsonReply(200, resp);
}

HttpResponse Reconfigure(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request q;
  q.mutable_reconfigure();
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_reconfigure");
  return JsonReply(200, resp);
}

HttpResponse GetJobs(const HttpRequest& req, Backend& backend) {
  return JobsList(req, backend, pb::Request(), "slurm_load_jobs");
}

HttpResponse GetJobsState(const HttpRequest& req, Backend& backend) {
  pb::Request q;
  if (auto ids = req.Query("job_id")) {
    bool bad = false;
    for (uint32_t id : ParseJobIdList(*ids, &bad)) q.mutable_job_query()->add_job_ids(id);
    if (bad) return ErrorReply(req, 400, 9000, "Invalid job_id query: " + *ids, "job_id");
  }
  return JobsList(req, backend, std::move(q), "slurm_load_jobs");
}

HttpResponse DeleteJobs(const HttpRequest& req, Backend& backend) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  json resp = NewResponse(req);
  auto cancel = KillJobsToRequest(*body);
  if (!cancel) return ErrorReply(resp, cancel.status(), "kill_jobs_msg");
  pb::Request q;
  *q.mutable_cancel_job() = std::move(*cancel);
  if (q.cancel_job().signal() == 9) q.mutable_cancel_job()->set_signal(0);  // KILL = cancel
  auto r = backend.CallControllerRaw(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_kill_jobs");
  if (r->rc() != 0)
    return ErrorReply(resp, Error(static_cast<ErrorCode>(r->rc()), r->error()), "slurm_kill_jobs");
  bool failed = false;
  Status first;
  resp["status"] = KillStatus(r->cancel_job(), &failed, &first);
  if (failed) return ErrorReply(resp, first, "slurm_kill_jobs");
  return JsonReply(200, resp);
}

HttpResponse Submit(const HttpRequest& req, Backend& backend) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  json resp = NewResponse(req);
  std::vector<std::string> warnings;
  Submitter who{req.caller.uid, req.caller.gid, req.caller.user};
  auto spec = SubmitRequestToSpec(*body, who, &warnings);
  AddWarnings(resp, warnings, "job_submit_req");
  if (!spec) return ErrorReply(resp, spec.status(), "job_submit_req");
  pb::Request q;
  *q.mutable_submit_job()->mutable_spec() = std::move(*spec);
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_submit_batch_job");
  resp["job_id"] = r->submit_job().job_id();
  resp["step_id"] = "batch";
  resp["job_submit_user_msg"] = "";
  return JsonReply(200, resp);
}

HttpResponse Allocate(const HttpRequest& req, Backend& backend) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  json resp = NewResponse(req);
  if (!body->contains("job") || !(*body)["job"].is_object()) {
    if (body->contains("hetjob"))
      return ErrorReply(resp,
                        Error(ErrorCode::kNotSupported, "heterogeneous jobs are not supported"),
                        "job_alloc_req");
    return ErrorReply(resp, InvalidArgument("Request is missing the \"job\" description"),
                      "job_alloc_req");
  }
  json desc = (*body)["job"];
  // An allocation runs no script: the directory only matters to later steps.
  if (!desc.contains("current_working_directory")) desc["current_working_directory"] = "/";
  std::vector<std::string> warnings;
  Submitter who{req.caller.uid, req.caller.gid, req.caller.user};
  auto spec = JobDescToSpec(desc, "", who, &warnings);
  AddWarnings(resp, warnings, "job_alloc_req");
  if (!spec) return ErrorReply(resp, spec.status(), "job_alloc_req");
  // Like salloc's allocation, but held by nobody: it lasts until its time limit or a cancel.
  spec->set_interactive(true);
  pb::Request q;
  *q.mutable_submit_job()->mutable_spec() = std::move(*spec);
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_allocate_resources");
  resp["job_id"] = r->submit_job().job_id();
  resp["job_submit_user_msg"] = "";
  return JsonReply(200, resp);
}

HttpResponse GetJob(const HttpRequest& req, Backend& backend) {
  auto ref = ParseJobRef(req.Param("job_id"));
  if (!ref) return InvalidJob(req, "job_id");
  json resp = NewResponse(req);
  auto jobs = QueryJob(req, backend, *ref);
  if (!jobs) return ErrorReply(resp, jobs.status(), "slurm_load_job");
  if (jobs->empty()) return InvalidJob(req, "slurm_load_job");
  json out = json::array();
  for (const auto& job : *jobs) out.push_back(JobToJson(job, req.cluster));
  resp["jobs"] = std::move(out);
  resp["last_backfill"] = NoValUnset();
  resp["last_update"] = NoVal(std::time(nullptr));
  return JsonReply(200, resp);
}

HttpResponse UpdateJob(const HttpRequest& req, Backend& backend) {
  auto ref = ParseJobRef(req.Param("job_id"));
  if (!ref) return InvalidJob(req, "job_id");
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  json resp = NewResponse(req);
  std::vector<std::string> warnings;
  auto update = JobDescToUpdate(*body, &warnings);
  AddWarnings(resp, warnings, "job_desc_msg");
  if (!update) return ErrorReply(resp, update.status(), "job_desc_msg");
  const std::string& id = req.Param("job_id");
  json results = json::array();
  auto record = [&](const pb::Response& r, const std::string& why) -> std::optional<Status> {
    for (const auto& res : r.job_control().results()) {
      if (res.rc() != 0) return Error(static_cast<ErrorCode>(res.rc()), res.error());
    }
    results.push_back(
        {{"job_id", ref->job_id}, {"step_id", ""}, {"error", ""}, {"error_code", 0}, {"why", why}});
    return std::nullopt;
  };
  if (!update->fields.empty()) {
    pb::Request q;
    q.mutable_update_job()->add_job_ids(id);
    for (const auto& [k, v] : update->fields) (*q.mutable_update_job()->mutable_fields())[k] = v;
    auto r = backend.CallController(req.caller, q);
    if (!r) return ErrorReply(resp, r.status(), "slurm_update_job");
    if (auto failed = record(*r, "Job updated"))
      return ErrorReply(resp, *failed, "slurm_update_job");
  }
  if (update->hold) {
    pb::Request q;
    q.mutable_job_control()->set_action(*update->hold ? pb::JobControlRequest::HOLD
                                                      : pb::JobControlRequest::RELEASE);
    q.mutable_job_control()->add_job_ids(id);
    auto r = backend.CallController(req.caller, q);
    if (!r) return ErrorReply(resp, r.status(), "slurm_update_job");
    if (auto failed = record(*r, *update->hold ? "Job held" : "Job released"))
      return ErrorReply(resp, *failed, "slurm_update_job");
  }
  if (results.empty()) {
    // Nothing to change: still say whether the job exists.
    auto jobs = QueryJob(req, backend, *ref);
    if (!jobs) return ErrorReply(resp, jobs.status(), "slurm_update_job");
    if (jobs->empty()) return InvalidJob(req, "slurm_update_job");
    results.push_back({{"job_id", ref->job_id},
                       {"step_id", ""},
                       {"error", ""},
                       {"error_code", 0},
                       {"why", "Nothing to update"}});
  }
  resp["results"] = std::move(results);
  return JsonReply(200, resp);
}

HttpResponse DeleteJob(const HttpRequest& req, Backend& backend) {
  auto ref = ParseJobRef(req.Param("job_id"));
  if (!ref) return InvalidJob(req, "job_id");
  json resp = NewResponse(req);
  auto sig = SignalFromText(req.Query("signal"), 0);
  if (!sig) return ErrorReply(resp, sig.status(), "signal");
  pb::Request q;
  auto* c = q.mutable_cancel_job();
  c->add_job_ids(req.Param("job_id"));
  c->set_signal(*sig == 9 ? 0 : *sig);  // SIGKILL (slurmrestd's default) cancels the job
  if (auto flags = req.Query("flags")) {
    for (const auto& f : CsvList(*flags)) {
      if (f == "BATCH_JOB") c->set_batch_only(true);
      if (f == "FULL_JOB" || f == "FULL_STEPS_ONLY") c->set_full(true);
    }
  }
  auto r = backend.CallControllerRaw(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_kill_job");
  if (r->rc() != 0)
    return ErrorReply(resp, Error(static_cast<ErrorCode>(r->rc()), r->error()), "slurm_kill_job");
  bool failed = false;
  Status first;
  resp["status"] = KillStatus(r->cancel_job(), &failed, &first);
  if (failed) return ErrorReply(resp, first, "slurm_kill_job");
  return JsonReply(200, resp);
}

HttpResponse Resources(const HttpRequest& req, Backend& backend) {
  auto ref = ParseJobRef(req.Param("job_id"));
  if (!ref) return InvalidJob(req, "job_id");
  json resp = NewResponse(req);
  auto jobs = QueryJob(req, backend, *ref);
  if (!jobs) return ErrorReply(resp, jobs.status(), "slurm_job_layout");
  if (jobs->empty()) return InvalidJob(req, "slurm_job_layout");
  const pb::JobRecord& job = jobs->front();
  if (job.nodes_size() == 0)
    return ErrorReply(resp, Error(ErrorCode::kJobNotPending, "Job has no resources allocated"),
                      "slurm_job_layout");
  resp["nodes"] = ResourceLayoutToJson(job);
  return JsonReply(200, resp);
}

Result<pb::NodeQueryResponse> QueryNodes(const HttpRequest& req, Backend& backend,
                                         const std::string& name) {
  pb::Request q;
  auto* nq = q.mutable_node_query();
  if (!name.empty()) nq->add_names(name);
  auto r = backend.CallController(req.caller, q);
  if (!r) return r.status();
  return std::move(*r->mutable_node_query());
}

HttpResponse NodesReply(const HttpRequest& req, Backend& backend, const std::string& name) {
  json resp = NewResponse(req);
  auto r = QueryNodes(req, backend, name);
  if (!r) return ErrorReply(resp, r.status(), "slurm_load_node");
  json nodes = json::array();
  for (const auto& n : r->nodes()) {
    if (!name.empty() && n.name() != name) continue;
    nodes.push_back(NodeToJson(n, req.cluster));
  }
  if (!name.empty() && nodes.empty())
    return ErrorReply(resp, Error(ErrorCode::kInvalidNodeName, "Invalid node name specified"),
                      "slurm_load_node");
  resp["nodes"] = std::move(nodes);
  resp["last_update"] = NoValTime(r->server_time());
  return JsonReply(200, resp);
}

HttpResponse GetNodes(const HttpRequest& req, Backend& backend) {
  return NodesReply(req, backend, "");
}
HttpResponse GetNode(const HttpRequest& req, Backend& backend) {
  return NodesReply(req, backend, req.Param("node_name"));
}

HttpResponse UpdateNodes(const HttpRequest& req, Backend& backend, const std::string& names) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  json resp = NewResponse(req);
  std::vector<std::string> warnings;
  auto update = NodeUpdateToRequest(*body, names, &warnings);
  AddWarnings(resp, warnings, "update_node_msg");
  if (!update) return ErrorReply(resp, update.status(), "update_node_msg");
  pb::Request q;
  *q.mutable_update_node() = std::move(*update);
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_update_node");
  return JsonReply(200, resp);
}

HttpResponse PostNodes(const HttpRequest& req, Backend& backend) {
  return UpdateNodes(req, backend, "");
}
HttpResponse PostNode(const HttpRequest& req, Backend& backend) {
  return UpdateNodes(req, backend, req.Param("node_name"));
}

HttpResponse DeleteNode(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request q;
  q.mutable_delete_node()->set_node_names(req.Param("node_name"));
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_delete_node");
  return JsonReply(200, resp);
}

// POST new/node {"node_conf": "NodeName=... CPUs=..."}: scontrol create NodeName=...
HttpResponse NewNode(const HttpRequest& req, Backend& backend) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  json resp = NewResponse(req);
  bool bad = false;
  auto conf = body->is_object() ? ReadString(*body, "node_conf", &bad) : std::nullopt;
  if (bad || !conf || conf->empty())
    return ErrorReply(resp, InvalidArgument("Missing or invalid field \"node_conf\""),
                      "slurm_create_node");
  pb::Request q;
  q.mutable_create_node()->set_spec(*conf);
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_create_node");
  return JsonReply(200, resp);
}

HttpResponse PartitionsReply(const HttpRequest& req, Backend& backend, const std::string& name) {
  json resp = NewResponse(req);
  auto r = QueryNodes(req, backend, "");
  if (!r) return ErrorReply(resp, r.status(), "slurm_load_partitions");
  json parts = json::array();
  for (const auto& p : r->partitions()) {
    if (!name.empty() && p.name() != name) continue;
    parts.push_back(PartitionToJson(p, req.cluster));
  }
  if (!name.empty() && parts.empty())
    return ErrorReply(resp, Error(ErrorCode::kInvalidPartition, "Invalid partition name specified"),
                      "slurm_load_partitions");
  resp["partitions"] = std::move(parts);
  resp["last_update"] = NoValTime(r->server_time());
  return JsonReply(200, resp);
}

HttpResponse GetPartitions(const HttpRequest& req, Backend& backend) {
  return PartitionsReply(req, backend, "");
}
HttpResponse GetPartition(const HttpRequest& req, Backend& backend) {
  return PartitionsReply(req, backend, req.Param("partition_name"));
}

Result<pb::ReservationQueryResponse> QueryReservations(const HttpRequest& req, Backend& backend,
                                                       const std::string& name) {
  pb::Request q;
  q.mutable_reservation_query()->set_name(name);
  auto r = backend.CallController(req.caller, q);
  if (!r) return r.status();
  return std::move(*r->mutable_reservation_query());
}

HttpResponse ReservationsReply(const HttpRequest& req, Backend& backend, const std::string& name) {
  json resp = NewResponse(req);
  auto r = QueryReservations(req, backend, name);
  if (!r) return ErrorReply(resp, r.status(), "slurm_load_reservations");
  json list = json::array();
  for (const auto& rv : r->reservations()) {
    if (!name.empty() && rv.name() != name) continue;
    list.push_back(ReservationToJson(rv));
  }
  if (!name.empty() && list.empty())
    return ErrorReply(resp, Error(ErrorCode::kInvalidReservation, "Reservation not found"),
                      "slurm_load_reservations");
  resp["reservations"] = std::move(list);
  resp["last_update"] = NoValTime(r->server_time());
  return JsonReply(200, resp);
}

HttpResponse GetReservations(const HttpRequest& req, Backend& backend) {
  return ReservationsReply(req, backend, "");
}
HttpResponse GetReservation(const HttpRequest& req, Backend& backend) {
  auto r = ReservationsReply(req, backend, req.Param("reservation_name"));
  if (r.status == 400) r.status = 404;  // a missing reservation is "not found" on this path
  return r;
}

// Creates or updates one reservation_desc_msg; returns the name it got.
Result<std::string> ApplyReservation(const HttpRequest& req, Backend& backend, const json& desc) {
  auto args = ReservationDescToArgs(desc);
  if (!args) return args.status();
  bool bad = false;
  std::string name = ReadString(desc, "name", &bad).value_or("");
  bool exists = false;
  if (!name.empty()) {
    auto q = QueryReservations(req, backend, name);
    if (!q) return q.status();
    for (const auto& r : q->reservations()) exists = exists || r.name() == name;
  }
  pb::Request q;
  auto* rr = q.mutable_reservation();
  rr->set_action(exists ? pb::ReservationRequest::UPDATE : pb::ReservationRequest::CREATE);
  for (auto& a : *args) rr->add_args(a);
  auto r = backend.CallController(req.caller, q);
  if (!r) return r.status();
  return exists ? name : r->reservation().name();
}

HttpResponse ReservationModReply(const HttpRequest& req, Backend& backend,
                                 const std::vector<json>& descs) {
  json resp = NewResponse(req);
  json done = json::array();
  for (const json& d : descs) {
    auto name = ApplyReservation(req, backend, d);
    if (!name) {
      resp["reservations"] = done;
      return ErrorReply(resp, name.status(), "slurm_create_reservation");
    }
    json out = d;
    out["name"] = *name;
    done.push_back(std::move(out));
  }
  resp["reservations"] = std::move(done);
  return JsonReply(200, resp);
}

HttpResponse PostReservation(const HttpRequest& req, Backend& backend) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  return ReservationModReply(req, backend, {*body});
}

HttpResponse PostReservations(const HttpRequest& req, Backend& backend) {
  HttpResponse err;
  auto body = ParseJsonBody(req, &err);
  if (!body) return err;
  if (!body->contains("reservations") || !(*body)["reservations"].is_array())
    return ErrorReply(req, 400, 9001, "Request is missing the \"reservations\" array",
                      "reservation_mod_req");
  std::vector<json> descs((*body)["reservations"].begin(), (*body)["reservations"].end());
  return ReservationModReply(req, backend, descs);
}

HttpResponse DeleteReservation(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request q;
  q.mutable_reservation()->set_action(pb::ReservationRequest::DELETE);
  q.mutable_reservation()->set_name(req.Param("reservation_name"));
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_delete_reservation");
  return JsonReply(200, resp);
}

HttpResponse Shares(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request q;
  auto* s = q.mutable_share_query();
  s->set_all_users(true);
  if (auto users = req.Query("users"))
    for (const auto& u : CsvList(*users)) s->add_users(u.get<std::string>());
  if (auto accounts = req.Query("accounts"))
    for (const auto& a : CsvList(*accounts)) s->add_accounts(a.get<std::string>());
  auto r = backend.CallController(req.caller, q);
  if (!r) return ErrorReply(resp, r.status(), "slurm_associations_get_shares");
  resp["shares"] = SharesToJson(r->share_query(), req.cluster);
  return JsonReply(200, resp);
}

HttpResponse Licenses(const HttpRequest& req, Backend& backend) {
  json resp = NewResponse(req);
  pb::Request cq;
  cq.mutable_config_query();
  auto conf = backend.CallController(req.caller, cq);
  if (!conf) return ErrorReply(resp, conf.status(), "slurm_load_licenses");
  std::string configured;
  const auto& keys = conf->config_query().keys();
  for (int i = 0; i < keys.size(); ++i)
    if (keys[i] == "Licenses" && i < conf->config_query().values_size())
      configured = conf->config_query().values(i);
  if (configured == "(null)") configured.clear();
  std::vector<pb::JobRecord> jobs;
  if (!configured.empty()) {
    pb::Request jq;
    jq.mutable_job_query()->add_states(pb::JOB_RUNNING);
    jq.mutable_job_query()->add_states(pb::JOB_SUSPENDED);
    jq.mutable_job_query()->set_omit_script(true);
    auto r = backend.CallController(req.caller, jq);
    if (!r) return ErrorReply(resp, r.status(), "slurm_load_licenses");
    jobs.assign(r->job_query().jobs().begin(), r->job_query().jobs().end());
  }
  resp["licenses"] = LicensesToJson(configured, jobs);
  resp["last_update"] = NoVal(conf->config_query().server_time());
  return JsonReply(200, resp);
}

}  // namespace

void RegisterSlurmEndpoints(Router& router) {
  // The fields each response schema requires, present in error answers too.
  const json none = json::object();
  const json jobs = {
      {"jobs", json::array()}, {"last_backfill", NoValUnset()}, {"last_update", NoValUnset()}};
  const json status = {{"status", json::array()}};
  const json nodes = {{"nodes", json::array()}, {"last_update", NoValUnset()}};
  const json parts = {{"partitions", json::array()}, {"last_update", NoValUnset()}};
  const json resvs = {{"reservations", json::array()}, {"last_update", NoValUnset()}};
  const json resv_mod = {{"reservations", json::array()}};
  const json layout = {{"nodes", json::array()}};
  const json pings = {{"pings", json::array()}};
  const json diag = {{"statistics", json::object()}};
  const json shares = {{"shares", json::object()}};
  const json licenses = {{"licenses", json::array()}, {"last_update", NoValUnset()}};
  for (const std::string& v : ApiVersions()) {
    const std::string p = "/slurm/" + v + "/";
    router.Add(Method::kGet, p + "ping", Ping, pings);
    router.Add(Method::kGet, p + "diag", Diag, diag);
    router.Add(Method::kGet, p + "reconfigure", Reconfigure, none);
    router.Add(Method::kGet, p + "jobs", GetJobs, jobs);
    router.Add(Method::kDelete, p + "jobs", DeleteJobs, status);
    router.Add(Method::kGet, p + "jobs/state", GetJobsState, jobs);
    router.Add(Method::kPost, p + "job/submit", Submit, none);
    router.Add(Method::kPost, p + "job/allocate", Allocate, none);
    router.Add(Method::kGet, p + "job/{job_id}", GetJob, jobs);
    router.Add(Method::kPost, p + "job/{job_id}", UpdateJob, none);
    router.Add(Method::kDelete, p + "job/{job_id}", DeleteJob, status);
    router.Add(Method::kGet, p + "resources/{job_id}", Resources, layout);
    router.Add(Method::kGet, p + "nodes", GetNodes, nodes);
    router.Add(Method::kPost, p + "nodes", PostNodes, none);
    router.Add(Method::kGet, p + "node/{node_name}", GetNode, nodes);
    router.Add(Method::kPost, p + "node/{node_name}", PostNode, none);
    router.Add(Method::kDelete, p + "node/{node_name}", DeleteNode, none);
    router.Add(Method::kPost, p + "new/node", NewNode, none);
    router.Add(Method::kGet, p + "partitions", GetPartitions, parts);
    router.Add(Method::kGet, p + "partition/{partition_name}", GetPartition, parts);
    router.Add(Method::kGet, p + "reservations", GetReservations, resvs);
    router.Add(Method::kPost, p + "reservations", PostReservations, resv_mod);
    router.Add(Method::kPost, p + "reservation", PostReservation, resv_mod);
    router.Add(Method::kGet, p + "reservation/{reservation_name}", GetReservation, resvs);
    router.Add(Method::kDelete, p + "reservation/{reservation_name}", DeleteReservation, none);
    router.Add(Method::kGet, p + "shares", Shares, shares);
    router.Add(Method::kGet, p + "licenses", Licenses, licenses);
  }
}

}  // namespace shoal::restd
