// Response envelopes (meta/errors/warnings), error mapping and the no-val helpers.
#include "restd/json_common.h"

#include <cmath>

#include "common/units.h"
#include "restd/router.h"

namespace shoal::restd {

json NoVal(int64_t v) { return json{{"set", true}, {"infinite", false}, {"number", v}}; }
json NoValUnset() { return json{{"set", false}, {"infinite", false}, {"number", 0}}; }
json NoValInfinite() { return json{{"set", false}, {"infinite", true}, {"number", 0}}; }

json NoValU32(uint32_t v) {
  if (v == kTimeNoVal) return NoValUnset();
  if (v == kTimeInfinite) return NoValInfinite();
  return NoVal(v);
}

json NoValTime(int64_t unix_seconds) {
  return unix_seconds > 0 ? NoVal(unix_seconds) : NoValUnset();
}

json NoValDouble(double v) {
  // NaN (0/0 usage shares) has no JSON form: unset, as Slurm prints it.
  if (std::isnan(v)) return json{{"set", false}, {"infinite", false}, {"number", 0.0}};
  if (std::isinf(v)) return json{{"set", false}, {"infinite", true}, {"number", 0.0}};
  return json{{"set", true}, {"infinite", false}, {"number", v}};
}

json CsvList(const std::string& csv) {
  json out = json::array();
  size_t i = 0;
  while (i <= csv.size()) {
    size_t j = csv.find(',', i);
    if (j == std::string::npos) j = csv.size();
    if (j > i) out.push_back(csv.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

json StringList(const std::vector<std::string>& items) {
  json out = json::array();
  for (const auto& s : items) out.push_back(s);
  return out;
}

namespace {
const json* Field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}
}  // namespace

std::optional<int64_t> ReadInt(const json& obj, const char* key, bool* bad,
                               int64_t infinite_value) {
  const json* v = Field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) return static_cast<int64_t>(v->get<double>());
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0') return n;
  }
  if (v->is_object()) {
    bool b = false;
    if (auto inf = ReadBool(*v, "infinite", &b); inf && *inf) return infinite_value;
    auto set = ReadBool(*v, "set", &b);
    if (set && !*set) return std::nullopt;
    auto n = ReadInt(*v, "number", &b);
    if (!b && n) return n;
  }
  *bad = true;
  return std::nullopt;
}

std::optional<std::string> ReadString(const json& obj, const char* key, bool* bad) {
  const json* v = Field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_integer()) return std::to_string(v->get<int64_t>());
  *bad = true;
  return std::nullopt;
}

std::optional<bool> ReadBool(const json& obj, const char* key, bool* bad) {
  const json* v = Field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  *bad = true;
  return std::nullopt;
}

std::optional<std::string> ReadStringOrList(const json& obj, const char* key, bool* bad, char sep) {
  const json* v = Field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_array()) {
    std::string out;
    for (const auto& item : *v) {
      if (!item.is_string()) {
        *bad = true;
        return std::nullopt;
      }
      if (!out.empty()) out.push_back(sep);
      out += item.get<std::string>();
    }
    return out;
  }
  *bad = true;
  return std::nullopt;
}

// --- envelopes --------------------------------------------------------------------------------

json NewResponse(const HttpRequest& req) {
  json meta = {
      {"plugin",
       {{"type", ""},
        {"name", ""},
        {"data_parser", "data_parser/v0.0.44"},
        {"accounting_storage", ""}}},
      {"client", {{"source", req.caller.source}, {"user", req.caller.user}, {"group", ""}}},
      {"command", json::array()},
      {"slurm",
       {{"version", {{"major", "25"}, {"micro", "0"}, {"minor", "11"}}},
        {"release", "25.11.0"},
        {"cluster", req.cluster}}},
  };
  return json{{"meta", std::move(meta)}, {"errors", json::array()}, {"warnings", json::array()}};
}

