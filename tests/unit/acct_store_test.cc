// The accounting store against both backends: SQLite always, MariaDB whenever a server binary is
// installed (a throwaway server is started from tests/mariadb/start-mariadb.sh for this run).
// SHOAL_REQUIRE_MARIADB=1 turns "MariaDB could not start" from a skip into a failure.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/units.h"
#include "dbd/sql.h"
#include "dbd/store.h"

namespace shoal::dbd {
namespace {

namespace fs = std::filesystem;

// tests/mariadb: next to this source file. __FILE__ is relative to the build directory when
// the compiler ran there (ninja), so also try from the executable (BUILD/tests/unit/x) and the
// current directory upwards.
std::string ScriptsDir() {
  if (const char* dir = getenv("SHOAL_MARIADB_SCRIPTS")) return dir;
  const fs::path src = fs::path(__FILE__).parent_path().parent_path() / "mariadb";
  std::vector<fs::path> candidates;
  if (src.is_absolute()) candidates.push_back(src);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path().parent_path() / src);
  for (fs::path dir = fs::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
    candidates.push_back(dir / "tests" / "mariadb");
    if (dir == dir.root_path()) break;
  }
  for (const fs::path& c : candidates) {
    if (fs::exists(c / "start-mariadb.sh", ec)) return fs::weakly_canonical(c, ec).string();
  }
  return src.string();
}

bool RequireMariaDb() {
  const char* v = getenv("SHOAL_REQUIRE_MARIADB");
  return v != nullptr && std::string(v) == "1";
}

// Runs a shell command; returns its stdout, sets *rc to its exit status.
std::string Shell(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

// One server for the whole run, started on first use, stopped (and its files removed) at exit.
class MariaDbServer {
 public:
  static MariaDbServer& Get() {
    static MariaDbServer server;
    return server;
  }

  // "" when running, else why not.
  const std::string& EnsureStarted() {
    if (tried_) return error_;
    tried_ = true;
    bool installed = access("/usr/sbin/mariadbd", X_OK) == 0;
    int rc = 0;
    if (!installed) Shell("command -v mariadbd >/dev/null 2>&1", &rc), installed = rc == 0;
    if (!installed) return error_ = "mariadbd is not installed";
    char tmpl[] = "/tmp/shoal-mdb-XXXXXX";  // short: unix socket paths are limited
    if (mkdtemp(tmpl) == nullptr) return error_ = "mkdtemp failed";
    dir_ = tmpl;
    error_ = Start("");
    return error_;
  }

  // Restarts on the same port, so a config written before the restart still works.
  std::string Start(const std::string& port) {
    int rc = 0;
    std::string out = Shell(ScriptsDir() + "/start-mariadb.sh " + dir_ + " " + port + " 2>&1", &rc);
    if (rc != 0) return "start-mariadb.sh failed: " + out;
    size_t s = out.find("socket="), p = out.find(" port=");
    if (s == std::string::npos || p == std::string::npos) return "unexpected output: " + out;
    socket_ = out.substr(s + 7, p - s - 7);
    port_ = static_cast<uint32_t>(std::stoul(out.substr(p + 6)));
    running_ = true;
    return "";
  }

  void Stop() {
    int rc = 0;
    Shell(ScriptsDir() + "/stop-mariadb.sh " + dir_ + " 2>&1", &rc);
    running_ = false;
  }

  void Shutdown() {
    if (dir_.empty()) return;
    if (running_) Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }

  const std::string& socket() const { return socket_; }
  uint32_t port() const { return port_; }

 private:
  bool tried_ = false;
  bool running_ = false;
  std::string error_, dir_, socket_;
  uint32_t port_ = 0;
};

class MariaDbEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { MariaDbServer::Get().Shutdown(); }
};
[[maybe_unused]] const auto* const kEnv =
    ::testing::AddGlobalTestEnvironment(new MariaDbEnvironment);

// ------------------------------------------------------------------------------------------
// Records
// ------------------------------------------------------------------------------------------

struct JobSpec {
  uint32_t id;
  int64_t submit;
  std::string user = "alice";
  std::string account = "phys";
  std::string partition = "batch";
  pb::JobState state = pb::JOB_COMPLETED;
  int64_t start = 0;
  int64_t end = 0;
  std::string nodes = "";
  uint32_t alloc_nodes = 0;
  uint32_t array_id = 0;
  uint32_t task = kNoArrayTask;
  std::string name = "job";
  std::string reason = "None";
  std::string cluster = "c1";
};

pb::AcctJob MakeJob(const JobSpec& s) {
  pb::AcctJob j;
  j.set_cluster(s.cluster);
  j.set_job_id(s.id);
  j.set_submit_time(s.submit);
  j.set_eligible_time(s.submit);
  j.set_user(s.user);
  j.set_uid(1000);
  j.set_account(s.account);
  j.set_partition(s.partition);
  j.set_qos("normal");
  j.set_state(s.state);
  j.set_start_time(s.start);
  j.set_end_time(s.end);
  j.set_nodelist(s.nodes);
  j.set_alloc_nodes(s.alloc_nodes);
  j.set_array_job_id(s.array_id);
  j.set_array_task_id(s.task);
  j.set_name(s.name);
  j.set_reason(s.reason);
  j.set_requid(kNoUid);
  return j;
}

pb::AcctStep MakeStep(uint32_t id, const std::string& name) {
  pb::AcctStep s;
  s.set_step_id(id);
  s.set_name(name);
  s.set_state(pb::JOB_COMPLETED);
  return s;
}

std::vector<std::string> Ids(const std::vector<pb::AcctJob>& jobs) {
  std::vector<std::string> out;
  for (const auto& j : jobs) {
    std::string id = std::to_string(j.job_id());
    if (j.array_task_id() != kNoArrayTask) {
      id = std::to_string(j.array_job_id()) + "_" + std::to_string(j.array_task_id());
    }
    out.push_back(id);
  }
  return out;
}

using Strings = std::vector<std::string>;

// ------------------------------------------------------------------------------------------
// Fixture
// ------------------------------------------------------------------------------------------

class AcctStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int counter = 0;
    ++counter;
    if (GetParam() == "mariadb") {
      const std::string& why = MariaDbServer::Get().EnsureStarted();
      if (!why.empty()) {
        if (RequireMariaDb()) GTEST_FAIL() << "SHOAL_REQUIRE_MARIADB=1: " << why;
        GTEST_SKIP() << "MariaDB unavailable: " << why;
      }
      config_.type = "accounting_storage/mysql";
      config_.host = MariaDbServer::Get().socket();
      config_.port = MariaDbServer::Get().port();
      config_.user = "shoal";
      config_.pass = "shoal";
      config_.loc = "shoal_t" + std::to_string(getpid()) + "_" + std::to_string(counter);
    } else {
      char tmpl[] = "/tmp/shoal-acct-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      tmpdir_ = tmpl;
      config_.type = "accounting_storage/sqlite";
      config_.loc = tmpdir_ + "/acct.db";
    }
  }

  void TearDown() override {
    if (!tmpdir_.empty()) {
      std::error_code ec;
      fs::remove_all(tmpdir_, ec);
    }
  }

  bool mariadb() const { return GetParam() == "mariadb"; }

  std::unique_ptr<SqlConnection> Connect() {
    auto conn = OpenSql(config_);
    EXPECT_TRUE(conn.ok()) << conn.error();
    return conn.ok() ? std::move(*conn) : nullptr;
  }

  std::unique_ptr<AcctStore> OpenStore() {
    auto conn = Connect();
    if (!conn) return nullptr;
    auto store = AcctStore::Open(std::move(conn));
    EXPECT_TRUE(store.ok()) << store.error();
    return store.ok() ? std::move(*store) : nullptr;
  }

  // Row count through a separate connection (what is committed, not what one session sees).
  int64_t Count(const std::string& table) {
    auto conn = Connect();
    if (!conn) return -1;
    auto rows = conn->Query("SELECT COUNT(*) FROM " + table);
    EXPECT_TRUE(rows.ok()) << rows.error();
    if (!rows.ok() || rows->empty()) return -1;
    return std::get<int64_t>(rows->front().at(0));
  }

  std::vector<pb::AcctJob> Query(AcctStore& store, const pb::AcctJobQuery& q) {
    auto jobs = store.QueryJobs(q, 100000);
    EXPECT_TRUE(jobs.ok()) << jobs.error();
    return jobs.ok() ? *jobs : std::vector<pb::AcctJob>{};
  }

  StorageConfig config_;
  std::string tmpdir_;
};

