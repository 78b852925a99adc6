#include "ctld/shape_interner.h"

#include <gtest/gtest.h>

namespace shoal::ctld {
namespace {

sched::JobShape Simple(uint32_t cpus, uint32_t uid = 1000) {
  sched::JobShape s;
  s.min_nodes = 1;
  s.num_tasks = 1;
  s.cpus_per_task = cpus;
  s.uid = uid;
  return s;
}

TEST(ShapeInterner, EqualSimpleShapesAreOneObject) {
  ShapeInterner interner;
  auto a = interner.Intern(Simple(2));
  auto b = interner.Intern(Simple(2));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->cpus_per_task, 2u);
}

TEST(ShapeInterner, AnyDifferenceKeepsShapesApart) {
  ShapeInterner interner;
  auto base = interner.Intern(Simple(2));
  EXPECT_NE(base.get(), interner.Intern(Simple(4)).get());
  EXPECT_NE(base.get(), interner.Intern(Simple(2, 1001)).get());
  sched::JobShape exclusive = Simple(2);
  exclusive.exclusive = true;
  auto e = interner.Intern(exclusive);
  EXPECT_NE(base.get(), e.get());
  EXPECT_TRUE(e->exclusive);
  sched::JobShape mem = Simple(2);
  mem.mem_per_cpu_mb = 100;
  EXPECT_NE(base.get(), interner.Intern(mem).get());
}

TEST(ShapeInterner, ShapesWithNodeListsGresOrConstraintsAreNotShared) {
  ShapeInterner interner;
  sched::JobShape listed = Simple(1);
  listed.allowed = {3, 1};
  auto a = interner.Intern(listed);
  auto b = interner.Intern(listed);
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(a->allowed, (std::vector<int>{3, 1}));
  sched::JobShape gpus = Simple(1);
  gpus.gres.cpus_per_gpu = 2;
  EXPECT_NE(interner.Intern(gpus).get(), interner.Intern(gpus).get());
  EXPECT_EQ(interner.size(), 0u);
}

TEST(ShapeInterner, ForgetsShapesNoJobHolds) {
  ShapeInterner interner;
  auto kept = interner.Intern(Simple(1));
  for (uint32_t cpus = 2; cpus < 1000; ++cpus) (void)interner.Intern(Simple(cpus));
  // Every shape but the one still held expired; sweeps keep the table near what is alive.
  EXPECT_LT(interner.size(), 130u);
  EXPECT_EQ(interner.Intern(Simple(1)).get(), kept.get());
}

}  // namespace
}  // namespace shoal::ctld
