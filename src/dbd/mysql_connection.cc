#include "dbd/mysql_connection.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <cstring>
#include <unordered_map>
#include <utility>

#include "dbd/sqlite_connection.h"  // IsPlainText

namespace shoal::dbd {
namespace {

constexpr const char* kDefaultDatabase = "slurm_acct_db";
// Connecting to a dead host fails fast; reads and writes get longer, as a large sacct query can
// keep the server busy for a while before its first row, but a hung server is still noticed.
constexpr unsigned int kConnectTimeoutS = 5;
constexpr unsigned int kReadWriteTimeoutS = 30;
constexpr size_t kMaxCachedStatements = 128;

// Errors after which the same request may succeed on a fresh connection: the server went away
// (or is restarting), or InnoDB chose this transaction as a deadlock victim.
bool IsRetryable(unsigned int err) {
  switch (err) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_SERVER_LOST_EXTENDED:
    case ER_SERVER_SHUTDOWN:
    case ER_CONNECTION_KILLED:
    case ER_LOCK_DEADLOCK:
    case ER_LOCK_WAIT_TIMEOUT:
      return true;
    default:
      return false;
  }
}

bool IsLostConnection(unsigned int err) {
  return IsRetryable(err) && err != ER_LOCK_DEADLOCK && err != ER_LOCK_WAIT_TIMEOUT;
}

enum class ColumnKind { kInt, kReal, kNull, kBytes };

ColumnKind KindOf(enum_field_types type) {
  switch (type) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONGLONG:
    case MYSQL_TYPE_YEAR:
      return ColumnKind::kInt;
    case MYSQL_TYPE_FLOAT:
    case MYSQL_TYPE_DOUBLE:
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL:
      return ColumnKind::kReal;
    case MYSQL_TYPE_NULL:
      return ColumnKind::kNull;
    default:
      return ColumnKind::kBytes;
  }
}

class MysqlConnection final : public SqlConnection {
 public:
  MysqlConnection(MYSQL* db, std::string where) : db_(db), where_(std::move(where)) {}
  ~MysqlConnection() override {
    ClearCache();
    mysql_close(db_);
  }

  Dialect dialect() const override { return Dialect::kMysql; }

  Status Exec(std::string_view sql, const std::vector<SqlValue>& params) override {
    // Without parameters (DDL, SET): the text protocol, which accepts every statement.
    if (params.empty()) return Raw(sql);
    return Run(sql, params, nullptr);
  }

  Result<std::vector<SqlRow>> Query(std::string_view sql,
                                    const std::vector<SqlValue>& params) override {
    std::vector<SqlRow> rows;
    Status st = Run(sql, params, &rows);
    if (!st.ok()) return st;
    return rows;
  }

  Status Begin() override { return Raw("START TRANSACTION"); }
  Status Commit() override { return Raw("COMMIT"); }
  Status Rollback() override { return Raw("ROLLBACK"); }

 private:
  Status Fail(unsigned int err, const char* text, std::string_view what) {
    std::string msg =
        where_ + ": " + std::string(what) + ": " + text + " (" + std::to_string(err) + ")";
    if (IsLostConnection(err)) broken_ = true;
    if (IsRetryable(err)) return Error(ErrorCode::kUnavailable, msg);
    return Error(ErrorCode::kInternal, msg);
  }
  Status FailConn(std::string_view what) { return Fail(mysql_errno(db_), mysql_error(db_), what); }
  Status FailStmt(MYSQL_STMT* stmt, std::string_view what) {
    return Fail(mysql_stmt_errno(stmt), mysql_stmt_error(stmt), what);
  }
  Status Broken() const {
    return Error(ErrorCode::kUnavailable, where_ + ": connection lost; reconnect");
  }

  void ClearCache() {
    for (auto& [text, stmt] : cache_) mysql_stmt_close(stmt);
    cache_.clear();
  }

  Status Raw(std::string_view sql) {
    if (broken_) return Broken();
    if (mysql_real_query(db_, sql.data(), sql.size()) != 0) return FailConn("query");
    // Drain any result so the connection is ready for the next statement.
    do {
      if (MYSQL_RES* res = mysql_store_result(db_)) mysql_free_result(res);
      if (mysql_errno(db_) != 0) return FailConn("query");
    } while (mysql_next_result(db_) == 0);
    return Status::Ok();
  }