INSTANTIATE_TEST_SUITE_P(Backends, AcctStoreTest, ::testing::Values("sqlite", "mariadb"),
                         [](const auto& info) { return info.param; });

// ------------------------------------------------------------------------------------------
// Schema
// ------------------------------------------------------------------------------------------

TEST_P(AcctStoreTest, CreatesSchemaAndReopens) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  pb::AcctRecordBatch batch;
  batch.set_cluster("c1");
  *batch.add_jobs() = MakeJob({.id = 7, .submit = 100});
  ASSERT_TRUE(store->StoreRecords(batch).ok());
  store.reset();

  auto again = OpenStore();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->schema_version(), kSchemaVersion);
  EXPECT_EQ(Ids(Query(*again, {})), Strings{"7"});
  auto conn = Connect();
  auto rows = conn->Query("SELECT meta_value FROM shoal_meta WHERE meta_key = ?",
                          {std::string("schema_version")});
  ASSERT_TRUE(rows.ok()) << rows.error();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(std::get<std::string>(rows->front().at(0)), std::to_string(kSchemaVersion));
}

TEST_P(AcctStoreTest, RerunsAnInterruptedMigration) {
  ASSERT_TRUE(OpenStore());
  pb::AcctRecordBatch batch;
  *batch.add_jobs() = MakeJob({.id = 8, .submit = 100});
  ASSERT_TRUE(OpenStore()->StoreRecords(batch).ok());
  // As if the daemon died after creating the tables but before recording the version.
  ASSERT_TRUE(Connect()->Exec("DELETE FROM shoal_meta WHERE meta_key = 'schema_version'").ok());
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  EXPECT_EQ(Ids(Query(*store, {})), Strings{"8"});
}

TEST_P(AcctStoreTest, RefusesANewerSchema) {
  ASSERT_TRUE(OpenStore());
  auto conn = Connect();
  ASSERT_TRUE(conn->Exec("UPDATE shoal_meta SET meta_value = ? WHERE meta_key = ?",
                         {std::to_string(kSchemaVersion + 1), std::string("schema_version")})
                  .ok());
  auto store = AcctStore::Open(Connect());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kNotSupported);
  EXPECT_EQ(store.error(), "database schema version " + std::to_string(kSchemaVersion + 1) +
                               " is newer than this shoaldbd (" + std::to_string(kSchemaVersion) +
                               ")");
}

