#include "sim/simulator.h"

#include <gtest/gtest.h>

namespace shoal::sim {
namespace {

TEST(Simulator, BackfillBeatsPriorityOnlyOnUtilizationAndWait) {
  Workload w = Synthetic({800, 42, 32, 16, 1.2});
  SimConfig cfg;
  cfg.nodes = 32;
  cfg.cpus_per_node = 16;
  cfg.policy = Policy::kPriority;
  SimReport prio = Simulate(w, cfg);
  cfg.policy = Policy::kBackfill;
  SimReport bf = Simulate(w, cfg);
  cfg.policy = Policy::kFifo;
  SimReport fifo = Simulate(w, cfg);
  EXPECT_EQ(prio.jobs_completed, 800u);
  EXPECT_EQ(bf.jobs_completed, 800u);
  EXPECT_EQ(fifo.jobs_completed, 800u);
  EXPECT_GT(bf.utilization, prio.utilization);
  EXPECT_LT(bf.mean_wait_s, prio.mean_wait_s);
  EXPECT_LT(bf.mean_bounded_slowdown, prio.mean_bounded_slowdown);
  EXPECT_GT(bf.utilization, 0);
  EXPECT_LE(bf.utilization, 1.0);
  std::string table = FormatReports({fifo, prio, bf});
  EXPECT_NE(table.find("backfill"), std::string::npos);
}

TEST(Simulator, SyntheticIsDeterministic) {
  Workload a = Synthetic({200, 7, 16, 8, 1.0});
  Workload b = Synthetic({200, 7, 16, 8, 1.0});
  ASSERT_EQ(a.jobs.size(), 200u);
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].submit, b.jobs[i].submit);
    EXPECT_EQ(a.jobs[i].tasks, b.jobs[i].tasks);
    EXPECT_LE(a.jobs[i].runtime, a.jobs[i].limit);
    EXPECT_LE(a.jobs[i].tasks, 16u * 8u);
  }
}

TEST(Simulator, ReadsSwf) {
  const char* text =
      "; Version: 2.2\n"
      "; MaxProcs: 64\n"
      "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
      "2 5 0 50 -1 -1 -1 40 -1 -1 1 2 1 -1 1 -1 -1 -1\n"
      "3 6 0 -1 4 -1 -1 4 100 -1 0 2 1 -1 1 -1 -1 -1\n"
      "\n"
      "4 7 0 30 1000 -1 -1 -1 60 -1 1 2 1 -1 1 -1 -1 -1\n";
  auto w = ReadSwf(text, 4, 16);
  ASSERT_TRUE(w) << w.error();
  ASSERT_EQ(w->jobs.size(), 3u);  // job 3 never ran
  EXPECT_EQ(w->jobs[0].tasks, 4u);
  EXPECT_EQ(w->jobs[0].limit, 200);
  EXPECT_EQ(w->jobs[0].runtime, 100);
  EXPECT_EQ(w->jobs[0].nodes, 1u);
  EXPECT_EQ(w->jobs[1].tasks, 40u);
  EXPECT_EQ(w->jobs[1].nodes, 3u);
  EXPECT_EQ(w->jobs[1].limit, 50);   // no requested time: its run time
  EXPECT_EQ(w->jobs[2].tasks, 64u);  // capped to the cluster
  EXPECT_FALSE(ReadSwf("1 2 3\n", 4, 16));
  SimConfig cfg;
  cfg.nodes = 4;
  cfg.cpus_per_node = 16;
  SimReport r = Simulate(*w, cfg);
  EXPECT_EQ(r.jobs_completed, 3u);
}

TEST(Simulator, ParsesPolicies) {
  EXPECT_EQ(ParsePolicy("fifo").value(), Policy::kFifo);
  EXPECT_EQ(ParsePolicy("priority").value(), Policy::kPriority);
  EXPECT_EQ(ParsePolicy("backfill").value(), Policy::kBackfill);
  EXPECT_FALSE(ParsePolicy("sjf"));
}

}  // namespace
}  // namespace shoal::sim
