#include "sched/priority.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

PriorityConfig Config(const ConfMap& conf) {
  auto c = ParsePriorityConfig(conf);
  EXPECT_TRUE(c) << c.error();
  return c ? *c : PriorityConfig{};
}

PriorityContext Ctx() {
  PriorityContext ctx;
  ctx.now = 100000;
  ctx.total_nodes = 10;
  ctx.total_cpus = 100;
  ctx.total_memory_mb = 1000;
  ctx.max_partition_job_factor = 4;
  ctx.max_qos_priority = 200;
  return ctx;
}

class HalfShare : public FairShareSource {
 public:
  double Factor(const std::string& user, const std::string&) const override {
    return user == "alice" ? 0.5 : 0.25;
  }
};

TEST(Priority, ParsesConfig) {
  auto c = Config({{"PriorityType", "priority/multifactor"},
                   {"PriorityMaxAge", "1-00:00:00"},
                   {"priorityweightage", "1000"},
                   {"PriorityWeightFairshare", "2000"},
                   {"PriorityWeightJobSize", "300"},
                   {"PriorityWeightPartition", "400"},
                   {"PriorityWeightQOS", "500"},
                   {"PriorityWeightTRES", "CPU=1000,Mem=2000"},
                   {"PriorityFavorSmall", "YES"}});
  EXPECT_EQ(c.type, PriorityType::kMultifactor);
  EXPECT_EQ(c.max_age_s, 86400);
  EXPECT_EQ(c.weight_age, 1000u);
  EXPECT_EQ(c.weight_fairshare, 2000u);
  EXPECT_EQ(c.weight_job_size, 300u);
  EXPECT_EQ(c.weight_partition, 400u);
  EXPECT_EQ(c.weight_qos, 500u);
  EXPECT_EQ(c.weight_tres.at("cpu"), 1000);
  EXPECT_EQ(c.weight_tres.at("mem"), 2000);
  EXPECT_TRUE(c.favor_small);
  EXPECT_EQ(ParsePriorityConfig({}).value().type, PriorityType::kBasic);
  EXPECT_EQ(ParsePriorityConfig({}).value().max_age_s, 7 * 86400);
  EXPECT_FALSE(ParsePriorityConfig({{"PriorityWeightAge", "x"}}));
  EXPECT_FALSE(ParsePriorityConfig({{"PriorityType", "priority/other"}}));
  EXPECT_FALSE(ParsePriorityConfig({{"PriorityWeightTRES", "CPU"}}));
}

TEST(Priority, AgeGrowsToItsWeightAtMaxAge) {
  auto c = Config({{"PriorityType", "priority/multifactor"},
                   {"PriorityMaxAge", "1000"},
                   {"PriorityWeightAge", "1000"}});
  // "1000" is minutes, as slurm.conf reads times.
  EXPECT_EQ(c.max_age_s, 60000);
  PriorityJob j;
  j.eligible_time = Ctx().now - 30000;
  auto b = MultifactorPriority(c, Ctx(), j, FlatFairShare());
  EXPECT_DOUBLE_EQ(b.age, 500);
  EXPECT_EQ(b.priority, 500u);
  j.eligible_time = 0;
  EXPECT_DOUBLE_EQ(MultifactorPriority(c, Ctx(), j, FlatFairShare()).age, 1000);
  j.eligible_time = Ctx().now + 10;  // not eligible yet: no age
  EXPECT_DOUBLE_EQ(MultifactorPriority(c, Ctx(), j, FlatFairShare()).age, 0);
}

TEST(Priority, FairShareComesFromTheSource) {
  PriorityConfig c;
  c.type = PriorityType::kMultifactor;
  c.weight_fairshare = 1000;
  PriorityJob j;
  j.user = "alice";
  EXPECT_DOUBLE_EQ(MultifactorPriority(c, Ctx(), j, HalfShare()).fairshare, 500);
  EXPECT_DOUBLE_EQ(MultifactorPriority(c, Ctx(), j, FlatFairShare()).fairshare, 1000);
}

TEST(Priority, JobSizeFavoursLargeUnlessFavorSmall) {
  PriorityConfig c;
  c.weight_job_size = 1000;
  PriorityJob small, large;
  small.nodes = 1, small.cpus = 1;
  large.nodes = 5, large.cpus = 50;
  auto s = MultifactorPriority(c, Ctx(), small, FlatFairShare()).job_size;
  auto l = MultifactorPriority(c, Ctx(), large, FlatFairShare()).job_size;
  EXPECT_DOUBLE_EQ(l, 500);
  EXPECT_DOUBLE_EQ(s, 100);  // 1 of 10 nodes
  c.favor_small = true;
  small.nodes = 0;  // CPUs only
  EXPECT_DOUBLE_EQ(MultifactorPriority(c, Ctx(), small, FlatFairShare()).job_size, 1000);
  EXPECT_LT(MultifactorPriority(c, Ctx(), large, FlatFairShare()).job_size, 1000);
}

TEST(Priority, PartitionQosTresNiceAndSite) {
  PriorityConfig c;
  c.weight_partition = 1000;
  c.weight_qos = 1000;
  c.weight_tres = {{"cpu", 100}, {"mem", 200}};
  PriorityJob j;
  j.partition_job_factor = 2;
  j.qos_priority = 50;
  j.cpus = 10;
  j.memory_mb = 500;
  j.site_factor = 7;
  j.nice = 100;
  auto b = MultifactorPriority(c, Ctx(), j, FlatFairShare());
  EXPECT_DOUBLE_EQ(b.partition, 500);
  EXPECT_DOUBLE_EQ(b.qos, 250);
  EXPECT_DOUBLE_EQ(b.tres.at("cpu"), 10);
  EXPECT_DOUBLE_EQ(b.tres.at("mem"), 100);
  EXPECT_DOUBLE_EQ(b.tres_total, 110);
  EXPECT_EQ(b.nice, 100);
  EXPECT_DOUBLE_EQ(b.site, 7);
  EXPECT_EQ(b.priority, 500u + 250 + 110 + 7 - 100);
  j.nice = -1000;  // administrators may raise a job's priority
  EXPECT_EQ(MultifactorPriority(c, Ctx(), j, FlatFairShare()).priority,
            500u + 250 + 110 + 7 + 1000);
  j.nice = 100000;  // never below 1: 0 means held
  EXPECT_EQ(MultifactorPriority(c, Ctx(), j, FlatFairShare()).priority, 1u);
}

TEST(Priority, BasicIsFifo) {
  EXPECT_EQ(BasicPriority(0), kBasicTopPriority);
  EXPECT_GT(BasicPriority(1), BasicPriority(2));
  EXPECT_EQ(BasicPriority(uint64_t{1} << 40), 1u);
}

TEST(Priority, TierThenPriorityThenJobId) {
  std::vector<SchedOrderKey> keys = {{1, 500, 4}, {2, 10, 5}, {1, 900, 3}, {1, 500, 2}};
  SortForScheduling(keys);
  std::vector<uint32_t> ids;
  for (const auto& k : keys) ids.push_back(k.job_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{5, 3, 2, 4}));
}

}  // namespace
}  // namespace shoal::sched