// ------------------------------------------------------------------------------------------
// Writes
// ------------------------------------------------------------------------------------------

TEST_P(AcctStoreTest, WritesAreIdempotent) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  pb::AcctRecordBatch batch;
  batch.set_cluster("c1");
  pb::AcctJob job = MakeJob({.id = 5,
                             .submit = 100,
                             .state = pb::JOB_RUNNING,
                             .start = 110,
                             .nodes = "n1",
                             .alloc_nodes = 1,
                             .cluster = ""});
  *job.add_steps() = MakeStep(kBatchStepId, "batch");
  *job.add_steps() = MakeStep(0, "hostname");
  *batch.add_jobs() = job;
  pb::AcctEvent* ev = batch.add_events();
  ev->set_node_name("n1");
  ev->set_time_start(50);
  ev->set_state("DOWN");
  ev->set_reason("bad disk");
  pb::AcctReservation* r = batch.add_reservations();
  r->set_id(3);
  r->set_name("maint");
  r->set_time_start(200);
  r->set_time_end(300);

  ASSERT_TRUE(store->StoreRecords(batch).ok());
  ASSERT_TRUE(store->StoreRecords(batch).ok());
  // The job ends: the same key again, with new content and one more step.
  batch.mutable_jobs(0)->set_state(pb::JOB_COMPLETED);
  batch.mutable_jobs(0)->set_end_time(150);
  *batch.mutable_jobs(0)->add_steps() = MakeStep(1, "second");
  batch.mutable_events(0)->set_time_end(120);
  ASSERT_TRUE(store->StoreRecords(batch).ok());

  EXPECT_EQ(Count("jobs"), 1);
  EXPECT_EQ(Count("steps"), 3);
  EXPECT_EQ(Count("events"), 1);
  EXPECT_EQ(Count("reservations"), 1);

  pb::AcctJobQuery q;
  q.set_include_steps(true);
  auto jobs = Query(*store, q);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].cluster(), "c1");  // filled from the batch
  EXPECT_EQ(jobs[0].state(), pb::JOB_COMPLETED);
  EXPECT_EQ(jobs[0].end_time(), 150);
  ASSERT_EQ(jobs[0].steps_size(), 3);

  auto events = store->QueryEvents({"c1"}, 0, 0);
  ASSERT_TRUE(events.ok()) << events.error();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].time_end(), 120);
  EXPECT_EQ((*events)[0].reason(), "bad disk");
  // Overlap with [start, end).
  EXPECT_EQ(store->QueryEvents({"c1"}, 120, 0)->size(), 0u);
  EXPECT_EQ(store->QueryEvents({"c1"}, 100, 0)->size(), 1u);
  EXPECT_EQ(store->QueryEvents({"other"}, 0, 0)->size(), 0u);
  EXPECT_EQ(store->QueryReservations({"c1"}, 250, 260)->size(), 1u);
  EXPECT_EQ(store->QueryReservations({"c1"}, 300, 400)->size(), 0u);
  EXPECT_EQ(store->QueryReservations({}, 0, 200)->size(), 0u);

  pb::AcctUsageQuery uq;
  uq.set_start(120);
  uq.set_end(140);
  auto usage = store->QueryUsage(uq, 1000);
  ASSERT_TRUE(usage.ok()) << usage.error();
  EXPECT_EQ(usage->jobs_size(), 1);
  EXPECT_EQ(usage->jobs(0).steps_size(), 0);
  EXPECT_EQ(usage->events_size(), 0);  // ended at 120
  uq.set_start(160);
  uq.set_end(0);
  EXPECT_EQ(store->QueryUsage(uq, 1000)->jobs_size(), 0);
  EXPECT_EQ(store->QueryUsage(uq, 1000)->reservations_size(), 1);
}

// ------------------------------------------------------------------------------------------
// sacct
// ------------------------------------------------------------------------------------------

