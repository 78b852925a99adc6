#include "dbd/server.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "common/log.h"
#include "dbd/assoc_admin.h"

namespace shoal::dbd {
namespace {

int64_t WallNow() { return static_cast<int64_t>(::time(nullptr)); }

std::string UserName(uint32_t uid) {
  struct passwd pw {};
  struct passwd* out = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &out) == 0 && out != nullptr) return pw.pw_name;
  return std::to_string(uid);
}

Result<uint32_t> UidOf(const std::string& name) {
  struct passwd pw {};
  struct passwd* out = nullptr;
  char buf[4096];
  if (::getpwnam_r(name.c_str(), &pw, buf, sizeof buf, &out) == 0 && out != nullptr)
    return static_cast<uint32_t>(pw.pw_uid);
  return Error(ErrorCode::kInvalidArgument, "unknown SlurmUser '" + name + "'");
}

pb::Response StatusResponse(const Status& st) { return ErrorResponse(st.code(), st.message()); }

}  // namespace

DbdServer::DbdServer(asio::io_context& io, DbdConf conf, ClusterKey key)
    : io_(io), conf_(std::move(conf)), key_(std::move(key)) {}

DbdServer::~DbdServer() { Shutdown(); }

Status DbdServer::Start() {
  auto uid = UidOf(conf_.slurm_user);
  if (!uid) return uid.status();
  slurm_user_uid_ = *uid;
  // slurmdbd has no StateSaveLocation: auth/jwt needs jwt_key= in slurmdbd.conf.
  auto jwt = LoadJwtVerifier(ParseJwtSettings(conf_.auth_alt_types, conf_.auth_alt_params, ""),
                             slurm_user_uid_);
  if (!jwt) return jwt.status();
  jwt_ = std::move(*jwt);
  std::string address = (conf_.dbd_addr.empty() ? std::string("0.0.0.0") : conf_.dbd_addr) + ":" +
                        std::to_string(conf_.dbd_port);
  auto server = RpcServer::Listen(
      io_, address,
      [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
             Responder respond) { HandleRequest(conn, cred, body, std::move(respond)); });
  if (!server)
    return Error(server.status().code(), "cannot listen on " + address + ": " + server.error());
  server_ = std::move(*server);
  storage_work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      storage_io_.get_executor());
  storage_thread_ = std::thread([this] {
    // Connect and load at once, so the first request does not pay for it; failure is logged
    // and retried on demand.
    if (Status st = EnsureStore(); !st.ok()) LogError("%s", st.message().c_str());
    storage_io_.run();
  });
  LogInfo("shoaldbd listening on %s, storage %s", address.c_str(), conf_.storage.type.c_str());
  return Status::Ok();
}

void DbdServer::Shutdown() {
  if (server_) server_->Stop();
  storage_work_.reset();
  if (storage_thread_.joinable()) {
    storage_io_.stop();
    storage_thread_.join();
  }
}

uint16_t DbdServer::port() const { return server_ ? server_->port() : 0; }

void DbdServer::HandleRequest(const RpcConnectionPtr&, const pb::Credential& wire_cred,
                              const std::string& body, Responder respond) {
  // HMAC, or a token (shoalrestd's /slurmdb requests) acting as its user.
  pb::Credential jwt_cred;
  auto authed = AuthenticateCredential(key_, jwt_, wire_cred, body, WallNow(), &jwt_cred);
  if (!authed) {
    respond(
        ErrorResponse(ErrorCode::kAuthFailure, "Protocol authentication error: " + authed.error()));
    return;
  }
  const pb::Credential& cred = **authed;
  pb::Request req;
  pb::DbdRequest dbd;
  if (!req.ParseFromString(body) || req.body_case() != pb::Request::kDbd ||
      !dbd.ParseFromString(req.dbd()) || dbd.body_case() == pb::DbdRequest::BODY_NOT_SET) {
    respond(ErrorResponse(ErrorCode::kProtocol, "malformed accounting request"));
    return;
  }
  Caller caller;
  caller.uid = cred.uid();
  caller.superuser = cred.uid() == 0 || cred.uid() == slurm_user_uid_;
  // The database work happens on the storage thread; the answer comes back here.
  asio::post(
      storage_io_, [this, caller, dbd = std::move(dbd), respond = std::move(respond)]() mutable {
        caller.name = UserName(caller.uid);
        pb::Response resp = Process(caller, dbd);
        asio::post(io_, [resp = std::move(resp), respond = std::move(respond)] { respond(resp); });
      });
}