HttpResponse JsonReply(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  // Invalid UTF-8 from a job name or script must not throw: replace it.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

void AddError(json& resp, int slurm_errno, const std::string& error, const std::string& description,
              const std::string& source) {
  if (!resp.contains("errors") || !resp["errors"].is_array()) resp["errors"] = json::array();
  resp["errors"].push_back({{"error", error},
                            {"error_number", slurm_errno},
                            {"description", description},
                            {"source", source}});
}

void AddWarning(json& resp, const std::string& description, const std::string& source) {
  if (!resp.contains("warnings") || !resp["warnings"].is_array()) resp["warnings"] = json::array();
  resp["warnings"].push_back({{"description", description}, {"source", source}});
}

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return 200;
    case ErrorCode::kAuthFailure:
      return 401;
    case ErrorCode::kAccessDenied:
    case ErrorCode::kReservationAccess:
    case ErrorCode::kGroupNotPermitted:
      return 403;
    case ErrorCode::kInvalidJobId:
    case ErrorCode::kInvalidNodeName:
    case ErrorCode::kInvalidPartition:
    case ErrorCode::kInvalidStep:
      return 404;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kNotSupported:
    case ErrorCode::kDisabled:
      return 501;
    case ErrorCode::kInternal:
    case ErrorCode::kIoError:
    case ErrorCode::kProtocol:
      return 500;
    default:
      // The request was understood but the controller refused it (bad value, limits, state).
      return 400;
  }
}

// Slurm's slurm_errno.h numbers, so clients that switch on error_number keep working.
int SlurmErrnoFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return 0;
    case ErrorCode::kInvalidArgument:
      return 22;  // EINVAL
    case ErrorCode::kAccessDenied:
      return 2002;
    case ErrorCode::kInvalidJobId:
      return 2017;
    case ErrorCode::kInvalidPartition:
      return 2000;
    case ErrorCode::kInvalidNodeName:
      return 2018;
    case ErrorCode::kAlreadyDone:
      return 2021;
    case ErrorCode::kNodesBusy:
      return 2016;
    case ErrorCode::kRequestedConfigUnavailable:
      return 2014;
    case ErrorCode::kTimeLimitExceeded:
      return 2051;
    case ErrorCode::kAuthFailure:
      return 1007;  // SLURM_PROTOCOL_AUTHENTICATION_ERROR
    case ErrorCode::kUnavailable:
      return 1001;  // SLURM_COMMUNICATIONS_CONNECTION_ERROR
    case ErrorCode::kTransitionState:
      return 2020;
    case ErrorCode::kNotSupported:
      return 2036;
    case ErrorCode::kDisabled:
      return 2037;
    case ErrorCode::kInvalidFeature:
      return 2029;
    default:
      return -1;  // SLURM_ERROR
  }
}

HttpResponse ErrorReply(json resp, const Status& status, const std::string& source) {
  AddError(resp, SlurmErrnoFor(status.code()), status.message(), status.message(), source);
  int http = HttpStatusFor(status.code());
  return JsonReply(http == 200 ? 500 : http, resp);
}

HttpResponse ErrorReply(const HttpRequest& req, const Status& status, const std::string& source) {
  return ErrorReply(NewResponse(req), status, source);
}

HttpResponse ErrorReply(const HttpRequest& req, int http_status, int slurm_errno,
                        const std::string& error, const std::string& source) {
  json resp = NewResponse(req);
  AddError(resp, slurm_errno, error, error, source);
  return JsonReply(http_status, resp);
}

HttpResponse WithDefaults(HttpResponse response, const json& defaults) {
  if (response.status == 200 || !defaults.is_object() || defaults.empty()) return response;
  json body = json::parse(response.body, nullptr, false);
  if (!body.is_object()) return response;
  bool added = false;
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    if (!body.contains(it.key())) {
      body[it.key()] = it.value();
      added = true;
    }
  }
  return added ? JsonReply(response.status, body) : response;
}

std::optional<json> ParseJsonBody(const HttpRequest& req, HttpResponse* error) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    // ESLURM_REST_FAIL_PARSING
    *error = ErrorReply(req, 400, 9001, "Unable to parse JSON request body", "ParseJsonBody");
    return std::nullopt;
  }
  return body;
}

}  // namespace shoal::restd