class AcctStoreQueryTest : public AcctStoreTest {
 protected:
  void SetUp() override {
    AcctStoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    store_ = OpenStore();
    ASSERT_TRUE(store_);
    pb::AcctRecordBatch batch;
    batch.set_cluster("c1");
    auto add = [&](const JobSpec& s) { *batch.add_jobs() = MakeJob(s); };
    // Stored out of order on purpose.
    add({.id = 102,
         .submit = 3000,
         .account = "chem",
         .state = pb::JOB_RUNNING,
         .start = 3100,
         .nodes = "n[2-4]",
         .alloc_nodes = 3});
    add({.id = 100,
         .submit = 1000,
         .state = pb::JOB_COMPLETED,
         .start = 1100,
         .end = 2000,
         .nodes = "n[1-2]",
         .alloc_nodes = 2,
         .name = "sim"});
    add({.id = 101,
         .submit = 1500,
         .user = "bob",
         .account = "chem",
         .partition = "debug",
         .state = pb::JOB_FAILED,
         .start = 1600,
         .end = 1700,
         .nodes = "n3",
         .alloc_nodes = 1,
         .name = "prep",
         .reason = "NonZeroExitCode"});
    add({.id = 103, .submit = 3500, .state = pb::JOB_PENDING, .reason = "Priority"});
    // Array 200: tasks 3 (job 200), 1 (201), 2 (202).
    for (auto [id, task] : {std::pair{200u, 3u}, {201u, 1u}, {202u, 2u}}) {
      add({.id = id,
           .submit = 4000,
           .start = 4100,
           .end = 4200,
           .nodes = "n5",
           .alloc_nodes = 1,
           .array_id = 200,
           .task = task});
    }
    // Job 300, requeued after a node failure: two records.
    add({.id = 300,
         .submit = 5000,
         .state = pb::JOB_NODE_FAIL,
         .start = 5010,
         .end = 5100,
         .nodes = "n6",
         .alloc_nodes = 1});
    add({.id = 300,
         .submit = 5200,
         .state = pb::JOB_COMPLETED,
         .start = 5300,
         .end = 5600,
         .nodes = "n7",
         .alloc_nodes = 1});
    add({.id = 100, .submit = 1000, .user = "carol", .end = 2000, .cluster = "c2"});
    pb::AcctJob* j = batch.mutable_jobs(1);
    for (uint32_t step : {1u, kExternStepId, 0u, kBatchStepId}) {
      *j->add_steps() = MakeStep(step, "s" + std::to_string(step));
    }
    ASSERT_TRUE(store_->StoreRecords(batch).ok());
  }

  Strings Run(pb::AcctJobQuery q, bool all_clusters = false) {
    if (!all_clusters && q.clusters().empty()) q.add_clusters("c1");
    return Ids(Query(*store_, q));
  }

  std::unique_ptr<AcctStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Backends, AcctStoreQueryTest, ::testing::Values("sqlite", "mariadb"),
                         [](const auto& info) { return info.param; });

TEST_P(AcctStoreQueryTest, AllOrderedByJobThenTask) {
  EXPECT_EQ(Run({}), (Strings{"100", "101", "102", "103", "200_1", "200_2", "200_3", "300"}));
  auto everything = Run({}, true);
  EXPECT_EQ(everything.size(), 9u);
  EXPECT_EQ(everything[0], "100");
  EXPECT_EQ(everything[1], "100");  // c2's job 100 after c1's
}

TEST_P(AcctStoreQueryTest, JobIdsAndArrays) {
  pb::AcctJobQuery q;
  q.add_job_ids(200);
  EXPECT_EQ(Run(q), (Strings{"200_1", "200_2", "200_3"}));
  q.clear_job_ids();
  q.add_job_ids(201);
  q.add_job_ids(101);
  EXPECT_EQ(Run(q), (Strings{"101", "200_1"}));

  pb::AcctJobQuery t;
  t.add_job_id_texts("200_2");
  EXPECT_EQ(Run(t), Strings{"200_2"});
  t.add_job_id_texts("101.batch");
  t.add_job_id_texts(" 102.0 ");
  EXPECT_EQ(Run(t), (Strings{"101", "102", "200_2"}));
  t.clear_job_id_texts();
  t.add_job_id_texts("200_[1,3]");
  EXPECT_EQ(Run(t), (Strings{"200_1", "200_3"}));
  t.clear_job_id_texts();
  t.add_job_id_texts("200_[1-2]");
  EXPECT_EQ(Run(t), (Strings{"200_1", "200_2"}));
  t.clear_job_id_texts();
  t.add_job_id_texts("200");
  EXPECT_EQ(Run(t), (Strings{"200_1", "200_2", "200_3"}));

  for (const char* bad : {"abc", "12x", "1_[3-1]", "", "1_a"}) {
    pb::AcctJobQuery b;
    b.add_job_id_texts(bad);
    auto r = store_->QueryJobs(b, 100000);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().find("invalid job id"), std::string::npos) << r.error();
  }
}

TEST_P(AcctStoreQueryTest, UsersAccountsPartitionsNamesReasons) {
  pb::AcctJobQuery q;
  q.add_users("alice");
  EXPECT_EQ(Run(q).size(), 7u);
  q.clear_users();
  q.add_users("bob");
  q.add_users("nobody");
  EXPECT_EQ(Run(q), Strings{"101"});
  q.clear_users();
  q.add_users("carol");
  EXPECT_EQ(Run(q), Strings{});
  EXPECT_EQ(Run(q, true), Strings{"100"});

  pb::AcctJobQuery a;
  a.add_accounts("chem");
  EXPECT_EQ(Run(a), (Strings{"101", "102"}));
  a.add_partitions("batch");
  EXPECT_EQ(Run(a), Strings{"102"});

  pb::AcctJobQuery p;
  p.add_partitions("debug");
  EXPECT_EQ(Run(p), Strings{"101"});
  pb::AcctJobQuery n;
  n.add_names("prep");
  n.add_names("sim");
  EXPECT_EQ(Run(n), (Strings{"100", "101"}));
  pb::AcctJobQuery r;
  r.add_reasons("Priority");
  EXPECT_EQ(Run(r), Strings{"103"});
  pb::AcctJobQuery qos;
  qos.add_qos("normal");
  EXPECT_EQ(Run(qos).size(), 8u);
  qos.set_qos(0, "high");
  EXPECT_EQ(Run(qos).size(), 0u);
}

