// /slurmdb/v0.0.44/... endpoints: the requests sacct and sacctmgr send to shoaldbd, made with
// the HTTP caller's credential (a token is checked by shoaldbd, which applies that user's
// rights, PrivateData included). JSON shapes come from slurmdb_json.cc.
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string_view>
#include <vector>

#include "restd/router.h"
#include "restd/slurmdb_json.h"

namespace shoal::restd {
namespace {

using slurmdb::FlagOn;

std::string NameOfUid(uint32_t uid) {
  std::vector<char> buf(16384);
  passwd pw{}, *res = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res) return res->pw_name;
  return std::to_string(uid);
}

// Error answers keep the keys the response schema requires (an empty list), so clients that
// read e.g. "jobs" before "errors" still parse them.
json Base(const HttpRequest& req, const char* key) {
  json resp = NewResponse(req);
  if (key) resp[key] = std::string_view(key) == "statistics" ? json::object() : json::array();
  return resp;
}

HttpResponse Fail(const HttpRequest& req, const char* key, const Status& st,
                  const std::string& source) {
  return ErrorReply(Base(req, key), st, source);
}

HttpResponse NotFound(const HttpRequest& req, const char* key, int slurm_errno,
                      const std::string& message, const std::string& source) {
  json resp = Base(req, key);
  AddError(resp, slurm_errno, message, message, source);
  return JsonReply(404, resp);
}

Result<pb::AcctShowResponse> Show(Backend& backend, const Caller& caller,
                                  const pb::AcctShowRequest& show) {
  pb::DbdRequest q;
  *q.mutable_show() = show;
  auto r = backend.CallDbd(caller, q);
  if (!r) return r.status();
  return r->show();
}

Result<pb::AcctShowResponse> ShowEntity(Backend& backend, const Caller& caller,
                                        const std::string& entity, bool with_assoc = false) {
  pb::AcctShowRequest show;
  show.set_entity(entity);
  show.set_with_assoc(with_assoc);
  return Show(backend, caller, show);
}

// ---- jobs -------------------------------------------------------------------------------------

HttpResponse JobsReply(const HttpRequest& req, Backend& backend, const pb::AcctJobQuery& query,
                       bool single, const char* source) {
  pb::DbdRequest q;
  *q.mutable_job_query() = query;
  auto r = backend.CallDbd(req.caller, q);
  if (!r) return Fail(req, "jobs", r.status(), source);
  json resp = NewResponse(req);
  int64_t now = std::time(nullptr);
  json jobs = json::array();
  for (const auto& job : r->job_query().jobs())
    jobs.push_back(slurmdb::JobJson(job, now, NameOfUid));
  if (single && jobs.empty())
    return Fail(req, "jobs", Status(ErrorCode::kInvalidJobId, "Invalid job id specified"), source);
  resp["jobs"] = std::move(jobs);
  return JsonReply(200, resp);
}

HttpResponse GetJobs(const HttpRequest& req, Backend& backend) {
  auto query = slurmdb::JobQueryFromParams(req.query, backend.ClusterName());
  if (!query) return Fail(req, "jobs", query.status(), "slurmdb_jobs_get");
  return JobsReply(req, backend, *query, false, "slurmdb_jobs_get");
}

HttpResponse GetJob(const HttpRequest& req, Backend& backend) {
  const std::string& id_text = req.Param("job_id");
  char* end = nullptr;
  unsigned long id = std::strtoul(id_text.c_str(), &end, 10);
  if (id_text.empty() || id == 0 || id > 0xffffffffUL || (*end != '\0' && *end != '_'))
    return Fail(req, "jobs", Status(ErrorCode::kInvalidJobId, "Invalid job id specified"),
                "slurmdb_job_get");
  pb::AcctJobQuery query;
  query.add_job_ids(static_cast<uint32_t>(id));
  query.add_job_id_texts(id_text);
  query.set_include_steps(true);
  if (!backend.ClusterName().empty()) query.add_clusters(backend.ClusterName());
  return JobsReply(req, backend, query, true, "slurmdb_job_get");
}

// ---- accounts, users, associations, qos -------------------------------------------------------

HttpResponse GetAccounts(const HttpRequest& req, Backend& backend, const std::string& name) {
  const char* source = name.empty() ? "slurmdb_accounts_get" : "slurmdb_account_get";
  auto show = slurmdb::ShowFromParams("account", req.query);
  if (!show) return Fail(req, "accounts", show.status(), source);
  if (!name.empty()) show->add_names(name);
  bool with_assocs = FlagOn(req.query, "with_assocs") || FlagOn(req.query, "WithAssociations");
  bool with_coords = FlagOn(req.query, "with_coords") || FlagOn(req.query, "WithCoordinators");
  show->set_with_assoc(with_assocs);
  auto accounts = Show(backend, req.caller, *show);
  if (!accounts) return Fail(req, "accounts", accounts.status(), source);
  pb::AcctShowResponse extra = *accounts;
  if (with_coords) {
    auto users = ShowEntity(backend, req.caller, "user");
    if (!users) return Fail(req, "accounts", users.status(), source);
    *extra.mutable_users() = users->users();
  }
  if (with_assocs && extra.assocs_size() == 0) {
    auto assocs = ShowEntity(backend, req.caller, "association");
    if (!assocs) return Fail(req, "accounts", assocs.status(), source);
    *extra.mutable_assocs() = assocs->assocs();
  }
  json list = json::array();
  for (const auto& a : accounts->accounts())
    list.push_back(slurmdb::AccountJson(a, extra, with_assocs, with_coords));
  if (!name.empty() && list.empty())
    return NotFound(req, "accounts", 2004, "Account " + name + " not found", source);
  json resp = NewResponse(req);
  resp["accounts"] = std::move(list);
  return JsonReply(200, resp);
}

HttpResponse GetUsers(const HttpRequest& req, Backend& backend, const std::string& name) {
  const char* source = name.empty() ? "slurmdb_users_get" : "slurmdb_user_get";
  auto show = slurmdb::ShowFromParams("user", req.query);
  if (!show) return Fail(req, "users", show.status(), source);
  if (!name.empty()) show->add_names(name);
  bool with_assocs = FlagOn(req.query, "with_assocs");
  bool with_coords = FlagOn(req.query, "with_coords");
  auto users = Show(backend, req.caller, *show);
  if (!users) return Fail(req, "users", users.status(), source);
  pb::AcctShowResponse extra = *users;
  if (with_assocs) {
    auto assocs = ShowEntity(backend, req.caller, "association");
    if (!assocs) return Fail(req, "users", assocs.status(), source);
    *extra.mutable_assocs() = assocs->assocs();
  }
  json list = json::array();
  for (const auto& u : users->users())
    list.push_back(slurmdb::UserJson(u, extra, with_assocs, with_coords));
  if (!name.empty() && list.empty())
    return NotFound(req, "users", 2004, "User " + name + " not found", source);
  json resp = NewResponse(req);
  resp["users"] = std::move(list);
  return JsonReply(200, resp);
}

HttpResponse GetAssocs(const HttpRequest& req, Backend& backend) {
  auto show = slurmdb::ShowFromParams("association", req.query);
  if (!show) return Fail(req, "associations", show.status(), "slurmdb_associations_get");
  auto r = Show(backend, req.caller, *show);
  if (!r) return Fail(req, "associations", r.status(), "slurmdb_associations_get");
  json list = json::array();
  for (const auto& a : r->assocs()) list.push_back(slurmdb::AssocJson(a));
  json resp = NewResponse(req);
  resp["associations"] = std::move(list);
  return JsonReply(200, resp);
}

HttpResponse GetQos(const HttpRequest& req, Backend& backend, const std::string& name) {
  const char* source = name.empty() ? "slurmdb_qos_get" : "slurmdb_single_qos_get";
  auto show = slurmdb::ShowFromParams("qos", req.query);
  if (!show) return Fail(req, "qos", show.status(), source);
  if (!name.empty()) show->add_names(name);
  auto r = Show(backend, req.caller, *show);
  if (!r) return Fail(req, "qos", r.status(), source);
  json list = json::array();
  for (const auto& q : r->qos()) list.push_back(slurmdb::QosJson(q));
  if (!name.empty() && list.empty())
    return NotFound(req, "qos", 2066, "QOS " + name + " not found", source);
  json resp = NewResponse(req);
  resp["qos"] = std::move(list);
  return JsonReply(200, resp);
}

// add (POST) and delete go through sacctmgr's administrative request; shoaldbd checks rights.
Result<pb::AcctAdminResponse> Admin(Backend& backend, const Caller& caller,
                                    const pb::AcctAdminRequest& admin) {
  pb::DbdRequest q;
  *q.mutable_admin() = admin;
  auto r = backend.CallDbd(caller, q);
  if (!r) return r.status();
  return r->admin();
}

HttpResponse PostAdd(const HttpRequest& req, Backend& backend, const std::string& entity,
                     const char* source) {
  HttpResponse bad;
  auto body = ParseJsonBody(req, &bad);
  if (!body) return bad;
  auto adds = slurmdb::AddRequestsFromBody(entity, *body);
  if (!adds) return Fail(req, nullptr, adds.status(), source);
  json resp = NewResponse(req);
  for (const auto& add : *adds) {
    auto r = Admin(backend, req.caller, add);
    if (!r) return ErrorReply(resp, r.status(), source);
    for (const auto& line : r->lines()) AddWarning(resp, line, source);
  }
  return JsonReply(200, resp);
}

HttpResponse Delete(const HttpRequest& req, Backend& backend, const std::string& entity,
                    const std::string& name, const char* list_key, const char* source) {
  pb::AcctAdminRequest admin;
  admin.set_verb(pb::AcctAdminRequest::DELETE);
  admin.set_entity(entity);
  admin.add_names(name);
  auto r = Admin(backend, req.caller, admin);
  if (!r) return Fail(req, list_key, r.status(), source);
  json resp = Base(req, list_key);
  if (r->changed() == 0)
    return ErrorReply(resp, Status(ErrorCode::kInvalidArgument, "Nothing deleted"), source);
  if (list_key) resp[list_key] = json::array({name});
  return JsonReply(200, resp);
}

// DELETE associations/?user=&account=&cluster=&partition=: sacctmgr's "delete user U where
// account=A ..." (a user's associations), or "delete account A" when no user is named.
HttpResponse DeleteAssocs(const HttpRequest& req, Backend& backend) {
  const char* source = "slurmdb_associations_delete";
  const char* key = "removed_associations";
  auto q = [&](const char* k) { return req.Query(k).value_or(""); };
  std::string user = q("user"), account = q("account");
  if (user.empty() && account.empty())
    return Fail(req, key, InvalidArgument("name a user or an account to delete associations of"),
                source);
  pb::AcctAdminRequest admin;
  admin.set_verb(pb::AcctAdminRequest::DELETE);
  auto where = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    pb::AcctKeyValue* kv = admin.add_where();
    kv->set_key(k);
    kv->set_value(v);
    kv->set_op("=");
  };
  if (!user.empty()) {
    admin.set_entity("user");
    admin.add_names(user);
    where("account", account);
    where("cluster", q("cluster"));
    where("partition", q("partition"));
  } else {
    admin.set_entity("account");
    admin.add_names(account);
    where("cluster", q("cluster"));
  }
  auto r = Admin(backend, req.caller, admin);
  if (!r) return Fail(req, key, r.status(), source);
  if (r->changed() == 0) return NotFound(req, key, 2004, "No associations matched", source);
  json resp = Base(req, key);
  // The deleted objects are the indented lines of sacctmgr's answer ("  C = c1 A = a U = u").
  for (const auto& line : r->lines())
    if (line.rfind("  ", 0) == 0) resp[key].push_back(line.substr(line.find_first_not_of(' ')));
  return JsonReply(200, resp);
}

