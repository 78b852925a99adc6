// The accounting store: schema, migrations and every read and write shoaldbd makes, in SQL
// common to SQLite and MariaDB/MySQL (dialect differences are confined to store.cc).
//
// Writes are idempotent: a job is keyed by (cluster, job id, submit time), a step by its job's
// key and step id, an event by (cluster, node, start time), a reservation by (cluster, id, start
// time); writing the same record twice leaves one row. A batch is one transaction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"
#include "dbd/assoc_state.h"
#include "dbd/sql.h"

namespace shoal::dbd {

// The schema version this build writes; Open migrates older databases up to it and refuses a
// newer one ("database schema version N is newer than this shoaldbd (M)").
inline constexpr int kSchemaVersion = 2;

class AcctStore {
 public:
  // Creates the schema on an empty database, migrates an older one.
  static Result<std::unique_ptr<AcctStore>> Open(std::unique_ptr<SqlConnection> sql);
  ~AcctStore();

  int schema_version() const;

  // Usage records from a controller (one transaction).
  Status StoreRecords(const pb::AcctRecordBatch& batch);

  // sacct. `now` resolves end = 0. Jobs come ordered by job id (array tasks by task id), each
  // with its steps (in step id order) when query.include_steps().
  Result<std::vector<pb::AcctJob>> QueryJobs(const pb::AcctJobQuery& query, int64_t now);

  // sreport: jobs, node events and reservations overlapping [start, end).
  Result<pb::AcctUsageResponse> QueryUsage(const pb::AcctUsageQuery& query, int64_t now);

  // sacctmgr show event / reservation.
  Result<std::vector<pb::AcctEvent>> QueryEvents(const std::vector<std::string>& clusters,
                                                 int64_t start, int64_t end);
  Result<std::vector<pb::AcctReservation>> QueryReservations(
      const std::vector<std::string>& clusters, int64_t start, int64_t end);

  // Associations, users, accounts, QOS, clusters: all of them, deleted ones included.
  Result<AssocState> LoadAssocState();
  // Writes the changed rows and the new version (one transaction).
  Status SaveAssocChanges(const AssocChanges& changes, uint64_t version);

 private:
  explicit AcctStore(std::unique_ptr<SqlConnection> sql);
  Status Migrate();
  std::unique_ptr<SqlConnection> sql_;
  int schema_version_ = 0;
};

}  // namespace shoal::dbd
