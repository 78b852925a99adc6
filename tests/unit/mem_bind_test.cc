#include "common/mem_bind.h"

#include <gtest/gtest.h>

#include "noded/task_binding.h"

namespace shoal {
namespace {

using M = std::vector<uint64_t>;

TEST(MemBind, ParsesTypesAndVerbosity) {
  auto mb = ParseMemBind("verbose,local");
  ASSERT_TRUE(mb.ok());
  EXPECT_TRUE(mb->verbose);
  EXPECT_EQ(mb->type, MemBindType::kLocal);
  mb = ParseMemBind("Q,NONE");
  ASSERT_TRUE(mb.ok());
  EXPECT_FALSE(mb->verbose);
  EXPECT_EQ(mb->type, MemBindType::kNone);
  mb = ParseMemBind("map_mem:0,1*2,0x3");
  ASSERT_TRUE(mb.ok());
  EXPECT_EQ(mb->type, MemBindType::kMap);
  EXPECT_EQ(mb->list, (M{0, 1, 1, 3}));
  mb = ParseMemBind("v,mask_mem:f,0x10");
  ASSERT_TRUE(mb.ok());
  EXPECT_EQ(mb->type, MemBindType::kMask);
  EXPECT_EQ(mb->list, (M{15, 16}));
  EXPECT_TRUE(ParseMemBind("prefer,sort,rank").ok());
}

TEST(MemBind, ErrorsReadAsSlurms) {
  EXPECT_EQ(ParseMemBind("sideways").error(), "unrecognized --mem-bind argument \"sideways\"");
  EXPECT_EQ(ParseMemBind("map_mem").error(), "missing list for \"--mem-bind=map_mem:<list>\"");
  EXPECT_EQ(ParseMemBind("mask_mem:").error(), "missing list for \"--mem-bind=mask_mem:<list>\"");
  EXPECT_EQ(ParseMemBind("map_mem:x").error(),
            "Failed to validate number: x, the offending character is x");
}

TEST(MemBind, TaskMasks) {
  EXPECT_EQ(TaskMemMasks(*ParseMemBind("local"), 2, 1), (M{0, 0}));
  EXPECT_EQ(TaskMemMasks(*ParseMemBind("rank"), 3, 2), (M{1, 2, 1}));
  EXPECT_EQ(TaskMemMasks(*ParseMemBind("map_mem:1,0"), 3, 2), (M{2, 1, 2}));
  EXPECT_EQ(TaskMemMasks(*ParseMemBind("mask_mem:3"), 2, 2), (M{3, 3}));
  EXPECT_EQ(TaskMemMasks(*ParseMemBind("map_mem:7"), 1, 1), (M{0x80}));
}

TEST(MemBind, EnvironmentAndVerboseLines) {
  auto env = MemBindEnvironment("verbose,map_mem:0,1", "SBATCH");
  ASSERT_EQ(env.size(), 6u);
  EXPECT_EQ(env[0], "SBATCH_MEM_BIND=verbose,map_mem:0,1");
  EXPECT_EQ(env[1], "SBATCH_MEM_BIND_LIST=0,1");
  EXPECT_EQ(env[4], "SBATCH_MEM_BIND_TYPE=map_mem:");
  EXPECT_EQ(env[5], "SBATCH_MEM_BIND_VERBOSE=verbose");
  EXPECT_TRUE(MemBindEnvironment("", "SLURM").empty());
  EXPECT_EQ(BindVerboseLine("cpu-bind", "MASK", "n1", 0, 0, 1234, "0x1", true),
            "cpu-bind=MASK - n1, task  0  0 [1234]: mask 0x1 set\n");
  EXPECT_EQ(BindVerboseLine("mem-bind", "NONE", "n2", 12, 3, 99, "0x1", false),
            "mem-bind=NONE - n2, task 12  3 [99]: mask 0x1\n");
}

TEST(MemBind, HintPicksTheCpuBindingType) {
  EXPECT_EQ(EffectiveCpuBind("", "compute_bound"), "cores");
  EXPECT_EQ(EffectiveCpuBind("", "memory_bound"), "cores");
  EXPECT_EQ(EffectiveCpuBind("verbose", "nomultithread"), "verbose,cores");
  EXPECT_EQ(EffectiveCpuBind("", "multithread"), "threads");
  EXPECT_EQ(EffectiveCpuBind("map_cpu:1", "multithread"), "map_cpu:1");
  EXPECT_EQ(EffectiveCpuBind("none", ""), "none");
  EXPECT_FALSE(ValidHint("fast"));
  EXPECT_TRUE(ValidHint("NoMultiThread"));
}

TEST(MemBind, CpuBindVerboseFlag) {
  EXPECT_TRUE(noded::CpuBindVerbose("verbose,map_cpu:0"));
  EXPECT_TRUE(noded::CpuBindVerbose("v"));
  EXPECT_FALSE(noded::CpuBindVerbose("map_cpu:0"));
  EXPECT_FALSE(noded::CpuBindVerbose(""));
}

}  // namespace
}  // namespace shoal
