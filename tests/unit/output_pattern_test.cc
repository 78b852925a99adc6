#include "noded/output_pattern.h"

#include <gtest/gtest.h>

namespace shoal::noded {
namespace {

OutputPatternContext Ctx() {
  OutputPatternContext c;
  c.job_id = 128;
  c.node_name = "n1";
  c.user_name = "alice";
  c.job_name = "train";
  return c;
}

TEST(OutputPattern, ManPageExamples) {
  OutputPatternContext c = Ctx();
  c.step = "0";
  EXPECT_EQ(ExpandOutputPattern("job%J.out", c), "job128.0.out");
  EXPECT_EQ(ExpandOutputPattern("job%4j.out", c), "job0128.out");
  c.task_id = 1;
  EXPECT_EQ(ExpandOutputPattern("job%j-%2t.out", c), "job128-01.out");
}

TEST(OutputPattern, BatchStep) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("slurm-%j.out", c), "slurm-128.out");
  EXPECT_EQ(ExpandOutputPattern("%J", c), "128");
  EXPECT_EQ(ExpandOutputPattern("%s", c), "batch");
  EXPECT_EQ(ExpandOutputPattern("%n.%t", c), "0.0");
}

TEST(OutputPattern, AllLetters) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("%N-%u-%x-%%-%j", c), "n1-alice-train-%-128");
}

TEST(OutputPattern, ArrayIds) {
  OutputPatternContext c = Ctx();
  c.job_id = 130;
  c.array_job_id = 128;
  c.array_task_id = 2;
  EXPECT_EQ(ExpandOutputPattern("slurm-%A_%a.out", c), "slurm-128_2.out");
  EXPECT_EQ(ExpandOutputPattern("%3a", c), "002");
  EXPECT_EQ(ExpandOutputPattern("%j", c), "130");
}

TEST(OutputPattern, NonArrayJobUsesJobIdForA) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("%A_%a", c), "128_4294967294");
}

TEST(OutputPattern, PaddingIgnoredForText) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("%5N_%3u_%4x", c), "n1_alice_train");
}

TEST(OutputPattern, PaddingNeverTruncates) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("%2j", c), "128");
  EXPECT_EQ(ExpandOutputPattern("%10j", c), "0000000128");
}

TEST(OutputPattern, BackslashDisablesExpansion) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("out\\%j.txt", c), "out%j.txt");
  EXPECT_EQ(ExpandOutputPattern("a\\\\b%x", c), "ab%x");
}

TEST(OutputPattern, UnknownAndTrailing) {
  OutputPatternContext c = Ctx();
  EXPECT_EQ(ExpandOutputPattern("%q%j", c), "%q128");
  EXPECT_EQ(ExpandOutputPattern("x%", c), "x%");
  EXPECT_EQ(ExpandOutputPattern("x%12", c), "x%12");
  EXPECT_EQ(ExpandOutputPattern("/abs/path/plain.log", c), "/abs/path/plain.log");
  EXPECT_EQ(ExpandOutputPattern("", c), "");
}

TEST(OutputPattern, Defaults) {
  EXPECT_EQ(DefaultOutputPattern(false), "slurm-%j.out");
  EXPECT_EQ(DefaultOutputPattern(true), "slurm-%A_%a.out");
}

}  // namespace
}  // namespace shoal::noded