TEST_P(AcctStoreQueryTest, StatesAndDuplicates) {
  pb::AcctJobQuery q;
  q.add_states(pb::JOB_FAILED);
  EXPECT_EQ(Run(q), Strings{"101"});
  q.clear_states();
  q.add_states(pb::JOB_NODE_FAIL);
  auto nf = Query(*store_, q);  // the earlier record matches, and is the latest that matches
  ASSERT_EQ(nf.size(), 1u);
  EXPECT_EQ(nf[0].submit_time(), 5000);

  pb::AcctJobQuery j;
  j.add_job_ids(300);
  auto latest = Query(*store_, j);
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].submit_time(), 5200);
  j.set_duplicates(true);
  auto both = Query(*store_, j);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].submit_time(), 5000);
  EXPECT_EQ(both[1].submit_time(), 5200);
}

TEST_P(AcctStoreQueryTest, TimeWindow) {
  pb::AcctJobQuery q;
  q.set_start(3000);
  q.set_end(3600);
  EXPECT_EQ(Run(q), (Strings{"102", "103"}));
  q.set_start(1650);
  q.set_end(1800);
  EXPECT_EQ(Run(q), (Strings{"100", "101"}));
  q.set_start(1700);  // 101 ended at 1700: still in [1700, ...)
  q.set_end(0);
  EXPECT_EQ(Run(q).front(), "100");
  EXPECT_EQ(Run(q)[1], "101");
  q.set_start(2001);
  EXPECT_EQ(Run(q), (Strings{"102", "103", "200_1", "200_2", "200_3", "300"}));
  q.set_start(0);
  q.set_end(1500);  // submitted before 1500
  EXPECT_EQ(Run(q), Strings{"100"});

  // -s with a window: the state held during the window.
  pb::AcctJobQuery s;
  s.set_start(1650);
  s.set_end(1800);
  s.add_states(pb::JOB_RUNNING);
  s.set_by_state_window(true);
  EXPECT_EQ(Run(s), (Strings{"100", "101"}));
  s.set_start(3200);
  s.set_end(3600);
  s.set_states(0, pb::JOB_PENDING);
  EXPECT_EQ(Run(s), Strings{"103"});
  s.set_start(1000);
  s.set_end(1750);
  s.set_states(0, pb::JOB_FAILED);
  EXPECT_EQ(Run(s), Strings{"101"});
  s.set_end(1700);
  EXPECT_EQ(Run(s), Strings{});
}

TEST_P(AcctStoreQueryTest, NodesSizesAndLimit) {
  pb::AcctJobQuery q;
  q.add_nodes("n2");
  EXPECT_EQ(Run(q), (Strings{"100", "102"}));
  q.set_nodes(0, "n[4-5]");
  EXPECT_EQ(Run(q), (Strings{"102", "200_1", "200_2", "200_3"}));
  // The latest of 300's records that matched: the first one, which ran on n6.
  q.set_nodes(0, "n6");
  auto n6 = Query(*store_, q);
  ASSERT_EQ(n6.size(), 1u);
  EXPECT_EQ(n6[0].submit_time(), 5000);
  q.set_nodes(0, "n[6-7]");
  EXPECT_EQ(Query(*store_, q).at(0).submit_time(), 5200);
  q.set_duplicates(true);
  EXPECT_EQ(Run(q), (Strings{"300", "300"}));

  pb::AcctJobQuery n;
  n.set_min_nodes(2);
  EXPECT_EQ(Run(n), (Strings{"100", "102"}));
  n.set_min_nodes(1);
  n.set_max_nodes(1);
  EXPECT_EQ(Run(n), (Strings{"101", "200_1", "200_2", "200_3", "300"}));

  pb::AcctJobQuery l;
  l.set_limit(2);
  EXPECT_EQ(Run(l), (Strings{"100", "101"}));
  l.set_duplicates(true);  // the limit goes to SQL
  EXPECT_EQ(Run(l), (Strings{"100", "101"}));
}

TEST_P(AcctStoreQueryTest, StepsInSacctOrder) {
  pb::AcctJobQuery q;
  q.add_clusters("c1");
  q.add_job_ids(100);
  q.set_include_steps(true);
  auto jobs = Query(*store_, q);
  ASSERT_EQ(jobs.size(), 1u);
  std::vector<uint32_t> ids;
  for (const auto& s : jobs[0].steps()) ids.push_back(s.step_id());
  EXPECT_EQ(ids, (std::vector<uint32_t>{kBatchStepId, kExternStepId, 0, 1}));
  EXPECT_EQ(jobs[0].steps(0).name(), "s" + std::to_string(kBatchStepId));
  // c2's job 100 has no steps; without include_steps none are returned.
  EXPECT_EQ(Query(*store_,
                  [] {
                    pb::AcctJobQuery x;
                    x.add_clusters("c2");
                    x.set_include_steps(true);
                    return x;
                  }())[0]
                .steps_size(),
            0);
  q.set_include_steps(false);
  EXPECT_EQ(Query(*store_, q)[0].steps_size(), 0);
}

// ------------------------------------------------------------------------------------------
// Associations
// ------------------------------------------------------------------------------------------