Status DbdServer::EnsureStore() {
  if (store_) return Status::Ok();
  // Attempts are spaced so a dead server is not hammered by every request, but a request
  // arriving soon after a failed attempt waits for the next one instead of failing: a user's
  // sacct right after the database comes back must not see a stale "unavailable".
  auto now = std::chrono::steady_clock::now();
  auto next = last_connect_attempt_ + kConnectRetrySpacing;
  if (last_connect_attempt_.time_since_epoch().count() != 0 && now < next) {
    std::this_thread::sleep_for(next - now);  // the storage thread only; the event loop runs on
  }
  last_connect_attempt_ = std::chrono::steady_clock::now();
  auto sql = OpenSql(conf_.storage);
  if (!sql) return Error(ErrorCode::kUnavailable, "Database is unavailable: " + sql.error());
  auto store = AcctStore::Open(std::move(*sql));
  if (!store) return Error(store.status().code(), "Database is unavailable: " + store.error());
  auto state = (*store)->LoadAssocState();
  if (!state) return Error(state.status().code(), "Database is unavailable: " + state.error());
  store_ = std::move(*store);
  state_ = std::move(*state);
  state_loaded_ = true;
  LogInfo("connected to %s (schema version %d)", conf_.storage.type.c_str(),
          store_->schema_version());
  return Status::Ok();
}

Status DbdServer::Check(const Status& st) {
  if (st.code() == ErrorCode::kUnavailable) {
    LogError("database connection lost: %s", st.message().c_str());
    store_.reset();
  }
  return st;
}

bool DbdServer::IsOperator(const Caller& caller) const {
  if (caller.superuser) return true;
  for (const auto& u : state_.users) {
    if (u.name() == caller.name && !u.deleted())
      return u.admin_level() == "Administrator" || u.admin_level() == "Operator";
  }
  return false;
}

pb::Response DbdServer::Wrap(pb::DbdResponse body) {
  pb::Response resp;
  resp.set_dbd(body.SerializeAsString());
  return resp;
}

pb::Response DbdServer::Process(const Caller& caller, const pb::DbdRequest& req) {
  if (Status st = EnsureStore(); !st.ok()) return StatusResponse(st);
  switch (req.body_case()) {
    case pb::DbdRequest::kRecords:
      return Records(caller, req.records());
    case pb::DbdRequest::kRegisterCluster:
      return RegisterCluster(caller, req.register_cluster());
    case pb::DbdRequest::kAssocSnapshot:
      return Snapshot(caller, req.assoc_snapshot());
    case pb::DbdRequest::kJobQuery:
      return JobQuery(caller, req.job_query());
    case pb::DbdRequest::kAdmin:
      return Admin(caller, req.admin());
    case pb::DbdRequest::kShow:
      return Show(caller, req.show());
    case pb::DbdRequest::kUsage:
      return Usage(caller, req.usage());
    case pb::DbdRequest::BODY_NOT_SET:
      break;
  }
  return ErrorResponse(ErrorCode::kProtocol, "malformed accounting request");
}

pb::Response DbdServer::Records(const Caller& caller, const pb::AcctRecordBatch& batch) {
  if (!caller.superuser) return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  if (Status st = Check(store_->StoreRecords(batch)); !st.ok()) return StatusResponse(st);
  pb::DbdResponse out;
  out.mutable_records()->set_stored(
      static_cast<uint32_t>(batch.jobs_size() + batch.events_size() + batch.reservations_size()));
  return Wrap(std::move(out));
}

pb::Response DbdServer::RegisterCluster(const Caller& caller, const pb::ClusterRegister& req) {
  if (!caller.superuser) return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  const std::string& name = req.cluster().name();
  if (name.empty()) return ErrorResponse(ErrorCode::kInvalidArgument, "cluster name missing");
  AssocState next = state_;
  AssocChanges changes;
  int64_t now = WallNow();
  EnsureCluster(next, name, now, &changes);
  for (auto& c : next.clusters) {
    if (c.name() != name) continue;
    if (c.control_host() != req.cluster().control_host() ||
        c.control_port() != req.cluster().control_port() || c.tres() != req.cluster().tres() ||
        c.deleted()) {
      c.set_control_host(req.cluster().control_host());
      c.set_control_port(req.cluster().control_port());
      c.set_tres(req.cluster().tres());
      c.set_rpc_version(req.cluster().rpc_version());
      c.set_deleted(false);
      if (c.registered_time() == 0) c.set_registered_time(now);
      changes.clusters.push_back(c);
    }
  }
  if (!changes.empty()) {
    if (!changes.accounts.empty() || !changes.assocs.empty() || !changes.users.empty() ||
        !changes.qos.empty())
      ++next.version;
    if (Status st = Check(store_->SaveAssocChanges(changes, next.version)); !st.ok())
      return StatusResponse(st);
    state_ = std::move(next);
  }
  return Wrap(pb::DbdResponse());
}

