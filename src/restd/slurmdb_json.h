// /slurmdb/v0.0.44/ JSON: accounting records (acct.proto) as slurmrestd's v0.0.44 schemas
// (v0.0.44_job, _account, _user, _assoc, _qos, _cluster_rec, _tres), and the query parameters
// of the GET endpoints as shoaldbd requests. Pure: no I/O, no clock (callers pass `now`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "acct.pb.h"
#include "common/result.h"

namespace shoal::restd::slurmdb {

using json = nlohmann::json;
// uid -> user name (kill_request_user); may return "".
using UidName = std::function<std::string(uint32_t)>;

// "cpu=2,mem=1G,node=1,gres/gpu=1" -> [{"type":"cpu","name":"","id":1,"count":2}, ...]; memory
// counts in MB as Slurm's TRES do.
json TresList(const std::string& spec);
// The TRES catalog (sacctmgr show tres) as a v0.0.44_tres_list.
json TresCatalog(const google::protobuf::RepeatedPtrField<std::string>& names);
// Raw wait status -> v0.0.44_process_exit_code_verbose; pending: {"status":["PENDING"]}.
json ExitCode(int32_t wait_status, bool ended);

json JobJson(const pb::AcctJob& job, int64_t now, const UidName& uid_name);
json StepJson(const pb::AcctJob& job, const pb::AcctStep& step, int64_t now,
              const UidName& uid_name);
json AssocShort(const pb::AcctAssoc& a);
json AssocJson(const pb::AcctAssoc& a);
// Coordinators are the users whose coordinator_of lists the account; associations are shown
// when `show` carries them (with_assoc).
json AccountJson(const pb::AcctAccount& account, const pb::AcctShowResponse& show, bool with_assocs,
                 bool with_coords);
json UserJson(const pb::AcctUser& user, const pb::AcctShowResponse& show, bool with_assocs,
              bool with_coords);
json QosJson(const pb::AcctQos& q);
json ClusterJson(const pb::AcctCluster& c);

// GET /slurmdb/v0.0.44/jobs/ query parameters -> a shoaldbd job query (sacct's), for `cluster`
// unless the caller names clusters. Times are unix seconds; lists are comma separated.
Result<pb::AcctJobQuery> JobQueryFromParams(const std::map<std::string, std::string>& query,
                                            const std::string& cluster);

// The query parameters of accounts/users/associations/qos GETs as a `sacctmgr show` request.
Result<pb::AcctShowRequest> ShowFromParams(const std::string& entity,
                                           const std::map<std::string, std::string>& query);
// Whether a boolean-ish query flag is on ("with_assocs", "with_assocs=true", "=1", "=yes").
bool FlagOn(const std::map<std::string, std::string>& query, const std::string& key);

// POST bodies (v0.0.44_openapi_accounts_resp, _users_resp, _assocs_resp, _slurmdbd_qos_resp)
// as sacctmgr add/modify requests: one "add" per new record plus "modify" for existing ones is
// decided by the caller; this gives the add requests. Errors name the offending field.
Result<std::vector<pb::AcctAdminRequest>> AddRequestsFromBody(const std::string& entity,
                                                              const json& body);

}  // namespace shoal::restd::slurmdb
