// A small SQL connection interface with two drivers: SQLite (the embedded default) and
// MariaDB/MySQL (MariaDB Connector/C). Every value reaches the database as a bound parameter
// ("?" placeholders), never spliced into the SQL text, so names from users cannot change a
// statement. Connections are used by one thread at a time (the daemon's storage thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace shoal::dbd {

enum class Dialect { kSqlite, kMysql };

// NULL, integer, real or text.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;
using SqlRow = std::vector<SqlValue>;

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  virtual Dialect dialect() const = 0;
  // Runs one statement with bound parameters. ErrorCode::kUnavailable when the server is gone
  // (the caller reconnects and retries), kInternal for other database errors (message included).
  virtual Status Exec(std::string_view sql, const std::vector<SqlValue>& params = {}) = 0;
  virtual Result<std::vector<SqlRow>> Query(std::string_view sql,
                                            const std::vector<SqlValue>& params = {}) = 0;
  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  virtual Status Rollback() = 0;
};

// Where the data lives (slurmdbd.conf's Storage* keys).
struct StorageConfig {
  std::string type;  // "accounting_storage/sqlite" or "accounting_storage/mysql"
  std::string host;  // mysql: StorageHost (default localhost); "unix:/path" or a socket path
  uint32_t port = 3306;
  std::string user;
  std::string pass;
  std::string loc;  // sqlite: the database file; mysql: the database name (default slurm_acct_db)
};

// Opens a connection; errors name the backend and what failed.
Result<std::unique_ptr<SqlConnection>> OpenSql(const StorageConfig& config);

}  // namespace shoal::dbd
