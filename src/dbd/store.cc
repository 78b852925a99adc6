// AcctStore: the accounting schema and every query shoaldbd makes. One table per record kind;
// the columns that queries filter on are copied out of the record, and the record itself is kept
// whole as a serialized protobuf (`record`), so new fields need no schema change.
#include "dbd/store.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal::dbd {
namespace {

// ------------------------------------------------------------------------------------------
// Schema
// ------------------------------------------------------------------------------------------

// kKey: short names used in keys and filters (MySQL cannot index TEXT). kKey and kText hold
// bytes, not UTF-8: a Latin-1 job name is a valid Slurm job name, and a utf8mb4 column would
// refuse the record (and with it every record queued behind it).
enum class ColType { kKey, kInt, kText, kBlob };

struct Column {
  const char* name;
  ColType type;
};

struct TableSpec {
  const char* name;
  std::vector<Column> columns;
  std::vector<std::string> key;                   // primary key
  std::vector<std::vector<std::string>> indexes;  // secondary indexes
};

enum Table { kMeta, kClusters, kAccounts, kUsers, kAssocs, kQos, kJobs, kSteps, kEvents, kResvs };

const TableSpec& Spec(Table t) {
  using C = ColType;
  static const std::vector<TableSpec> specs = {
      {"shoal_meta", {{"meta_key", C::kKey}, {"meta_value", C::kKey}}, {"meta_key"}, {}},
      {"clusters", {{"name", C::kKey}, {"deleted", C::kInt}, {"record", C::kBlob}}, {"name"}, {}},
      {"accounts", {{"name", C::kKey}, {"deleted", C::kInt}, {"record", C::kBlob}}, {"name"}, {}},
      {"users", {{"name", C::kKey}, {"deleted", C::kInt}, {"record", C::kBlob}}, {"name"}, {}},
      {"assocs",
       {{"id", C::kInt},
        {"cluster", C::kKey},
        {"account", C::kKey},
        {"user_name", C::kKey},
        {"part", C::kKey},
        {"deleted", C::kInt},
        {"record", C::kBlob}},
       {"id"},
       {{"cluster", "account", "user_name"}}},
      {"qos",
       {{"id", C::kInt}, {"name", C::kKey}, {"deleted", C::kInt}, {"record", C::kBlob}},
       {"id"},
       {{"name"}}},
      {"jobs",
       {{"cluster", C::kKey},
        {"job_id", C::kInt},
        {"submit_time", C::kInt},
        {"array_job_id", C::kInt},
        {"array_task_id", C::kInt},
        {"uid", C::kInt},
        {"user_name", C::kKey},
        {"account", C::kKey},
        {"part", C::kKey},  // PARTITION is reserved in MySQL
        {"qos", C::kKey},
        {"state", C::kInt},
        {"job_name", C::kText},
        {"eligible_time", C::kInt},
        {"start_time", C::kInt},
        {"end_time", C::kInt},
        {"alloc_nodes", C::kInt},
        {"nodelist", C::kText},
        {"record", C::kBlob}},
       {"cluster", "job_id", "submit_time"},
       {{"cluster", "submit_time"},
        {"cluster", "end_time"},
        {"cluster", "start_time"},
        {"array_job_id", "array_task_id"},
        {"user_name"},
        {"account"}}},
      {"steps",
       {{"cluster", C::kKey},
        {"job_id", C::kInt},
        {"submit_time", C::kInt},
        {"step_id", C::kInt},
        {"record", C::kBlob}},
       {"cluster", "job_id", "submit_time", "step_id"},
       {}},
      {"events",
       {{"cluster", C::kKey},
        {"node_name", C::kKey},
        {"time_start", C::kInt},
        {"time_end", C::kInt},
        {"state", C::kKey},
        {"record", C::kBlob}},
       {"cluster", "node_name", "time_start"},
       {{"cluster", "time_start"}}},
      {"reservations",
       {{"cluster", C::kKey},
        {"id", C::kInt},
        {"time_start", C::kInt},
        {"time_end", C::kInt},
        {"name", C::kKey},
        {"deleted", C::kInt},
        {"record", C::kBlob}},
       {"cluster", "id", "time_start"},
       {{"cluster", "time_start"}}},
  };
  return specs[t];
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string TypeName(Dialect d, ColType t) {
  bool my = d == Dialect::kMysql;
  switch (t) {
    case ColType::kKey:
      // 1,020 bytes: what VARCHAR(255) in utf8mb4 held, so schema-1 data always fits and
      // the three-column keys stay under InnoDB's 3,072-byte index limit.
      return my ? "VARBINARY(1020)" : "VARCHAR(255)";
    case ColType::kInt:
      return "BIGINT";
    case ColType::kText:
      return my ? "MEDIUMBLOB" : "TEXT";
    case ColType::kBlob:
      return my ? "LONGBLOB" : "BLOB";
  }
  return "BLOB";
}

std::string IndexName(const TableSpec& t, const std::vector<std::string>& cols) {
  return std::string(t.name) + "_" + Join(cols, "_");
}

// Idempotent DDL: re-running a half-done migration (MySQL commits DDL at once) is harmless.
std::vector<std::string> CreateTableSql(Dialect d, const TableSpec& t) {
  std::string sql = "CREATE TABLE IF NOT EXISTS " + std::string(t.name) + " (";
  for (const Column& c : t.columns)
    sql += std::string(c.name) + " " + TypeName(d, c.type) + " NOT NULL, ";
  sql += "PRIMARY KEY (" + Join(t.key, ", ") + ")";
  std::vector<std::string> out;
  if (d == Dialect::kMysql) {
    // MySQL has no CREATE INDEX IF NOT EXISTS: indexes go inline.
    for (const auto& idx : t.indexes)
      sql += ", KEY " + IndexName(t, idx) + " (" + Join(idx, ", ") + ")";
    sql += ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    out.push_back(sql);
  } else {
    out.push_back(sql + ")");
    for (const auto& idx : t.indexes) {
      out.push_back("CREATE INDEX IF NOT EXISTS " + IndexName(t, idx) + " ON " + t.name + " (" +
                    Join(idx, ", ") + ")");
    }
  }
  return out;
}

std::string Placeholders(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

// Insert-or-replace by primary key: the latest write wins.
std::string UpsertSql(Dialect d, const TableSpec& t) {
  std::vector<std::string> cols, updates;
  for (const Column& c : t.columns) {
    cols.push_back(c.name);
    if (std::find(t.key.begin(), t.key.end(), c.name) != t.key.end()) continue;
    updates.push_back(d == Dialect::kMysql ? std::string(c.name) + "=VALUES(" + c.name + ")"
                                           : std::string(c.name) + "=excluded." + c.name);
  }
  std::string sql = "INSERT INTO " + std::string(t.name) + " (" + Join(cols, ",") + ") VALUES (" +
                    Placeholders(cols.size()) + ")";
  if (d == Dialect::kMysql) return sql + " ON DUPLICATE KEY UPDATE " + Join(updates, ",");
  return sql + " ON CONFLICT(" + Join(t.key, ",") + ") DO UPDATE SET " + Join(updates, ",");
}

Status Upsert(SqlConnection& sql, Table t, const std::vector<SqlValue>& values) {
  return sql.Exec(UpsertSql(sql.dialect(), Spec(t)), values);
}

// Migrations: kMigrations[i] takes a database from version i to i + 1.
using Migration = std::function<Status(SqlConnection&)>;

Status CreateV1(SqlConnection& sql) {
  for (Table t : {kClusters, kAccounts, kUsers, kAssocs, kQos, kJobs, kSteps, kEvents, kResvs}) {
    for (const std::string& stmt : CreateTableSql(sql.dialect(), Spec(t))) {
      Status st = sql.Exec(stmt);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

// Schema 2: MySQL's name and text columns become binary (VARBINARY, MEDIUMBLOB), as TypeName now
// creates them. SQLite stores any bytes in TEXT columns already.
Status BinaryTextColumnsV2(SqlConnection& sql) {
  if (sql.dialect() != Dialect::kMysql) return Status::Ok();
  for (Table t :
       {kMeta, kClusters, kAccounts, kUsers, kAssocs, kQos, kJobs, kSteps, kEvents, kResvs}) {
    const TableSpec& spec = Spec(t);
    std::vector<std::string> changes;
    for (const Column& c : spec.columns) {
      if (c.type != ColType::kKey && c.type != ColType::kText) continue;
      changes.push_back("MODIFY " + std::string(c.name) + " " + TypeName(sql.dialect(), c.type) +
                        " NOT NULL");
    }
    if (changes.empty()) continue;
    Status st = sql.Exec("ALTER TABLE " + std::string(spec.name) + " " + Join(changes, ", "));
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> steps = {CreateV1, BinaryTextColumnsV2};
  return steps;
}

// ------------------------------------------------------------------------------------------
// Values
// ------------------------------------------------------------------------------------------

SqlValue Int(int64_t v) { return v; }
SqlValue Text(std::string v) { return v; }

int64_t AsInt(const SqlValue& v) {
  if (auto* n = std::get_if<int64_t>(&v)) return *n;
  if (auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&v)) {
    int64_t out = 0;
    std::from_chars(s->data(), s->data() + s->size(), out);
    return out;
  }
  return 0;
}

std::string AsBytes(const SqlValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* n = std::get_if<int64_t>(&v)) return std::to_string(*n);
  return "";
}

template <typename Msg>
Status ParseRecord(const SqlValue& v, const char* table, Msg* out) {
  if (!out->ParseFromString(AsBytes(v))) {
    return Error(ErrorCode::kInternal, std::string("corrupt record in table ") + table);
  }
  return Status::Ok();
}

// Runs `rows`' first column through ParseRecord into a vector.
template <typename Msg>
Result<std::vector<Msg>> ParseAll(Result<std::vector<SqlRow>> rows, const char* table) {
  if (!rows.ok()) return rows.status();
  std::vector<Msg> out(rows->size());
  for (size_t i = 0; i < rows->size(); ++i) {
    Status st = ParseRecord((*rows)[i].at(0), table, &out[i]);
    if (!st.ok()) return st;
  }
  return out;
}

template <typename Container, typename Conv>
void AddIn(std::string* sql, std::vector<SqlValue>* params, const char* column,
           const Container& values, Conv conv) {
  if (values.empty()) return;
  *sql += std::string(" AND ") + column + " IN (" + Placeholders(values.size()) + ")";
  for (const auto& v : values) params->push_back(conv(v));
}

auto kAsText = [](const std::string& s) { return SqlValue(s); };
auto kAsInt = [](auto n) { return SqlValue(static_cast<int64_t>(n)); };

Status InTransaction(SqlConnection& sql, const std::function<Status()>& body) {
  Status st = sql.Begin();
  if (!st.ok()) return st;
  st = body();
  if (st.ok()) st = sql.Commit();
  if (!st.ok()) sql.Rollback();  // the first error is the one worth reporting
  return st;
}

Result<std::optional<std::string>> GetMeta(SqlConnection& sql, const char* key) {
  auto rows = sql.Query("SELECT meta_value FROM shoal_meta WHERE meta_key = ?", {Text(key)});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>(AsBytes(rows->front().at(0)));
}

Result<uint64_t> GetMetaNumber(SqlConnection& sql, const char* key, uint64_t fallback) {
  auto v = GetMeta(sql, key);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return fallback;
  uint64_t out = 0;
  const std::string& s = **v;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return Error(ErrorCode::kInternal,
                 std::string("shoal_meta: ") + key + " is not a number: '" + s + "'");
  }
  return out;
}

Status SetMeta(SqlConnection& sql, const char* key, uint64_t value) {
  return Upsert(sql, kMeta, {Text(key), Text(std::to_string(value))});
}

// ------------------------------------------------------------------------------------------
// Writes
// ------------------------------------------------------------------------------------------

Status WriteJob(SqlConnection& sql, const std::string& batch_cluster, const pb::AcctJob& in) {
  pb::AcctJob job = in;
  job.clear_steps();  // steps have rows of their own
  if (job.cluster().empty()) job.set_cluster(batch_cluster);
  const std::string& cluster = job.cluster();
  Status st =
      Upsert(sql, kJobs,
             {Text(cluster), Int(job.job_id()), Int(job.submit_time()), Int(job.array_job_id()),
              Int(job.array_task_id()), Int(job.uid()), Text(job.user()), Text(job.account()),
              Text(job.partition()), Text(job.qos()), Int(job.state()), Text(job.name()),
              Int(job.eligible_time()), Int(job.start_time()), Int(job.end_time()),
              Int(job.alloc_nodes()), Text(job.nodelist()), Text(job.SerializeAsString())});
  for (const pb::AcctStep& step : in.steps()) {
    if (!st.ok()) break;
    st = Upsert(sql, kSteps,
                {Text(cluster), Int(job.job_id()), Int(job.submit_time()), Int(step.step_id()),
                 Text(step.SerializeAsString())});
  }
  return st;
}

Status WriteEvent(SqlConnection& sql, const std::string& batch_cluster, const pb::AcctEvent& in) {
  pb::AcctEvent ev = in;
  if (ev.cluster().empty()) ev.set_cluster(batch_cluster);
  return Upsert(sql, kEvents,
                {Text(ev.cluster()), Text(ev.node_name()), Int(ev.time_start()), Int(ev.time_end()),
                 Text(ev.state()), Text(ev.SerializeAsString())});
}

Status WriteReservation(SqlConnection& sql, const std::string& batch_cluster,
                        const pb::AcctReservation& in) {
  pb::AcctReservation r = in;
  if (r.cluster().empty()) r.set_cluster(batch_cluster);
  return Upsert(sql, kResvs,
                {Text(r.cluster()), Int(r.id()), Int(r.time_start()), Int(r.time_end()),
                 Text(r.name()), Int(r.deleted() ? 1 : 0), Text(r.SerializeAsString())});
}

// ------------------------------------------------------------------------------------------
// Job queries
// ------------------------------------------------------------------------------------------

Result<uint32_t> ParseId(std::string_view s, std::string_view whole) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return InvalidArgument("invalid job id: " + std::string(whole));
  }
  return v;
}

// Which jobs a -j list selects: plain ids (a job id or an array's id), and array tasks.
struct IdSelector {
  std::vector<uint32_t> ids;
  struct TaskRange {
    uint32_t array_id, lo, hi;
  };
  std::vector<TaskRange> tasks;
  bool empty() const { return ids.empty() && tasks.empty(); }
};

// "123", "123.batch", "123.4" (the job: the CLI filters steps), "123_4", "123_[1-3,7]".
Status ParseJobIdText(std::string_view text, IdSelector* sel) {
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (size_t dot = s.find('.'); dot != std::string_view::npos) s = s.substr(0, dot);
  size_t us = s.find('_');
  auto id = ParseId(s.substr(0, us), text);
  if (!id.ok()) return id.status();
  if (us == std::string_view::npos) {
    sel->ids.push_back(*id);
    return Status::Ok();
  }
  std::string_view tasks = s.substr(us + 1);
  if (tasks == "*") {
    sel->ids.push_back(*id);
    return Status::Ok();
  }
  if (tasks.size() >= 2 && tasks.front() == '[' && tasks.back() == ']') {
    tasks = tasks.substr(1, tasks.size() - 2);
  }
  while (!tasks.empty()) {
    size_t comma = tasks.find(',');
    std::string_view item = tasks.substr(0, comma);
    tasks = comma == std::string_view::npos ? std::string_view() : tasks.substr(comma + 1);
    size_t dash = item.find('-');
    auto lo = ParseId(item.substr(0, dash), text);
    if (!lo.ok()) return lo.status();
    uint32_t hi = *lo;
    if (dash != std::string_view::npos) {
      auto h = ParseId(item.substr(dash + 1), text);
      if (!h.ok()) return h.status();
      if (*h < *lo) return InvalidArgument("invalid job id: " + std::string(text));
      hi = *h;
    }
    sel->tasks.push_back({*id, *lo, hi});
  }
  return Status::Ok();
}

void AddIdSelector(const IdSelector& sel, std::string* sql, std::vector<SqlValue>* params) {
  std::vector<std::string> ors;
  if (!sel.ids.empty()) {
    ors.push_back("job_id IN (" + Placeholders(sel.ids.size()) + ")");
    for (uint32_t id : sel.ids) params->push_back(Int(id));
    std::vector<uint32_t> arrays;
    for (uint32_t id : sel.ids) {
      if (id != 0) arrays.push_back(id);  // 0 means "not an array" in that column
    }
    if (!arrays.empty()) {
      ors.push_back("array_job_id IN (" + Placeholders(arrays.size()) + ")");
      for (uint32_t id : arrays) params->push_back(Int(id));
    }
  }
  for (const auto& t : sel.tasks) {
    ors.push_back("(array_job_id = ? AND array_task_id >= ? AND array_task_id <= ?)");
    params->push_back(Int(t.array_id));
    params->push_back(Int(t.lo));
    params->push_back(Int(t.hi));
  }
  *sql += " AND (" + Join(ors, " OR ") + ")";
}

bool IsTerminal(pb::JobState s) {
  return s != pb::JOB_PENDING && s != pb::JOB_RUNNING && s != pb::JOB_SUSPENDED;
}

// -s with a window: was the job in `state` at some point of [start, end)?
bool InStateDuring(const pb::AcctJob& j, pb::JobState state, int64_t start, int64_t end) {
  switch (state) {
    case pb::JOB_PENDING:  // from submission until it started
      return j.submit_time() < end && (j.start_time() == 0 || j.start_time() > start);
    case pb::JOB_RUNNING:
      return j.start_time() != 0 && j.start_time() < end &&
             (j.end_time() == 0 || j.end_time() > start);
    case pb::JOB_SUSPENDED:  // no suspension history is kept: the current state decides
      return j.state() == pb::JOB_SUSPENDED && j.start_time() < end;
    default:  // a terminal state: it ended that way within the window
      return j.state() == state && IsTerminal(state) && j.end_time() != 0 &&
             j.end_time() >= start && j.end_time() < end;
  }
}

// batch, extern, interactive, then numbered steps in order.
uint64_t StepOrder(uint32_t id) {
  switch (id) {
    case kBatchStepId:
      return 0;
    case kExternStepId:
      return 1;
    case kInteractiveStepId:
      return 2;
    case kPendingStepId:
      return 3;
    default:
      return 16 + static_cast<uint64_t>(id);
  }
}

using JobKey = std::tuple<std::string, uint32_t, int64_t>;

Status AttachSteps(SqlConnection& sql, std::vector<pb::AcctJob>* jobs) {
  // A few statements for many jobs: select the steps of a chunk of job ids, then match them
  // to their exact record (cluster, job id, submit time) here.
  constexpr size_t kChunk = 500;
  std::map<JobKey, size_t> index;
  for (size_t i = 0; i < jobs->size(); ++i) {
    const auto& j = (*jobs)[i];
    index[{j.cluster(), j.job_id(), j.submit_time()}] = i;
  }
  for (size_t from = 0; from < jobs->size(); from += kChunk) {
    std::set<uint32_t> ids;
    for (size_t i = from; i < std::min(jobs->size(), from + kChunk); ++i) {
      ids.insert((*jobs)[i].job_id());
    }
    std::vector<SqlValue> params;
    for (uint32_t id : ids) params.push_back(Int(id));
    auto rows =
        sql.Query("SELECT cluster, job_id, submit_time, record FROM steps WHERE job_id IN (" +
                      Placeholders(ids.size()) + ")",
                  params);
    if (!rows.ok()) return rows.status();
    for (const SqlRow& row : *rows) {
      auto it = index.find(
          {AsBytes(row.at(0)), static_cast<uint32_t>(AsInt(row.at(1))), AsInt(row.at(2))});
      if (it == index.end()) continue;  // another record of the same job id
      pb::AcctStep* step = (*jobs)[it->second].add_steps();
      Status st = ParseRecord(row.at(3), "steps", step);
      if (!st.ok()) return st;
    }
  }
  for (auto& j : *jobs) {
    std::stable_sort(j.mutable_steps()->begin(), j.mutable_steps()->end(),
                     [](const pb::AcctStep& a, const pb::AcctStep& b) {
                       return StepOrder(a.step_id()) < StepOrder(b.step_id());
                     });
  }
  return Status::Ok();
}

// Events and reservations overlapping [start, end); end 0 = no upper bound.
template <typename Msg>
Result<std::vector<Msg>> QueryIntervals(SqlConnection& sql, Table t,
                                        const std::vector<std::string>& clusters, int64_t start,
                                        int64_t end, const char* order) {
  const char* table = Spec(t).name;
  std::string q = std::string("SELECT record FROM ") + table + " WHERE 1=1";
  std::vector<SqlValue> params;
  AddIn(&q, &params, "cluster", clusters, kAsText);
  if (end > 0) {
    q += " AND time_start < ?";
    params.push_back(Int(end));
  }
  if (start > 0) {
    q += " AND (time_end = 0 OR time_end > ?)";
    params.push_back(Int(start));
  }
  q += std::string(" ORDER BY ") + order;
  return ParseAll<Msg>(sql.Query(q, params), table);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// AcctStore
// ------------------------------------------------------------------------------------------

AcctStore::AcctStore(std::unique_ptr<SqlConnection> sql) : sql_(std::move(sql)) {}
AcctStore::~AcctStore() = default;

Result<std::unique_ptr<AcctStore>> AcctStore::Open(std::unique_ptr<SqlConnection> sql) {
  if (!sql) return Error(ErrorCode::kInvalidArgument, "accounting store: no database connection");
  std::unique_ptr<AcctStore> store(new AcctStore(std::move(sql)));
  Status st = store->Migrate();
  if (!st.ok()) return st;
  return store;
}

int AcctStore::schema_version() const { return schema_version_; }

Status AcctStore::Migrate() {
  SqlConnection& sql = *sql_;
  for (const std::string& stmt : CreateTableSql(sql.dialect(), Spec(kMeta))) {
    Status st = sql.Exec(stmt);
    if (!st.ok()) return st;
  }
  auto found = GetMetaNumber(sql, "schema_version", 0);
  if (!found.ok()) return found.status();
  uint64_t version = *found;
  if (version > static_cast<uint64_t>(kSchemaVersion)) {
    return Error(ErrorCode::kNotSupported, "database schema version " + std::to_string(version) +
                                               " is newer than this shoaldbd (" +
                                               std::to_string(kSchemaVersion) + ")");
  }
  const auto& steps = Migrations();
  static_assert(kSchemaVersion >= 1);
  if (steps.size() != static_cast<size_t>(kSchemaVersion)) {
    return Error(ErrorCode::kInternal, "accounting store: migration list does not reach version " +
                                           std::to_string(kSchemaVersion));
  }
  for (; version < steps.size(); ++version) {
    uint64_t next = version + 1;
    Status st = InTransaction(sql, [&] {
      Status s = steps[version](sql);
      return s.ok() ? SetMeta(sql, "schema_version", next) : s;
    });
    if (!st.ok()) {
      return Error(st.code(), "migrating the database schema from version " +
                                  std::to_string(version) + " to " + std::to_string(next) + ": " +
                                  st.message());
    }
  }
  schema_version_ = static_cast<int>(version);
  return Status::Ok();
}

Status AcctStore::StoreRecords(const pb::AcctRecordBatch& batch) {
  SqlConnection& sql = *sql_;
  return InTransaction(sql, [&] {
    for (const auto& job : batch.jobs()) {
      Status st = WriteJob(sql, batch.cluster(), job);
      if (!st.ok()) return st;
    }
    for (const auto& ev : batch.events()) {
      Status st = WriteEvent(sql, batch.cluster(), ev);
      if (!st.ok()) return st;
    }
    for (const auto& r : batch.reservations()) {
      Status st = WriteReservation(sql, batch.cluster(), r);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  });
}

Result<std::vector<pb::AcctJob>> AcctStore::QueryJobs(const pb::AcctJobQuery& query, int64_t now) {
  std::string q = "SELECT record FROM jobs WHERE 1=1";
  std::vector<SqlValue> params;
  AddIn(&q, &params, "cluster", query.clusters(), kAsText);

  IdSelector ids;
  for (uint32_t id : query.job_ids()) ids.ids.push_back(id);
  for (const std::string& text : query.job_id_texts()) {
    Status st = ParseJobIdText(text, &ids);
    if (!st.ok()) return st;
  }
  if (!ids.empty()) AddIdSelector(ids, &q, &params);

  AddIn(&q, &params, "user_name", query.users(), kAsText);
  AddIn(&q, &params, "account", query.accounts(), kAsText);
  AddIn(&q, &params, "part", query.partitions(), kAsText);
  AddIn(&q, &params, "qos", query.qos(), kAsText);
  AddIn(&q, &params, "job_name", query.names(), kAsText);

  // Window [start, end): submitted before its end, not ended before its start. end = 0 leaves
  // the window open to the future, so a controller clock ahead of ours hides nothing.
  const int64_t start = query.start();
  const int64_t end = query.end() > 0 ? query.end() : 0;
  const bool window = start > 0 || end > 0;
  if (end > 0) {
    q += " AND submit_time < ?";
    params.push_back(Int(end));
  }
  if (start > 0) {
    q += " AND (end_time = 0 OR end_time >= ?)";
    params.push_back(Int(start));
  }
  const bool state_window = query.by_state_window() && window && !query.states().empty();
  if (!state_window) AddIn(&q, &params, "state", query.states(), kAsInt);
  if (query.min_nodes() > 0) {
    q += " AND alloc_nodes >= ?";
    params.push_back(Int(query.min_nodes()));
  }
  if (query.max_nodes() > 0) {
    q += " AND alloc_nodes <= ?";
    params.push_back(Int(query.max_nodes()));
  }
  // Array tasks sort under their array's id, by task id.
  q += " ORDER BY CASE WHEN array_job_id <> 0 THEN array_job_id ELSE job_id END, array_task_id,"
       " job_id, cluster, submit_time";

  const bool filter_here =
      state_window || !query.nodes().empty() || !query.reasons().empty() || !query.duplicates();
  if (!filter_here && query.limit() > 0) {
    q += " LIMIT ?";
    params.push_back(Int(query.limit()));
  }
  auto parsed = ParseAll<pb::AcctJob>(sql_->Query(q, params), "jobs");
  if (!parsed.ok()) return parsed.status();
  std::vector<pb::AcctJob> rows = std::move(*parsed);

  std::unordered_set<std::string> nodes;
  for (const std::string& expr : query.nodes()) {
    auto hosts = ExpandHostlist(expr);
    if (!hosts.ok()) return hosts.status();
    nodes.insert(hosts->begin(), hosts->end());
  }
  std::set<std::string> reasons(query.reasons().begin(), query.reasons().end());
  const int64_t window_end = end > 0 ? end : now;
  auto keep = [&](const pb::AcctJob& j) {
    if (!reasons.empty() && !reasons.contains(j.reason())) return false;
    if (state_window && std::none_of(query.states().begin(), query.states().end(), [&](int s) {
          return InStateDuring(j, static_cast<pb::JobState>(s), start, window_end);
        })) {
      return false;
    }
    if (!nodes.empty()) {
      auto hosts = ExpandHostlist(j.nodelist());
      if (!hosts.ok()) return false;
      if (std::none_of(hosts->begin(), hosts->end(),
                       [&](const std::string& h) { return nodes.contains(h); })) {
        return false;
      }
    }
    return true;
  };
  std::erase_if(rows, [&](const pb::AcctJob& j) { return !keep(j); });

  // A requeued job has a record per submission: keep the latest one that matched, unless -D.
  if (!query.duplicates()) {
    std::map<std::pair<std::string, uint32_t>, int64_t> latest;
    for (const auto& j : rows) {
      auto [it, fresh] = latest.try_emplace({j.cluster(), j.job_id()}, j.submit_time());
      if (!fresh) it->second = std::max(it->second, j.submit_time());
    }
    std::erase_if(rows, [&](const pb::AcctJob& j) {
      return latest[{j.cluster(), j.job_id()}] != j.submit_time();
    });
  }
  if (query.limit() > 0 && rows.size() > query.limit()) rows.resize(query.limit());
  if (query.include_steps() && !rows.empty()) {
    Status st = AttachSteps(*sql_, &rows);
    if (!st.ok()) return st;
  }
  return rows;
}

Result<pb::AcctUsageResponse> AcctStore::QueryUsage(const pb::AcctUsageQuery& query, int64_t now) {
  SqlConnection& sql = *sql_;
  const int64_t start = query.start();
  const int64_t end = query.end() > 0 ? query.end() : now;
  pb::AcctUsageResponse out;

  std::string q = "SELECT record FROM clusters WHERE 1=1";
  std::vector<SqlValue> params;
  AddIn(&q, &params, "name", query.clusters(), kAsText);
  auto clusters = ParseAll<pb::AcctCluster>(sql.Query(q + " ORDER BY name", params), "clusters");
  if (!clusters.ok()) return clusters.status();
  for (auto& c : *clusters) *out.add_clusters() = std::move(c);

  // Jobs that ran during the window.
  q = "SELECT record FROM jobs WHERE start_time <> 0 AND start_time < ? AND "
      "(end_time = 0 OR end_time > ?)";
  params = {Int(end), Int(start)};
  AddIn(&q, &params, "cluster", query.clusters(), kAsText);
  AddIn(&q, &params, "user_name", query.users(), kAsText);
  AddIn(&q, &params, "account", query.accounts(), kAsText);
  auto jobs = ParseAll<pb::AcctJob>(sql.Query(q + " ORDER BY cluster, job_id, submit_time", params),
                                    "jobs");
  if (!jobs.ok()) return jobs.status();
  for (auto& j : *jobs) *out.add_jobs() = std::move(j);

  std::vector<std::string> names(query.clusters().begin(), query.clusters().end());
  auto events = QueryIntervals<pb::AcctEvent>(sql, kEvents, names, start, end,
                                              "cluster, time_start, node_name");
  if (!events.ok()) return events.status();
  for (auto& e : *events) *out.add_events() = std::move(e);
  auto resvs = QueryIntervals<pb::AcctReservation>(sql, kResvs, names, start, end,
                                                   "cluster, time_start, id");
  if (!resvs.ok()) return resvs.status();
  for (auto& r : *resvs) *out.add_reservations() = std::move(r);

  q = "SELECT record FROM assocs WHERE 1=1";
  params.clear();
  AddIn(&q, &params, "cluster", query.clusters(), kAsText);
  auto assocs = ParseAll<pb::AcctAssoc>(sql.Query(q + " ORDER BY id", params), "assocs");
  if (!assocs.ok()) return assocs.status();
  for (auto& a : *assocs) *out.add_assocs() = std::move(a);
  return out;
}

Result<std::vector<pb::AcctEvent>> AcctStore::QueryEvents(const std::vector<std::string>& clusters,
                                                          int64_t start, int64_t end) {
  return QueryIntervals<pb::AcctEvent>(*sql_, kEvents, clusters, start, end,
                                       "cluster, time_start, node_name");
}

Result<std::vector<pb::AcctReservation>> AcctStore::QueryReservations(
    const std::vector<std::string>& clusters, int64_t start, int64_t end) {
  return QueryIntervals<pb::AcctReservation>(*sql_, kResvs, clusters, start, end,
                                             "cluster, time_start, id");
}

Result<AssocState> AcctStore::LoadAssocState() {
  SqlConnection& sql = *sql_;
  AssocState state;
  auto clusters =
      ParseAll<pb::AcctCluster>(sql.Query("SELECT record FROM clusters ORDER BY name"), "clusters");
  if (!clusters.ok()) return clusters.status();
  auto accounts =
      ParseAll<pb::AcctAccount>(sql.Query("SELECT record FROM accounts ORDER BY name"), "accounts");
  if (!accounts.ok()) return accounts.status();
  auto users = ParseAll<pb::AcctUser>(sql.Query("SELECT record FROM users ORDER BY name"), "users");
  if (!users.ok()) return users.status();
  auto assocs =
      ParseAll<pb::AcctAssoc>(sql.Query("SELECT record FROM assocs ORDER BY id"), "assocs");
  if (!assocs.ok()) return assocs.status();
  auto qos = ParseAll<pb::AcctQos>(sql.Query("SELECT record FROM qos ORDER BY id"), "qos");
  if (!qos.ok()) return qos.status();
  auto version = GetMetaNumber(sql, "assoc_version", 0);
  if (!version.ok()) return version.status();
  auto next_assoc = GetMetaNumber(sql, "next_assoc_id", 1);
  if (!next_assoc.ok()) return next_assoc.status();
  auto next_qos = GetMetaNumber(sql, "next_qos_id", 1);
  if (!next_qos.ok()) return next_qos.status();

  state.version = *version;
  state.clusters = std::move(*clusters);
  state.accounts = std::move(*accounts);
  state.users = std::move(*users);
  state.assocs = std::move(*assocs);
  state.qos = std::move(*qos);
  // Ids are never reused, even if the counters were lost: stay above every stored id.
  uint64_t na = *next_assoc, nq = *next_qos;
  for (const auto& a : state.assocs) na = std::max<uint64_t>(na, uint64_t{a.id()} + 1);
  for (const auto& q : state.qos) nq = std::max<uint64_t>(nq, uint64_t{q.id()} + 1);
  state.next_assoc_id = static_cast<uint32_t>(na);
  state.next_qos_id = static_cast<uint32_t>(nq);
  // is_default is derived: the association of a user's default account.
  std::map<std::string, std::string> default_account;
  for (const auto& u : state.users) default_account[u.name()] = u.default_account();
  for (auto& a : state.assocs) {
    auto it = default_account.find(a.user());
    a.set_is_default(!a.user().empty() && it != default_account.end() && it->second == a.account());
  }
  return state;
}

Status AcctStore::SaveAssocChanges(const AssocChanges& changes, uint64_t version) {
  SqlConnection& sql = *sql_;
  return InTransaction(sql, [&]() -> Status {
    for (const auto& c : changes.clusters) {
      Status st =
          Upsert(sql, kClusters, {Text(c.name()), Int(c.deleted()), Text(c.SerializeAsString())});
      if (!st.ok()) return st;
    }
    for (const auto& a : changes.accounts) {
      Status st =
          Upsert(sql, kAccounts, {Text(a.name()), Int(a.deleted()), Text(a.SerializeAsString())});
      if (!st.ok()) return st;
    }
    for (const auto& u : changes.users) {
      Status st =
          Upsert(sql, kUsers, {Text(u.name()), Int(u.deleted()), Text(u.SerializeAsString())});
      if (!st.ok()) return st;
    }
    uint64_t max_assoc = 0, max_qos = 0;
    for (const auto& a : changes.assocs) {
      max_assoc = std::max<uint64_t>(max_assoc, a.id());
      Status st = Upsert(sql, kAssocs,
                         {Int(a.id()), Text(a.cluster()), Text(a.account()), Text(a.user()),
                          Text(a.partition()), Int(a.deleted()), Text(a.SerializeAsString())});
      if (!st.ok()) return st;
    }
    for (const auto& q : changes.qos) {
      max_qos = std::max<uint64_t>(max_qos, q.id());
      Status st = Upsert(
          sql, kQos, {Int(q.id()), Text(q.name()), Int(q.deleted()), Text(q.SerializeAsString())});
      if (!st.ok()) return st;
    }
    Status st = SetMeta(sql, "assoc_version", version);
    if (st.ok() && !changes.assocs.empty()) {
      auto next = GetMetaNumber(sql, "next_assoc_id", 1);
      if (!next.ok()) return next.status();
      st = SetMeta(sql, "next_assoc_id", std::max(*next, max_assoc + 1));
    }
    if (st.ok() && !changes.qos.empty()) {
      auto next = GetMetaNumber(sql, "next_qos_id", 1);
      if (!next.ok()) return next.status();
      st = SetMeta(sql, "next_qos_id", std::max(*next, max_qos + 1));
    }
    return st;
  });
}

}  // namespace shoal::dbd