  Result<MYSQL_STMT*> Prepare(std::string_view sql) {
    std::string key(sql);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCachedStatements) ClearCache();
    MYSQL_STMT* stmt = mysql_stmt_init(db_);
    if (stmt == nullptr) return FailConn("statement");
    if (mysql_stmt_prepare(stmt, sql.data(), sql.size()) != 0) {
      Status st = FailStmt(stmt, "prepare");
      mysql_stmt_close(stmt);
      return st;
    }
    cache_.emplace(std::move(key), stmt);
    return stmt;
  }

  Status Run(std::string_view sql, const std::vector<SqlValue>& params, std::vector<SqlRow>* out) {
    if (broken_) return Broken();
    auto prepared = Prepare(sql);
    if (!prepared.ok()) return prepared.status();
    MYSQL_STMT* stmt = *prepared;
    size_t n = params.size();
    if (mysql_stmt_param_count(stmt) != n) {
      return Error(ErrorCode::kInternal, where_ + ": statement expects " +
                                             std::to_string(mysql_stmt_param_count(stmt)) +
                                             " parameters, got " + std::to_string(n));
    }
    std::vector<MYSQL_BIND> binds(n);
    std::vector<long long> ints(n);
    std::vector<double> reals(n);
    std::vector<unsigned long> lengths(n);
    for (size_t i = 0; i < n; ++i) {
      MYSQL_BIND& b = binds[i];
      std::memset(&b, 0, sizeof b);
      const SqlValue& v = params[i];
      if (std::holds_alternative<std::monostate>(v)) {
        b.buffer_type = MYSQL_TYPE_NULL;
      } else if (auto* num = std::get_if<int64_t>(&v)) {
        ints[i] = *num;
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = &ints[i];
      } else if (auto* d = std::get_if<double>(&v)) {
        reals[i] = *d;
        b.buffer_type = MYSQL_TYPE_DOUBLE;
        b.buffer = &reals[i];
      } else {
        const std::string& s = std::get<std::string>(v);
        lengths[i] = s.size();
        b.buffer_type = IsPlainText(s) ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
        b.buffer = const_cast<char*>(s.data());
        b.buffer_length = s.size();
        b.length = &lengths[i];
      }
    }
    if (n > 0 && mysql_stmt_bind_param(stmt, binds.data()) != 0) return FailStmt(stmt, "bind");
    if (mysql_stmt_execute(stmt) != 0) return FailStmt(stmt, "execute");
    if (mysql_stmt_field_count(stmt) == 0) return Status::Ok();
    Status st = Fetch(stmt, out);
    mysql_stmt_free_result(stmt);
    return st;
  }

  Status Fetch(MYSQL_STMT* stmt, std::vector<SqlRow>* out) {
    if (mysql_stmt_store_result(stmt) != 0) return FailStmt(stmt, "fetch");
    MYSQL_RES* meta = mysql_stmt_result_metadata(stmt);
    if (meta == nullptr) return FailStmt(stmt, "metadata");
    unsigned int nf = mysql_num_fields(meta);
    MYSQL_FIELD* fields = mysql_fetch_fields(meta);
    std::vector<ColumnKind> kinds(nf);
    std::vector<MYSQL_BIND> binds(nf);
    std::vector<long long> ints(nf);
    std::vector<double> reals(nf);
    std::vector<unsigned long> lengths(nf);
    std::vector<my_bool> nulls(nf), errors(nf);
    for (unsigned int i = 0; i < nf; ++i) {
      kinds[i] = KindOf(fields[i].type);
      MYSQL_BIND& b = binds[i];
      std::memset(&b, 0, sizeof b);
      b.is_null = &nulls[i];
      b.error = &errors[i];
      b.length = &lengths[i];
      switch (kinds[i]) {
        case ColumnKind::kInt:
          b.buffer_type = MYSQL_TYPE_LONGLONG;
          b.buffer = &ints[i];
          break;
        case ColumnKind::kReal:
          b.buffer_type = MYSQL_TYPE_DOUBLE;
          b.buffer = &reals[i];
          break;
        default:
          // No buffer: the fetch reports the length, fetch_column then copies the bytes.
          b.buffer_type = MYSQL_TYPE_BLOB;
          break;
      }
    }
    mysql_free_result(meta);
    if (mysql_stmt_bind_result(stmt, binds.data()) != 0) return FailStmt(stmt, "bind result");
    while (true) {
      int rc = mysql_stmt_fetch(stmt);
      if (rc == MYSQL_NO_DATA) break;
      if (rc == 1) return FailStmt(stmt, "fetch");
      if (out == nullptr) continue;
      SqlRow row;
      row.reserve(nf);
      for (unsigned int i = 0; i < nf; ++i) {
        if (nulls[i] || kinds[i] == ColumnKind::kNull) {
          row.emplace_back(std::monostate{});
        } else if (kinds[i] == ColumnKind::kInt) {
          row.emplace_back(static_cast<int64_t>(ints[i]));
        } else if (kinds[i] == ColumnKind::kReal) {
          row.emplace_back(reals[i]);
        } else {
          std::string s(lengths[i], '\0');
          if (!s.empty()) {
            MYSQL_BIND col;
            std::memset(&col, 0, sizeof col);
            unsigned long got = 0;
            col.buffer_type = MYSQL_TYPE_BLOB;
            col.buffer = s.data();
            col.buffer_length = s.size();
            col.length = &got;
            if (mysql_stmt_fetch_column(stmt, &col, i, 0) != 0) {
              return FailStmt(stmt, "fetch column");
            }
          }
          row.emplace_back(std::move(s));
        }
      }
      out->push_back(std::move(row));
    }
    return Status::Ok();
  }

  MYSQL* db_;
  std::string where_;
  std::unordered_map<std::string, MYSQL_STMT*> cache_;
  bool broken_ = false;
};

}  // namespace

