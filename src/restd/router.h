// shoalrestd's request routing and the API every endpoint file uses.
//
// How to add endpoints (H4's /slurmdb/ files follow the same pattern as slurm_endpoints.cc):
//
//   // src/restd/slurmdb_endpoints.cc
//   #include "restd/router.h"
//   namespace shoal::restd {
//   void RegisterSlurmdbEndpoints(Router& router) {
//     // Fields the response schema requires ("required" in the OpenAPI document): added to
//     // every error answer of the route so errors validate too.
//     const json jobs = {{"jobs", json::array()}};
//     for (const std::string& v : ApiVersions()) {      // "v0.0.44", plus accepted aliases
//       router.Add(Method::kGet, "/slurmdb/" + v + "/job/{job_id}",
//                  [](const HttpRequest& req, Backend& backend) {
//                    json resp = NewResponse(req);      // meta + empty errors/warnings
//                    pb::DbdRequest q; ...              // req.params.at("job_id"), req.Query("x")
//                    auto r = backend.CallDbd(req.caller, q);
//                    if (!r) return ErrorReply(req, r.status(), "slurmdbd_jobs_get");
//                    resp["jobs"] = ...;
//                    return JsonReply(200, std::move(resp));
//                  },
//                  jobs);
//     }
//   }
//   }  // namespace shoal::restd
//
// Handlers run on one of the HTTP server's worker threads and may block: `backend` belongs to
// that thread (one connection to shoalctld and one to shoaldbd per thread, reconnected on
// failure). Backend calls act as the authenticated HTTP user: a unix-socket peer's uid/gid
// (restd signs a cluster-key credential for it) or the JWT (Credential.jwt/jwt_user), which the
// daemon verifies; the daemon's refusal comes back as an error Status (kAuthFailure -> 401,
// kAccessDenied -> 403, ...) that ErrorReply turns into a slurmrestd-style body. A handler
// never throws: nlohmann::json access that can throw must be guarded (use the helpers in
// json_common.h, or catch at the handler). Paths match with or without a trailing '/'.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"
#include "common/rpc.h"
#include "shoal.pb.h"

namespace shoal::restd {

using json = nlohmann::json;

enum class Method { kGet, kPost, kDelete, kPut, kPatch, kHead, kOther };
Method ParseMethod(std::string_view name);

// Who is calling, settled by the HTTP layer before any handler runs.
struct Caller {
  bool local = false;  // unix socket: uid/gid from SO_PEERCRED
  uint32_t uid = 0, gid = 0;
  std::string jwt;       // TCP: X-SLURM-USER-TOKEN or "Authorization: Bearer"
  std::string jwt_user;  // X-SLURM-USER-NAME (may be empty)
  std::string user;      // best-effort name for meta.client.user and rate limiting
  std::string source;    // meta.client.source: "unix:<path>" or the peer "[ip]:port"
};

struct HttpRequest {
  Method method = Method::kGet;
  std::string path;                           // without the query string
  std::map<std::string, std::string> params;  // path parameters: "{job_id}" -> "123"
  std::map<std::string, std::string> query;   // ?update_time=...&flags=... (last value wins)
  std::string body;
  std::string content_type;
  Caller caller;
  std::string cluster;  // ClusterName, for meta.slurm.cluster

  // The query value or nullopt.
  std::optional<std::string> Query(const std::string& key) const;
  // The path parameter or "" (the router always fills the parameters its pattern names).
  const std::string& Param(const std::string& key) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Calls shoalctld / shoaldbd as the caller. One per worker thread (not thread-safe).
class Backend {
 public:
  virtual ~Backend() = default;
  // rc != 0 in the answer becomes an error Status carrying Response.error; connection failures
  // are kUnavailable.
  virtual Result<pb::Response> CallController(const Caller& caller, const pb::Request& request) = 0;
  // Same, keeping a non-zero rc in the answer (per-job results, e.g. kill_jobs).
  virtual Result<pb::Response> CallControllerRaw(const Caller& caller,
                                                 const pb::Request& request) = 0;
  virtual Result<pb::DbdResponse> CallDbd(const Caller& caller, const pb::DbdRequest& request) = 0;
  // The cluster name (ClusterName in slurm.conf) for meta.slurm.cluster.
  virtual std::string ClusterName() const = 0;
};

using Handler = std::function<HttpResponse(const HttpRequest& req, Backend& backend)>;

class Router {
 public:
  // pattern: "/slurm/v0.0.44/job/{job_id}"; a "{name}" segment matches one path segment.
  // `defaults`: the fields the route's response schema requires (e.g. {"jobs": [], ...}); they
  // are added to every error answer of the route (401, 429, handler errors) that lacks them, so
  // errors validate against the same schema as successes.
  void Add(Method method, const std::string& pattern, Handler handler,
           json defaults = json::object());

  struct Match {
    const Handler* handler = nullptr;  // null: see status
    const json* defaults = nullptr;
    int status = 200;  // 404 no such path, 405 path exists but not the method
    std::map<std::string, std::string> params;
  };
  Match Find(Method method, std::string_view path) const;

 private:
  struct Route {
    Method method;
    std::vector<std::string> segments;
    Handler handler;
    json defaults;
  };
  std::vector<Route> routes_;
};

// The API versions served: "v0.0.44" first, then the aliases accepted at the same shapes.
const std::vector<std::string>& ApiVersions();

// --- Response helpers (json_common.cc) ---------------------------------------------------------

// {"meta": {...}, "errors": [], "warnings": []} for this request.
json NewResponse(const HttpRequest& req);
HttpResponse JsonReply(int status, const json& body);
// Appends {"error", "error_number", "description", "source"} to resp["errors"].
void AddError(json& resp, int slurm_errno, const std::string& error, const std::string& description,
              const std::string& source);
void AddWarning(json& resp, const std::string& description, const std::string& source);
// A Status from a backend call as an HTTP error answer (never 200) with the error in "errors".
HttpResponse ErrorReply(const HttpRequest& req, const Status& status, const std::string& source);
// Same, adding the error to an answer being built (keeps what `resp` holds so far).
HttpResponse ErrorReply(json resp, const Status& status, const std::string& source);
// An HTTP status with one error (e.g. 400 "Unable to parse JSON").
HttpResponse ErrorReply(const HttpRequest& req, int http_status, int slurm_errno,
                        const std::string& error, const std::string& source);
// HTTP status and Slurm errno for a Shoal error code.
int HttpStatusFor(ErrorCode code);
int SlurmErrnoFor(ErrorCode code);
// Adds the `defaults` fields an error answer lacks (see Router::Add).
HttpResponse WithDefaults(HttpResponse response, const json& defaults);
// Parses req.body as a JSON object; on failure nullopt, with the 400 answer in *error.
std::optional<json> ParseJsonBody(const HttpRequest& req, HttpResponse* error);

// --- Endpoint sets (each in its own file; main registers them all) ---------------------------
void RegisterSlurmEndpoints(Router& router);    // /slurm/vX/...  (slurm_endpoints.cc, H3)
void RegisterSlurmdbEndpoints(Router& router);  // /slurmdb/vX/... (slurmdb_endpoints.cc, H4)
void RegisterOpenApiEndpoints(Router& router);  // /openapi/v3 and friends (openapi.cc)
// The embedded OpenAPI document.
std::string_view OpenApiDocument();

}  // namespace shoal::restd