pb::Response DbdServer::Snapshot(const Caller& caller, const pb::AssocSnapshotRequest& req) {
  if (!caller.superuser) return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  pb::DbdResponse out;
  auto* snap = out.mutable_assoc_snapshot();
  if (req.known_version() != 0 && req.known_version() == state_.version) {
    snap->set_unchanged(true);
  } else {
    *snap->mutable_snapshot() = SnapshotFor(state_, req.cluster());
  }
  return Wrap(std::move(out));
}

pb::Response DbdServer::JobQuery(const Caller& caller, pb::AcctJobQuery query) {
  // PrivateData=jobs: users see their own jobs only (operators and admins see all).
  if (conf_.Private("jobs") && !IsOperator(caller)) {
    query.clear_users();
    query.add_users(caller.name);
  }
  auto jobs = store_->QueryJobs(query, WallNow());
  if (!jobs) {
    Check(jobs.status());
    return StatusResponse(jobs.status());
  }
  pb::DbdResponse out;
  for (auto& j : *jobs) *out.mutable_job_query()->add_jobs() = std::move(j);
  return Wrap(std::move(out));
}

pb::Response DbdServer::Admin(const Caller& caller, const pb::AcctAdminRequest& req) {
  AssocState next = state_;
  AssocChanges changes;
  AdminCaller who;
  who.uid = caller.uid;
  who.name = caller.name;
  who.is_superuser = caller.superuser;
  auto result = ApplyAdmin(next, req, who, WallNow(), &changes);
  if (!result) return StatusResponse(result.status());
  if (!req.dry_run() && !changes.empty()) {
    if (Status st = Check(store_->SaveAssocChanges(changes, next.version)); !st.ok())
      return StatusResponse(st);
    state_ = std::move(next);
  }
  pb::DbdResponse out;
  *out.mutable_admin() = std::move(*result);
  return Wrap(std::move(out));
}

pb::Response DbdServer::Show(const Caller& caller, const pb::AcctShowRequest& req) {
  if ((req.entity() == "user" || req.entity() == "users") && conf_.Private("users") &&
      !IsOperator(caller))
    return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  if (req.entity() == "event" || req.entity() == "events" || req.entity() == "reservation" ||
      req.entity() == "reservations") {
    std::vector<std::string> clusters;
    int64_t start = 0, end = WallNow() + 1;
    for (const auto& kv : req.where()) {
      if (kv.key() == "cluster" || kv.key() == "clusters") clusters.push_back(kv.value());
    }
    pb::DbdResponse out;
    if (req.entity().starts_with("event")) {
      auto events = store_->QueryEvents(clusters, start, end);
      if (!events) {
        Check(events.status());
        return StatusResponse(events.status());
      }
      for (auto& e : *events) *out.mutable_show()->add_events() = std::move(e);
    } else {
      auto resvs = store_->QueryReservations(clusters, start, end);
      if (!resvs) {
        Check(resvs.status());
        return StatusResponse(resvs.status());
      }
      for (auto& r : *resvs) *out.mutable_show()->add_reservations() = std::move(r);
    }
    return Wrap(std::move(out));
  }
  auto shown = ShowAdmin(state_, req);
  if (!shown) return StatusResponse(shown.status());
  pb::DbdResponse out;
  *out.mutable_show() = std::move(*shown);
  return Wrap(std::move(out));
}

pb::Response DbdServer::Usage(const Caller& caller, const pb::AcctUsageQuery& req) {
  if (conf_.Private("usage") && !IsOperator(caller))
    return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  auto usage = store_->QueryUsage(req, WallNow());
  if (!usage) {
    Check(usage.status());
    return StatusResponse(usage.status());
  }
  usage->clear_clusters();  // the live cluster rows come from the state, with their TRES
  for (const auto& c : state_.clusters) {
    if (c.deleted()) continue;
    bool wanted = req.clusters().empty();
    for (const auto& n : req.clusters()) wanted |= n == c.name();
    if (wanted) *usage->add_clusters() = c;
  }
  for (const auto& a : state_.assocs) {
    if (!a.deleted()) *usage->add_assocs() = a;
  }
  pb::DbdResponse out;
  *out.mutable_usage() = std::move(*usage);
  return Wrap(std::move(out));
}

}  // namespace shoal::dbd
