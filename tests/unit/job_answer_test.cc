#include "cli/job_answer.h"

#include <gtest/gtest.h>

namespace shoal::cli {
namespace {

TEST(SplitJobAnswer, JobsServerTimeAndTheRest) {
  pb::Response resp;
  resp.set_rc(0);
  resp.set_error("note");
  for (uint32_t id : {5u, 6u, 7u}) {
    pb::JobRecord* j = resp.mutable_job_query()->add_jobs();
    j->set_job_id(id);
    j->mutable_spec()->set_name("job" + std::to_string(id));
  }
  resp.mutable_job_query()->set_server_time(1700000000);
  std::string bytes = resp.SerializeAsString();
  auto answer = SplitJobAnswer(bytes);
  ASSERT_TRUE(answer.ok()) << answer.error();
  ASSERT_EQ(answer->jobs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    pb::JobRecord j;
    ASSERT_TRUE(j.ParseFromArray(answer->jobs[i].data(), static_cast<int>(answer->jobs[i].size())));
    EXPECT_EQ(j.SerializeAsString(),
              resp.job_query().jobs(static_cast<int>(i)).SerializeAsString());
  }
  EXPECT_EQ(answer->server_time, 1700000000);
  EXPECT_EQ(answer->head.error(), "note");
  EXPECT_FALSE(answer->head.has_job_query());
}

TEST(SplitJobAnswer, ErrorsAndEmptyAnswers) {
  pb::Response resp;
  resp.set_rc(static_cast<int32_t>(ErrorCode::kInvalidJobId));
  resp.set_error("Invalid job id specified");
  resp.mutable_job_query()->set_server_time(5);
  auto answer = SplitJobAnswer(resp.SerializeAsString());
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->jobs.empty());
  EXPECT_EQ(answer->head.rc(), static_cast<int32_t>(ErrorCode::kInvalidJobId));
  EXPECT_EQ(answer->server_time, 5);
  EXPECT_TRUE(SplitJobAnswer("").ok());
}

// A streamed answer's parts say whether more follow; the first says how many jobs may come.
TEST(SplitJobAnswer, StreamedPartsCarryMoreAndTheHint) {
  pb::Response first;
  first.mutable_job_query()->add_jobs()->set_job_id(1);
  first.mutable_job_query()->set_server_time(9);
  first.mutable_job_query()->set_more(true);
  first.mutable_job_query()->set_jobs_hint(2);
  auto a = SplitJobAnswer(first.SerializeAsString());
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_TRUE(a->more);
  EXPECT_EQ(a->jobs_hint, 2u);
  EXPECT_EQ(a->server_time, 9);
  pb::Response last;
  last.mutable_job_query()->add_jobs()->set_job_id(2);
  auto b = SplitJobAnswer(last.SerializeAsString());
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_FALSE(b->more);
  ASSERT_EQ(b->jobs.size(), 1u);
  // The parts concatenated are one answer with both jobs.
  pb::Response whole;
  ASSERT_TRUE(whole.ParseFromString(first.SerializeAsString() + last.SerializeAsString()));
  EXPECT_EQ(whole.job_query().jobs_size(), 2);
}

TEST(SplitJobAnswer, MalformedBytesFail) {
  pb::Response resp;
  resp.mutable_job_query()->add_jobs()->set_job_id(1);
  std::string bytes = resp.SerializeAsString();
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    auto answer = SplitJobAnswer(std::string_view(bytes).substr(0, cut));
    EXPECT_FALSE(answer.ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(SplitJobAnswer(std::string("\x5a\x05\x0a\x09", 4)).ok());
}

}  // namespace
}  // namespace shoal::cli