TEST_P(AcctStoreTest, AssocStateRoundTrip) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  auto empty = store->LoadAssocState();
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_EQ(empty->version, 0u);
  EXPECT_EQ(empty->next_assoc_id, 1u);
  EXPECT_EQ(empty->next_qos_id, 1u);

  AssocChanges ch;
  pb::AcctCluster c;
  c.set_name("c1");
  c.set_tres("cpu=16,mem=32G,node=4");
  ch.clusters.push_back(c);
  for (const char* name : {"root", "phys"}) {
    pb::AcctAccount a;
    a.set_name(name);
    a.set_description(std::string(name) + " dept");
    ch.accounts.push_back(a);
  }
  pb::AcctUser u;
  u.set_name("alice");
  u.set_default_account("phys");
  u.set_admin_level("None");
  u.add_coordinator_of("phys");
  ch.users.push_back(u);
  for (uint32_t id : {1u, 2u, 3u}) {
    pb::AcctAssoc a;
    a.set_id(id);
    a.set_cluster("c1");
    a.set_account(id == 1 ? "root" : "phys");
    a.set_parent_account(id == 2 ? "root" : "");
    a.set_user(id == 3 ? "alice" : "");
    a.set_shares(id == 3 ? kSharesParent : 1);
    a.mutable_limits()->set_grp_jobs(10);
    a.mutable_limits()->set_max_tres_per_job("cpu=4");
    a.add_qos("normal");
    a.set_is_default(id == 3);
    ch.assocs.push_back(a);
  }
  pb::AcctQos qos;
  qos.set_id(1);
  qos.set_name("normal");
  qos.set_usage_factor(1.0);
  qos.add_flags("DenyOnLimit");
  ch.qos.push_back(qos);
  ASSERT_TRUE(store->SaveAssocChanges(ch, 5).ok());

  store = OpenStore();  // a fresh connection reads what was committed
  auto state = store->LoadAssocState();
  ASSERT_TRUE(state.ok()) << state.error();
  EXPECT_EQ(state->version, 5u);
  EXPECT_EQ(state->next_assoc_id, 4u);
  EXPECT_EQ(state->next_qos_id, 2u);
  ASSERT_EQ(state->clusters.size(), 1u);
  EXPECT_EQ(state->clusters[0].SerializeAsString(), c.SerializeAsString());
  ASSERT_EQ(state->accounts.size(), 2u);
  EXPECT_EQ(state->accounts[0].name(), "phys");  // by name
  EXPECT_EQ(state->accounts[1].SerializeAsString(), ch.accounts[0].SerializeAsString());
  ASSERT_EQ(state->users.size(), 1u);
  EXPECT_EQ(state->users[0].SerializeAsString(), u.SerializeAsString());
  ASSERT_EQ(state->assocs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(state->assocs[i].SerializeAsString(), ch.assocs[i].SerializeAsString()) << i;
  }
  ASSERT_EQ(state->qos.size(), 1u);
  EXPECT_EQ(state->qos[0].SerializeAsString(), qos.SerializeAsString());

  // Deleting keeps the row; the version moves on; ids are never reused.
  AssocChanges del;
  pb::AcctAssoc gone = ch.assocs[2];
  gone.set_deleted(true);
  gone.set_is_default(false);
  del.assocs.push_back(gone);
  pb::AcctUser gone_user = u;
  gone_user.set_deleted(true);
  gone_user.set_default_account("");
  del.users.push_back(gone_user);
  ASSERT_TRUE(store->SaveAssocChanges(del, 6).ok());
  state = store->LoadAssocState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->version, 6u);
  ASSERT_EQ(state->assocs.size(), 3u);
  EXPECT_TRUE(state->assocs[2].deleted());
  EXPECT_FALSE(state->assocs[2].is_default());
  EXPECT_TRUE(state->users[0].deleted());
  EXPECT_EQ(state->next_assoc_id, 4u);
  EXPECT_EQ(Count("assocs"), 3);
  EXPECT_EQ(Count("users"), 1);
}

// Names are bytes, as in Slurm: a Latin-1 job name, user, account and node list are stored and
// read back unchanged, and filters match them.
TEST_P(AcctStoreTest, NamesThatAreNotUtf8RoundTrip) {
  const std::string latin1 = "caf\xe9";
  const std::string raw = "\xff\xfe-\x80";
  const std::string nodes = std::string("n\xe9") + "1";  // "n\xe91" would be one hex escape
  auto store = OpenStore();
  ASSERT_TRUE(store);
  pb::AcctRecordBatch batch;
  batch.set_cluster("c1");
  *batch.add_jobs() = MakeJob(
      {.id = 1, .submit = 10, .user = latin1, .account = raw, .nodes = nodes, .name = latin1});
  *batch.add_jobs() = MakeJob({.id = 2, .submit = 10, .name = "caf\xc3\xa9"});
  ASSERT_TRUE(store->StoreRecords(batch).ok());

  pb::AcctJobQuery by_name;
  by_name.add_names(latin1);
  auto jobs = Query(*store, by_name);
  ASSERT_EQ(Ids(jobs), Strings{"1"});
  EXPECT_EQ(jobs[0].name(), latin1);
  EXPECT_EQ(jobs[0].user(), latin1);
  EXPECT_EQ(jobs[0].account(), raw);
  EXPECT_EQ(jobs[0].nodelist(), nodes);
  pb::AcctJobQuery by_account;
  by_account.add_accounts(raw);
  EXPECT_EQ(Ids(Query(*store, by_account)), Strings{"1"});
  pb::AcctJobQuery utf8;
  utf8.add_names("caf\xc3\xa9");
  EXPECT_EQ(Ids(Query(*store, utf8)), Strings{"2"});
}

