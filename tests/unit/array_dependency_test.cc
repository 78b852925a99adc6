#include <gtest/gtest.h>

#include "sched/array_spec.h"
#include "sched/dependency.h"

namespace shoal::sched {
namespace {

TEST(ArraySpec, RangesListsStepsAndThrottle) {
  auto a = ParseArraySpec("0-7%3", 1001);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->indexes.size(), 8u);
  EXPECT_EQ(a->throttle, 3u);
  a = ParseArraySpec("0,6,16-18", 1001);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->indexes, (std::vector<uint32_t>{0, 6, 16, 17, 18}));
  a = ParseArraySpec("0-15:4", 1001);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->indexes, (std::vector<uint32_t>{0, 4, 8, 12}));
}

TEST(ArraySpec, ErrorsNameTheProblem) {
  for (const char* bad : {"", "5-1", "a-b", "1-2%x", "0-3:0", "1,,2"}) {
    auto a = ParseArraySpec(bad, 1001);
    EXPECT_FALSE(a) << bad;
    if (!a) {
      EXPECT_NE(a.error().find("Invalid job array specification"), std::string::npos);
    }
  }
  auto big = ParseArraySpec("0-1001", 1001);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().find("MaxArraySize"), std::string::npos);
}

TEST(Dependency, ParsesTypesListsAndDelays) {
  auto d = ParseDependency("afterok:12:13,afterany:14+5");
  ASSERT_TRUE(d);
  ASSERT_EQ(d->terms.size(), 3u);
  EXPECT_FALSE(d->any);
  EXPECT_EQ(d->terms[0].type, DepType::kAfterOk);
  EXPECT_EQ(d->terms[1].job_id, 13u);
  EXPECT_EQ(d->terms[2].delay_minutes, 5u);
  d = ParseDependency("afterok:7?afternotok:8_2");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->any);
  EXPECT_EQ(*d->terms[1].task, 2u);
  EXPECT_TRUE(ParseDependency("singleton"));
  EXPECT_FALSE(ParseDependency("afterwhat:1"));
  EXPECT_FALSE(ParseDependency("afterok:"));
  EXPECT_FALSE(ParseDependency("afterok:1,afterok:2?afterok:3"));
}

DepTarget Finished(bool ok, int64_t end = 100) {
  DepTarget t;
  t.exists = t.started = t.finished = true;
  t.ok = ok;
  t.start_time = end - 10;
  t.end_time = end;
  return t;
}

TEST(Dependency, AfterOkOnFailedJobIsNeverSatisfied) {
  auto d = *ParseDependency("afterok:1");
  EXPECT_EQ(EvaluateDependency(
                d, 200, [](const DepTerm&) { return Finished(false); }, false),
            DepState::kNeverSatisfied);
  EXPECT_EQ(EvaluateDependency(
                d, 200, [](const DepTerm&) { return Finished(true); }, false),
            DepState::kSatisfied);
  DepTarget running;
  running.exists = running.started = true;
  EXPECT_EQ(EvaluateDependency(
                d, 200, [&](const DepTerm&) { return running; }, false),
            DepState::kPending);
}

TEST(Dependency, AfterAnyAndNotOkAndDelays) {
  auto any = *ParseDependency("afterany:1");
  EXPECT_EQ(EvaluateDependency(
                any, 200, [](const DepTerm&) { return Finished(false); }, false),
            DepState::kSatisfied);
  auto notok = *ParseDependency("afternotok:1");
  EXPECT_EQ(EvaluateDependency(
                notok, 200, [](const DepTerm&) { return Finished(true); }, false),
            DepState::kNeverSatisfied);
  auto delayed = *ParseDependency("afterany:1+2");
  EXPECT_EQ(EvaluateDependency(
                delayed, 150, [](const DepTerm&) { return Finished(true); }, false),
            DepState::kPending);
  EXPECT_EQ(EvaluateDependency(
                delayed, 221, [](const DepTerm&) { return Finished(true); }, false),
            DepState::kSatisfied);
}

TEST(Dependency, QuestionMarkNeedsOnlyOne) {
  auto d = *ParseDependency("afterok:1?afterok:2");
  auto lookup = [](const DepTerm& t) { return Finished(t.job_id == 2); };
  EXPECT_EQ(EvaluateDependency(d, 200, lookup, false), DepState::kSatisfied);
  auto all = *ParseDependency("afterok:1,afterok:2");
  EXPECT_EQ(EvaluateDependency(all, 200, lookup, false), DepState::kNeverSatisfied);
}

TEST(Dependency, SingletonWaitsForEarlierJobOfSameName) {
  auto d = *ParseDependency("singleton");
  auto none = [](const DepTerm&) { return DepTarget{}; };
  EXPECT_EQ(EvaluateDependency(d, 0, none, true), DepState::kPending);
  EXPECT_EQ(EvaluateDependency(d, 0, none, false), DepState::kSatisfied);
}

TEST(Dependency, PurgedJobCountsAsDone) {
  auto d = *ParseDependency("afterany:99");
  EXPECT_EQ(EvaluateDependency(
                d, 0, [](const DepTerm&) { return DepTarget{}; }, false),
            DepState::kSatisfied);
}

}  // namespace
}  // namespace shoal::sched
