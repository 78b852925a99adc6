#include "dbd/sqlite_connection.h"

#include <sqlite3.h>

#include <unordered_map>
#include <utility>

namespace shoal::dbd {
namespace {

constexpr int kBusyTimeoutMs = 5000;
// Prepared statements are cached by their text; queries with variable IN lists produce many
// distinct texts, so the cache is simply dropped when it grows past this.
constexpr size_t kMaxCachedStatements = 128;

class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override {
    ClearCache();
    sqlite3_close_v2(db_);
  }

  Dialect dialect() const override { return Dialect::kSqlite; }

  Status Exec(std::string_view sql, const std::vector<SqlValue>& params) override {
    return Run(sql, params, nullptr);
  }

  Result<std::vector<SqlRow>> Query(std::string_view sql,
                                    const std::vector<SqlValue>& params) override {
    std::vector<SqlRow> rows;
    Status st = Run(sql, params, &rows);
    if (!st.ok()) return st;
    return rows;
  }

  // IMMEDIATE takes the write lock up front: a deferred transaction that later needs to write
  // can fail with SQLITE_BUSY without waiting for the busy timeout.
  Status Begin() override { return Run("BEGIN IMMEDIATE", {}, nullptr); }
  Status Commit() override { return Run("COMMIT", {}, nullptr); }
  Status Rollback() override { return Run("ROLLBACK", {}, nullptr); }

 private:
  Status Fail(int rc, std::string_view what) const {
    std::string msg = "sqlite: " + std::string(what) + ": " + sqlite3_errmsg(db_);
    int primary = rc & 0xff;
    // Another process holds the lock past the busy timeout: worth retrying later.
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
      return Error(ErrorCode::kUnavailable, msg);
    }
    if (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN) {
      return Error(ErrorCode::kIoError, msg);
    }
    return Error(ErrorCode::kInternal, msg);
  }

  void ClearCache() {
    for (auto& [text, stmt] : cache_) sqlite3_finalize(stmt);
    cache_.clear();
  }

  Result<sqlite3_stmt*> Prepare(std::string_view sql) {
    std::string key(sql);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCachedStatements) ClearCache();
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
    if (rc != SQLITE_OK) return Fail(rc, "prepare");
    if (stmt == nullptr) return Error(ErrorCode::kInternal, "sqlite: empty statement");
    // One statement per call: trailing text would silently not run.
    for (const char* p = tail; p != nullptr && p < sql.data() + sql.size(); ++p) {
      if (*p != ' ' && *p != '\n' && *p != '\t' && *p != ';') {
        sqlite3_finalize(stmt);
        return Error(ErrorCode::kInternal, "sqlite: more than one statement in one call");
      }
    }
    cache_.emplace(std::move(key), stmt);
    return stmt;
  }

  Status Bind(sqlite3_stmt* stmt, const std::vector<SqlValue>& params) {
    if (sqlite3_bind_parameter_count(stmt) != static_cast<int>(params.size())) {
      return Error(ErrorCode::kInternal, "sqlite: statement expects " +
                                             std::to_string(sqlite3_bind_parameter_count(stmt)) +
                                             " parameters, got " + std::to_string(params.size()));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      int idx = static_cast<int>(i) + 1;
      const SqlValue& v = params[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::monostate>(v)) {
        rc = sqlite3_bind_null(stmt, idx);
      } else if (auto* n = std::get_if<int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt, idx, *n);
      } else if (auto* d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(stmt, idx, *d);
      } else {
        const std::string& s = std::get<std::string>(v);
        rc = IsPlainText(s)
                 ? sqlite3_bind_text64(stmt, idx, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8)
                 : sqlite3_bind_blob64(stmt, idx, s.data(), s.size(), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return Fail(rc, "bind");
    }
    return Status::Ok();
  }

  static SqlValue Column(sqlite3_stmt* stmt, int i) {
    switch (sqlite3_column_type(stmt, i)) {
      case SQLITE_INTEGER:
        return static_cast<int64_t>(sqlite3_column_int64(stmt, i));
      case SQLITE_FLOAT:
        return sqlite3_column_double(stmt, i);
      case SQLITE_NULL:
        return std::monostate{};
      default: {
        // Text and blob alike: the raw bytes, with embedded NULs kept.
        const void* p = sqlite3_column_blob(stmt, i);
        int n = sqlite3_column_bytes(stmt, i);
        return std::string(static_cast<const char*>(p), p ? static_cast<size_t>(n) : 0);
      }
    }
  }

  Status Run(std::string_view sql, const std::vector<SqlValue>& params, std::vector<SqlRow>* out) {
    auto prepared = Prepare(sql);
    if (!prepared.ok()) return prepared.status();
    sqlite3_stmt* stmt = *prepared;
    Status st = Bind(stmt, params);
    while (st.ok()) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        st = Fail(rc, "step");
        break;
      }
      if (out == nullptr) continue;
      int n = sqlite3_column_count(stmt);
      SqlRow row;
      row.reserve(n);
      for (int i = 0; i < n; ++i) row.push_back(Column(stmt, i));
      out->push_back(std::move(row));
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return st;
  }

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenSqlite(const std::string& path) {
  if (path.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "accounting_storage/sqlite: StorageLoc (the database file) is not set");
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = "accounting_storage/sqlite: cannot open " + path + ": " +
                      (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close_v2(db);
    return Error(ErrorCode::kIoError, msg);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto conn = std::make_unique<SqliteConnection>(db);
  SqlConnection& sql = *conn;  // the interface carries the default arguments
  // WAL lets sacct read while records are written; FULL syncs the WAL at every commit, so an
  // acknowledged batch survives power loss, not only a crash of the daemon.
  auto mode = sql.Query("PRAGMA journal_mode=WAL");
  if (!mode.ok()) {
    return Error(mode.status().code(),
                 "accounting_storage/sqlite: " + path + ": " + mode.status().message());
  }
  if (mode->empty() || (*mode)[0].empty() || !std::holds_alternative<std::string>((*mode)[0][0]) ||
      std::get<std::string>((*mode)[0][0]) != "wal") {
    return Error(ErrorCode::kIoError,
                 "accounting_storage/sqlite: " + path + ": cannot enable WAL journal mode");
  }
  for (const char* pragma : {"PRAGMA synchronous=FULL", "PRAGMA foreign_keys=OFF"}) {
    Status st = sql.Exec(pragma);
    if (!st.ok()) {
      return Error(st.code(), "accounting_storage/sqlite: " + path + ": " + st.message());
    }
  }
  return std::unique_ptr<SqlConnection>(std::move(conn));
}

}  // namespace shoal::dbd