// A schema-1 MariaDB database (utf8mb4 text columns) is migrated to binary columns on open, keeps
// its rows, and then takes a name that is not UTF-8.
TEST_P(AcctStoreTest, MigratesSchema1TextColumnsToBytes) {
  ASSERT_TRUE(OpenStore());
  pb::AcctRecordBatch old;
  old.set_cluster("c1");
  *old.add_jobs() = MakeJob({.id = 1, .submit = 10, .name = "caf\xc3\xa9"});
  ASSERT_TRUE(OpenStore()->StoreRecords(old).ok());
  auto conn = Connect();
  ASSERT_TRUE(conn);
  if (mariadb()) {
    // Back to schema 1's column types.
    ASSERT_TRUE(conn->Exec("ALTER TABLE jobs MODIFY job_name MEDIUMTEXT CHARACTER SET utf8mb4 "
                           "COLLATE utf8mb4_bin NOT NULL, MODIFY user_name VARCHAR(255) "
                           "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL")
                    .ok());
    pb::AcctRecordBatch refused;
    refused.set_cluster("c1");
    *refused.add_jobs() = MakeJob({.id = 2, .submit = 10, .name = "caf\xe9"});
    EXPECT_FALSE(OpenStore()->StoreRecords(refused).ok()) << "schema 1 took a non-UTF-8 name";
  }
  ASSERT_TRUE(conn->Exec("UPDATE shoal_meta SET meta_value = '1' WHERE meta_key = "
                         "'schema_version'")
                  .ok());
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  pb::AcctRecordBatch batch;
  batch.set_cluster("c1");
  *batch.add_jobs() = MakeJob({.id = 3, .submit = 10, .user = "\xe9", .name = "caf\xe9"});
  ASSERT_TRUE(store->StoreRecords(batch).ok());
  auto jobs = Query(*store, {});
  ASSERT_EQ(Ids(jobs), (Strings{"1", "3"}));
  EXPECT_EQ(jobs[0].name(), "caf\xc3\xa9");
  EXPECT_EQ(jobs[1].name(), "caf\xe9");
  EXPECT_EQ(jobs[1].user(), "\xe9");
}

// ------------------------------------------------------------------------------------------
// Hostile names
// ------------------------------------------------------------------------------------------

TEST_P(AcctStoreTest, NamesAreDataNotSql) {
  const std::string drop = "x'); DROP TABLE jobs; --";
  const std::string always = "a' OR '1'='1";
  const std::string quotes = "q\"`\\'; DELETE FROM steps; #";
  auto store = OpenStore();
  ASSERT_TRUE(store);
  pb::AcctRecordBatch batch;
  batch.set_cluster(drop);
  *batch.add_jobs() = MakeJob({.id = 1,
                               .submit = 10,
                               .user = drop,
                               .account = quotes,
                               .partition = always,
                               .name = always,
                               .cluster = ""});
  *batch.add_jobs() = MakeJob({.id = 2, .submit = 10, .user = "alice", .cluster = ""});
  pb::AcctJob* j = batch.mutable_jobs(0);
  *j->add_steps() = MakeStep(0, drop);
  ASSERT_TRUE(store->StoreRecords(batch).ok());

  pb::AcctJobQuery q;
  q.add_users(drop);
  q.set_include_steps(true);
  auto jobs = Query(*store, q);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].user(), drop);
  EXPECT_EQ(jobs[0].cluster(), drop);
  EXPECT_EQ(jobs[0].account(), quotes);
  EXPECT_EQ(jobs[0].partition(), always);
  ASSERT_EQ(jobs[0].steps_size(), 1);
  EXPECT_EQ(jobs[0].steps(0).name(), drop);

  for (const std::string& probe : {always, std::string("alice' OR '1'='1"), std::string("%")}) {
    pb::AcctJobQuery p;
    p.add_users(probe);
    EXPECT_TRUE(Query(*store, p).empty()) << probe;
    pb::AcctJobQuery c;
    c.add_clusters(probe);
    EXPECT_TRUE(Query(*store, c).empty()) << probe;
  }
  pb::AcctJobQuery part;
  part.add_partitions(always);
  EXPECT_EQ(Ids(Query(*store, part)), Strings{"1"});
  pb::AcctJobQuery acct;
  acct.add_accounts(quotes);
  EXPECT_EQ(Ids(Query(*store, acct)), Strings{"1"});
  pb::AcctJobQuery cl;
  cl.add_clusters(drop);
  EXPECT_EQ(Query(*store, cl).size(), 2u);
  pb::AcctJobQuery bad;
  bad.add_job_id_texts("1 OR 1=1");
  EXPECT_FALSE(store->QueryJobs(bad, 100).ok());

  AssocChanges ch;
  pb::AcctAccount a;
  a.set_name(drop);
  a.set_description(always);
  ch.accounts.push_back(a);
  pb::AcctUser u;
  u.set_name(always);
  u.set_default_account(drop);
  ch.users.push_back(u);
  ASSERT_TRUE(store->SaveAssocChanges(ch, 1).ok());
  auto state = store->LoadAssocState();
  ASSERT_TRUE(state.ok()) << state.error();
  ASSERT_EQ(state->accounts.size(), 1u);
  EXPECT_EQ(state->accounts[0].name(), drop);
  ASSERT_EQ(state->users.size(), 1u);
  EXPECT_EQ(state->users[0].name(), always);

  // Every table is still there, with exactly the rows written.
  EXPECT_EQ(Count("jobs"), 2);
  EXPECT_EQ(Count("steps"), 1);
  EXPECT_EQ(Count("accounts"), 1);
  EXPECT_EQ(Count("users"), 1);
}