// ---- clusters, tres, config, diag, ping -------------------------------------------------------

HttpResponse GetClusters(const HttpRequest& req, Backend& backend) {
  auto r = ShowEntity(backend, req.caller, "cluster");
  if (!r) return Fail(req, "clusters", r.status(), "slurmdb_clusters_get");
  json list = json::array();
  for (const auto& c : r->clusters()) list.push_back(slurmdb::ClusterJson(c));
  json resp = NewResponse(req);
  resp["clusters"] = std::move(list);
  return JsonReply(200, resp);
}

HttpResponse GetTres(const HttpRequest& req, Backend& backend) {
  auto r = ShowEntity(backend, req.caller, "tres");
  if (!r) return Fail(req, "TRES", r.status(), "slurmdb_tres_get");
  json resp = NewResponse(req);
  resp["TRES"] = slurmdb::TresCatalog(r->tres());
  return JsonReply(200, resp);
}

HttpResponse GetConfig(const HttpRequest& req, Backend& backend) {
  const char* source = "slurmdb_config_get";
  json resp = NewResponse(req);
  pb::AcctShowResponse all;
  for (const char* entity : {"cluster", "tres", "account", "user", "qos", "association"}) {
    auto r = ShowEntity(backend, req.caller, entity);
    if (!r) return Fail(req, nullptr, r.status(), source);
    all.MergeFrom(*r);
  }
  json clusters = json::array(), accounts = json::array(), users = json::array(),
       qos = json::array(), assocs = json::array();
  for (const auto& c : all.clusters()) clusters.push_back(slurmdb::ClusterJson(c));
  for (const auto& a : all.accounts())
    accounts.push_back(slurmdb::AccountJson(a, all, false, true));
  for (const auto& u : all.users()) users.push_back(slurmdb::UserJson(u, all, false, true));
  for (const auto& q : all.qos()) qos.push_back(slurmdb::QosJson(q));
  for (const auto& a : all.assocs()) assocs.push_back(slurmdb::AssocJson(a));
  resp["clusters"] = std::move(clusters);
  resp["tres"] = slurmdb::TresCatalog(all.tres());
  resp["accounts"] = std::move(accounts);
  resp["users"] = std::move(users);
  resp["qos"] = std::move(qos);
  resp["associations"] = std::move(assocs);
  resp["wckeys"] = json::array();
  resp["instances"] = json::array();
  return JsonReply(200, resp);
}

