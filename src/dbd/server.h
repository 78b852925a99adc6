// shoaldbd's service: signed requests in on the network thread, every database call on one
// storage thread (which owns the store and the association state), answers back on the network
// thread. While the database is unreachable the daemon stays up, answers "Database is
// unavailable" (controllers keep their records and retry), and reconnects on the next request.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "acct.pb.h"
#include "common/auth.h"
#include "common/jwt_auth.h"
#include "common/rpc.h"
#include "dbd/assoc_state.h"
#include "dbd/dbd_conf.h"
#include "dbd/store.h"

namespace shoal::dbd {

class DbdServer {
 public:
  DbdServer(asio::io_context& io, DbdConf conf, ClusterKey key);
  ~DbdServer();
  // Opens the listener and starts the storage thread (the database may still be down).
  Status Start();
  void Shutdown();
  uint16_t port() const;

 private:
  struct Caller {
    uint32_t uid = 0;
    std::string name;
    bool superuser = false;  // root or SlurmUser
  };
  void HandleRequest(const RpcConnectionPtr& conn, const pb::Credential& cred,
                     const std::string& body, Responder respond);
  // Storage thread only.
  pb::Response Process(const Caller& caller, const pb::DbdRequest& req);
  Status EnsureStore();
  Status Check(const Status& st);  // drops the store after a lost connection
  bool IsOperator(const Caller& caller) const;
  pb::Response Records(const Caller& caller, const pb::AcctRecordBatch& batch);
  pb::Response RegisterCluster(const Caller& caller, const pb::ClusterRegister& req);
  pb::Response Snapshot(const Caller& caller, const pb::AssocSnapshotRequest& req);
  pb::Response JobQuery(const Caller& caller, pb::AcctJobQuery query);
  pb::Response Admin(const Caller& caller, const pb::AcctAdminRequest& req);
  pb::Response Show(const Caller& caller, const pb::AcctShowRequest& req);
  pb::Response Usage(const Caller& caller, const pb::AcctUsageQuery& req);
  pb::Response Wrap(pb::DbdResponse body);

  asio::io_context& io_;
  DbdConf conf_;
  ClusterKey key_;
  JwtVerifier jwt_;  // key empty: auth/jwt off
  uint32_t slurm_user_uid_ = 0;
  std::unique_ptr<RpcServer> server_;
  asio::io_context storage_io_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> storage_work_;
  std::thread storage_thread_;
  // Owned by the storage thread.
  std::unique_ptr<AcctStore> store_;
  AssocState state_;
  bool state_loaded_ = false;
  static constexpr std::chrono::milliseconds kConnectRetrySpacing{250};
  std::chrono::steady_clock::time_point last_connect_attempt_{};
};

}  // namespace shoal::dbd