// ------------------------------------------------------------------------------------------
// Connections
// ------------------------------------------------------------------------------------------

TEST_P(AcctStoreTest, ServerLossIsUnavailableAndReconnectWorks) {
  if (!mariadb()) GTEST_SKIP() << "SQLite has no server to lose";
  auto store = OpenStore();
  ASSERT_TRUE(store);
  pb::AcctRecordBatch batch;
  batch.set_cluster("c1");
  *batch.add_jobs() = MakeJob({.id = 1, .submit = 10});
  ASSERT_TRUE(store->StoreRecords(batch).ok());

  MariaDbServer& server = MariaDbServer::Get();
  server.Stop();
  *batch.add_jobs() = MakeJob({.id = 2, .submit = 20});
  Status st = store->StoreRecords(batch);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable) << st.message();
  auto q = store->QueryJobs({}, 100);
  EXPECT_EQ(q.status().code(), ErrorCode::kUnavailable) << q.error();
  auto conn = OpenSql(config_);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), ErrorCode::kUnavailable) << conn.error();

  std::string err = server.Start(std::to_string(server.port()));
  ASSERT_EQ(err, "");
  store = OpenStore();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->StoreRecords(batch).ok());
  auto jobs = store->QueryJobs({}, 100);
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_EQ(Ids(*jobs), (Strings{"1", "2"}));
}

TEST_P(AcctStoreTest, MariaDbAddressForms) {
  if (!mariadb()) GTEST_SKIP() << "MariaDB only";
  StorageConfig tcp = config_;
  tcp.host = "127.0.0.1";
  auto conn = OpenSql(tcp);
  ASSERT_TRUE(conn.ok()) << conn.error();
  EXPECT_EQ((*conn)->dialect(), Dialect::kMysql);
  StorageConfig unix_prefixed = config_;
  unix_prefixed.host = "unix:" + config_.host;
  EXPECT_TRUE(OpenSql(unix_prefixed).ok());

  StorageConfig bad = config_;
  bad.loc = "x`; DROP DATABASE mysql; --";
  auto r = OpenSql(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().find("invalid StorageLoc"), std::string::npos) << r.error();

  StorageConfig wrong = config_;
  wrong.pass = "wrong";
  EXPECT_EQ(OpenSql(wrong).status().code(), ErrorCode::kAccessDenied);

  StorageConfig closed = tcp;
  closed.port = 1;  // nothing listens there
  auto refused = OpenSql(closed);
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable) << refused.error();
}

TEST_P(AcctStoreTest, ValuesRoundTrip) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  std::string blob("\0\x01\xff\xfe text", 9);  // the literal holds 9 bytes (and its NUL)
  ASSERT_TRUE(conn->Exec("CREATE TABLE t_values (k VARCHAR(255) NOT NULL, n BIGINT, d DOUBLE, "
                         "b " +
                         std::string(mariadb() ? "LONGBLOB" : "BLOB") + ")")
                  .ok());
  ASSERT_TRUE(conn->Exec("INSERT INTO t_values (k, n, d, b) VALUES (?, ?, ?, ?)",
                         {std::string("h\xc3\xa9llo"), int64_t{-5000000000}, 2.5, blob})
                  .ok());
  ASSERT_TRUE(conn->Exec("INSERT INTO t_values (k, n, d, b) VALUES (?, ?, ?, ?)",
                         {std::string("null"), std::monostate{}, std::monostate{}, std::string()})
                  .ok());
  auto rows = conn->Query("SELECT k, n, d, b FROM t_values ORDER BY k");
  ASSERT_TRUE(rows.ok()) << rows.error();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(std::get<std::string>((*rows)[0][0]), "h\xc3\xa9llo");
  EXPECT_EQ(std::get<int64_t>((*rows)[0][1]), -5000000000);
  EXPECT_EQ(std::get<double>((*rows)[0][2]), 2.5);
  EXPECT_EQ(std::get<std::string>((*rows)[0][3]), blob);
  EXPECT_TRUE(std::holds_alternative<std::monostate>((*rows)[1][1]));
  EXPECT_EQ(std::get<std::string>((*rows)[1][3]), "");
  // Transactions: a rolled back insert is gone.
  ASSERT_TRUE(conn->Begin().ok());
  ASSERT_TRUE(conn->Exec("DELETE FROM t_values WHERE k = ?", {std::string("null")}).ok());
  ASSERT_TRUE(conn->Rollback().ok());
  EXPECT_EQ(Count("t_values"), 2);
  auto err = conn->Query("SELECT nope FROM t_values");
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), ErrorCode::kInternal);
}

TEST(OpenSqlTest, UnknownTypeIsNamed) {
  StorageConfig config;
  config.type = "accounting_storage/filetxt";
  auto r = OpenSql(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().find("accounting_storage/filetxt"), std::string::npos) << r.error();
  config.type = "accounting_storage/sqlite";
  EXPECT_FALSE(OpenSql(config).ok());  // no file named
  config.loc = "/nonexistent-dir/x/acct.db";
  auto missing = OpenSql(config);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent-dir/x/acct.db"), std::string::npos);
}

}  // namespace
}  // namespace shoal::dbd
