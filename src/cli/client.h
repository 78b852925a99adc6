// What every command needs to talk to the controller: the configuration (from $SLURM_CONF or
// /etc/slurm/slurm.conf), a credential for the caller, and one blocking call.
#pragma once

#include <functional>
#include <string>

#include "acct.pb.h"
#include "common/result.h"
#include "common/rpc.h"
#include "common/slurm_conf.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct ClientContext {
  std::string conf_path;
  SlurmConf conf;
};

// Loads slurm.conf. Error text is ready to print after "<cmd>: error: ".
Result<ClientContext> LoadClientContext();

// Signs `request` for the calling user, sends it to the controller and returns its response.
// A non-zero Response.rc becomes an error Status carrying Response.error, so callers print
// "<cmd>: error: <message>" and exit 1. Connection failures read as Slurm's:
// "Unable to contact slurm controller (connect failure)".
Result<pb::Response> CallController(const ClientContext& ctx, const pb::Request& request);

// Same but returns the response even when rc != 0 (for per-job results).
Result<pb::Response> CallControllerRaw(const ClientContext& ctx, const pb::Request& request);
// CallController parsing into *out, which may live on an arena: a large answer (squeue) is
// then built and dropped without one malloc/free per string.
Status CallControllerInto(const ClientContext& ctx, const pb::Request& request, pb::Response* out);
// The serialized pb::Response parts of an answer, rc not checked, for a caller that decodes a
// large answer piecewise (squeue, one job at a time, with JobQueryRequest.stream): `part` gets
// each part in a buffer it may reuse, and says whether more follow. An answer in one frame is
// one part.
Status CallControllerParts(const ClientContext& ctx, const pb::Request& request,
                           const std::function<Result<bool>(std::string& part)>& part);

// A call whose connection the caller keeps afterwards (salloc/srun hold their allocation's
// connection open: the controller ends the allocation when it closes). timeout_ms < 0 waits as
// long as it takes. A non-zero Response.rc becomes an error, as with CallController.
struct HeldCall {
  RpcClient client;
  pb::Response response;
};
Result<HeldCall> CallControllerHeld(const ClientContext& ctx, const pb::Request& request,
                                    int timeout_ms);

// The accounting daemon's address from slurm.conf: AccountingStorageHost (default localhost)
// and AccountingStoragePort (default 6819); "" when AccountingStorageType is not
// accounting_storage/slurmdbd.
std::string DbdAddress(const SlurmConf& conf);

// Sends one request to shoaldbd (sacct, sacctmgr, sreport). A non-zero rc becomes an error
// carrying Response.error. Connection failures read as Slurm's: "Problem talking to the
// database: Connection refused".
Result<pb::DbdResponse> CallDbd(const ClientContext& ctx, const pb::DbdRequest& request);

// Signs `body` for the calling user (root: the cluster key; others: the auth agent).
Result<pb::Credential> SignForCaller(const ClientContext& ctx, const std::string& body);

}  // namespace shoal::cli
