#include "ctld/journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio.hpp>
#include <filesystem>

namespace shoal::ctld {
namespace {

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-journal-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static pb::JournalRecord JobRec(uint32_t id, pb::JobState state) {
    pb::JournalRecord r;
    r.mutable_job()->set_job_id(id);
    r.mutable_job()->set_state(state);
    return r;
  }

  // Appends records and waits until the journal reports them durable.
  void AppendAll(Journal& j, asio::io_context& io, const std::vector<pb::JournalRecord>& recs) {
    bool done = false;
    std::vector<std::string> enc;
    for (const auto& r : recs) enc.push_back(Journal::Encode(r));
    io.restart();
    auto guard = asio::make_work_guard(io);  // the writer thread posts the completion later
    j.Append(std::move(enc), [&] { done = true; });
    while (!done) io.run_one();
  }

  std::map<uint32_t, pb::JobState> Replay() {
    asio::io_context io;
    Journal j(io, dir_);
    std::map<uint32_t, pb::JobState> jobs;
    EXPECT_TRUE(j.Open([&](pb::JournalRecord& r) {
                   if (r.has_job()) jobs[r.job().job_id()] = r.job().state();
                   if (r.body_case() == pb::JournalRecord::kPurgeJobId)
                     jobs.erase(r.purge_job_id());
                 }).ok());
    j.Stop();
    return jobs;
  }

  std::string dir_;
};

TEST_F(JournalTest, AcknowledgedRecordsSurviveReopen) {
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    AppendAll(j, io, {JobRec(1, pb::JOB_PENDING), JobRec(2, pb::JOB_PENDING)});
    AppendAll(j, io, {JobRec(1, pb::JOB_RUNNING)});
    j.Stop();
  }
  auto jobs = Replay();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[1], pb::JOB_RUNNING);
  EXPECT_EQ(jobs[2], pb::JOB_PENDING);
}

TEST_F(JournalTest, TornTailIsIgnoredAndTruncated) {
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    AppendAll(j, io, {JobRec(7, pb::JOB_PENDING)});
    j.Stop();
  }
  // A crash mid-append leaves half a record.
  int fd = ::open((dir_ + "/journal.log").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  std::string half = Journal::Encode(JobRec(8, pb::JOB_PENDING)).substr(0, 5);
  ASSERT_EQ(::write(fd, half.data(), half.size()), static_cast<ssize_t>(half.size()));
  ::close(fd);
  auto jobs = Replay();
  EXPECT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs.count(7));
  // New appends after the truncated tail are readable.
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    AppendAll(j, io, {JobRec(9, pb::JOB_PENDING)});
    j.Stop();
  }
  jobs = Replay();
  EXPECT_EQ(jobs.size(), 2u);
  EXPECT_TRUE(jobs.count(9));
}

// Appends overwrite space kept zero-filled ahead of them (no size change for fdatasync to commit).
// A controller killed with that space in place leaves zeros after its last record: replay must
// stop there, and the next controller must append right after the last record.
TEST_F(JournalTest, ZeroFilledSpaceLeftByACrashEndsReplay) {
  std::string crashed = dir_ + "/crashed";
  ASSERT_EQ(::mkdir(crashed.c_str(), 0700), 0);
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    AppendAll(j, io, {JobRec(1, pb::JOB_PENDING), JobRec(2, pb::JOB_PENDING)});
    AppendAll(j, io, {JobRec(1, pb::JOB_RUNNING)});
    // What a kill -9 now would leave on disk: the records, then the zero-filled space.
    EXPECT_GE(std::filesystem::file_size(dir_ + "/journal.log"), 1u << 20);
    std::filesystem::copy_file(dir_ + "/journal.log", crashed + "/journal.log");
    j.Stop();
  }
  EXPECT_LT(std::filesystem::file_size(dir_ + "/journal.log"), 256u) << "a clean stop trims it";
  std::string clean = dir_;
  dir_ = crashed;
  auto jobs = Replay();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[1], pb::JOB_RUNNING);
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    AppendAll(j, io, {JobRec(3, pb::JOB_PENDING)});
    j.Stop();
  }
  EXPECT_LT(std::filesystem::file_size(dir_ + "/journal.log"), 256u)
      << "the new record must follow the last one, not the zeros";
  jobs = Replay();
  EXPECT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[3], pb::JOB_PENDING);
  dir_ = clean;
}

TEST_F(JournalTest, CompactionKeepsStateAndEmptiesJournal) {
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    AppendAll(j, io, {JobRec(1, pb::JOB_COMPLETED)});
    pb::Snapshot s;
    *s.add_jobs() = JobRec(1, pb::JOB_COMPLETED).job();
    *s.add_jobs() = JobRec(2, pb::JOB_PENDING).job();
    j.Compact(s.SerializeAsString());
    AppendAll(j, io, {JobRec(3, pb::JOB_PENDING)});
    j.Stop();
  }
  EXPECT_LT(std::filesystem::file_size(dir_ + "/journal.log"), 64u);
  auto jobs = Replay();
  EXPECT_EQ(jobs.size(), 3u);
}

TEST_F(JournalTest, SnapshotComesFirstSoLaterPurgesHold) {
  {
    asio::io_context io;
    Journal j(io, dir_);
    ASSERT_TRUE(j.Open([](pb::JournalRecord&) {}).ok());
    pb::Snapshot s;
    *s.add_jobs() = JobRec(1, pb::JOB_COMPLETED).job();
    s.add_nodes()->set_name("dyn1");
    j.Compact(s.SerializeAsString());
    pb::JournalRecord purge;
    purge.set_purge_job_id(1);
    AppendAll(j, io, {purge});
    j.Stop();
  }
  EXPECT_TRUE(Replay().empty()) << "a job purged after the snapshot must stay purged";
  asio::io_context io;
  Journal j(io, dir_);
  std::vector<std::string> nodes;
  ASSERT_TRUE(j.Open([&](pb::JournalRecord& r) {
                 if (r.has_node()) nodes.push_back(r.node().name());
               }).ok());
  j.Stop();
  EXPECT_EQ(nodes, std::vector<std::string>{"dyn1"});
}

TEST(Crc32c, KnownVector) {
  // RFC 3720 test vector: 32 bytes of zeros.
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

}  // namespace
}  // namespace shoal::ctld