bool IsValidDatabaseName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

Result<std::unique_ptr<SqlConnection>> OpenMysql(const StorageConfig& config) {
  const std::string database = config.loc.empty() ? kDefaultDatabase : config.loc;
  if (!IsValidDatabaseName(database)) {
    return Error(ErrorCode::kInvalidArgument,
                 "accounting_storage/mysql: invalid StorageLoc '" + database +
                     "': a database name is 1 to 64 letters, digits or '_'");
  }
  std::string socket;
  std::string host = config.host.empty() ? "localhost" : config.host;
  if (host.starts_with("unix:")) {
    socket = host.substr(5);
  } else if (host.starts_with("/")) {
    socket = host;
  }
  std::string where =
      "accounting_storage/mysql (" +
      (socket.empty() ? host + ":" + std::to_string(config.port) : "socket " + socket) + ")";

  MYSQL* db = mysql_init(nullptr);
  if (db == nullptr) return Error(ErrorCode::kInternal, where + ": out of memory");
  unsigned int connect_timeout = kConnectTimeoutS;
  unsigned int rw_timeout = kReadWriteTimeoutS;
  my_bool reconnect = 0;  // a silent reconnect would lose an open transaction
  unsigned int protocol = socket.empty() ? MYSQL_PROTOCOL_TCP : MYSQL_PROTOCOL_SOCKET;
  mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_options(db, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
  mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
  mysql_options(db, MYSQL_OPT_RECONNECT, &reconnect);
  mysql_options(db, MYSQL_OPT_PROTOCOL, &protocol);
  mysql_options(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");

  const char* host_arg = socket.empty() ? host.c_str() : "localhost";
  if (mysql_real_connect(db, host_arg, config.user.empty() ? nullptr : config.user.c_str(),
                         config.pass.c_str(), nullptr, config.port,
                         socket.empty() ? nullptr : socket.c_str(), 0) == nullptr) {
    unsigned int err = mysql_errno(db);
    std::string msg =
        where + ": cannot connect: " + mysql_error(db) + " (" + std::to_string(err) + ")";
    mysql_close(db);
    if (err == ER_ACCESS_DENIED_ERROR || err == ER_DBACCESS_DENIED_ERROR) {
      return Error(ErrorCode::kAccessDenied, msg);
    }
    // Anything else at connect time (refused, unreachable, timeout) is worth retrying.
    return Error(ErrorCode::kUnavailable, msg);
  }
  auto conn = std::make_unique<MysqlConnection>(db, where + "/" + database);
  SqlConnection& sql = *conn;
  // Binary collation: names compare exactly, as in SQLite ("Alice" and "alice" differ).
  Status st = sql.Exec("CREATE DATABASE IF NOT EXISTS `" + database +
                       "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
  if (st.ok()) st = sql.Exec("USE `" + database + "`");
  if (!st.ok()) return st;
  return std::unique_ptr<SqlConnection>(std::move(conn));
}

}  // namespace shoal::dbd