HttpResponse GetPing(const HttpRequest& req, Backend& backend) {
  auto start = std::chrono::steady_clock::now();
  auto r = ShowEntity(backend, req.caller, "tres");
  auto latency = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  json resp = NewResponse(req);
  resp["pings"] = json::array({{{"hostname", "slurmdbd"},
                                {"responding", r.ok()},
                                {"latency", static_cast<int64_t>(latency)},
                                {"primary", true}}});
  if (!r) return ErrorReply(resp, r.status(), "slurmdb_ping_get");
  return JsonReply(200, resp);
}

HttpResponse GetDiag(const HttpRequest& req, Backend& backend) {
  // shoaldbd keeps no RPC statistics yet: the answer proves it is reachable by this user and
  // reports empty tables rather than invented numbers.
  auto r = ShowEntity(backend, req.caller, "tres");
  if (!r) return Fail(req, "statistics", r.status(), "slurmdb_diag_get");
  json resp = NewResponse(req);
  resp["statistics"] = {{"time_start", static_cast<int64_t>(std::time(nullptr))},
                        {"RPCs", json::array()},
                        {"users", json::array()}};
  return JsonReply(200, resp);
}

}  // namespace

void RegisterSlurmdbEndpoints(Router& router) {
  for (const std::string& v : ApiVersions()) {
    const std::string p = "/slurmdb/" + v + "/";
    router.Add(Method::kGet, p + "jobs", GetJobs);
    router.Add(Method::kGet, p + "job/{job_id}", GetJob);
    router.Add(Method::kGet, p + "accounts",
               [](const HttpRequest& r, Backend& b) { return GetAccounts(r, b, ""); });
    router.Add(Method::kGet, p + "account/{account_name}", [](const HttpRequest& r, Backend& b) {
      return GetAccounts(r, b, r.Param("account_name"));
    });
    router.Add(Method::kPost, p + "accounts", [](const HttpRequest& r, Backend& b) {
      return PostAdd(r, b, "account", "slurmdb_accounts_post");
    });
    router.Add(Method::kDelete, p + "account/{account_name}", [](const HttpRequest& r, Backend& b) {
      return Delete(r, b, "account", r.Param("account_name"), "removed_accounts",
                    "slurmdb_account_delete");
    });
    router.Add(Method::kGet, p + "users",
               [](const HttpRequest& r, Backend& b) { return GetUsers(r, b, ""); });
    router.Add(Method::kGet, p + "user/{name}",
               [](const HttpRequest& r, Backend& b) { return GetUsers(r, b, r.Param("name")); });
    router.Add(Method::kPost, p + "users", [](const HttpRequest& r, Backend& b) {
      return PostAdd(r, b, "user", "slurmdb_users_post");
    });
    router.Add(Method::kDelete, p + "user/{name}", [](const HttpRequest& r, Backend& b) {
      return Delete(r, b, "user", r.Param("name"), nullptr, "slurmdb_user_delete");
    });
    router.Add(Method::kGet, p + "associations", GetAssocs);
    router.Add(Method::kGet, p + "association", GetAssocs);
    router.Add(Method::kDelete, p + "associations", DeleteAssocs);
    router.Add(Method::kDelete, p + "association", DeleteAssocs);
    router.Add(Method::kPost, p + "associations", [](const HttpRequest& r, Backend& b) {
      return PostAdd(r, b, "association", "slurmdb_associations_post");
    });
    router.Add(Method::kGet, p + "qos",
               [](const HttpRequest& r, Backend& b) { return GetQos(r, b, ""); });
    router.Add(Method::kGet, p + "qos/{qos}",
               [](const HttpRequest& r, Backend& b) { return GetQos(r, b, r.Param("qos")); });
    router.Add(Method::kPost, p + "qos", [](const HttpRequest& r, Backend& b) {
      return PostAdd(r, b, "qos", "slurmdb_qos_post");
    });
    router.Add(Method::kDelete, p + "qos/{qos}", [](const HttpRequest& r, Backend& b) {
      return Delete(r, b, "qos", r.Param("qos"), "removed_qos", "slurmdb_single_qos_delete");
    });
    router.Add(Method::kGet, p + "clusters", GetClusters);
    router.Add(Method::kGet, p + "tres", GetTres);
    router.Add(Method::kGet, p + "config", GetConfig);
    router.Add(Method::kGet, p + "diag", GetDiag);
    router.Add(Method::kGet, p + "ping", GetPing);
  }
}

}  // namespace shoal::restd
