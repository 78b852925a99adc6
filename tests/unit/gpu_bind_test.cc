#include "noded/gpu_bind.h"

#include <gtest/gtest.h>

namespace shoal::noded {
namespace {

using P = std::vector<std::vector<size_t>>;
using V = std::vector<std::string>;

std::vector<GresDevice> Gpus(std::vector<uint32_t> idx) {
  std::vector<GresDevice> out;
  for (uint32_t i : idx)
    out.push_back({"gpu", "", i, "/dev/nvidia" + std::to_string(i), i < 2 ? "0-1" : "2-3"});
  return out;
}

GpuBind Parse(std::string_view s) {
  GpuBind b;
  std::string err;
  EXPECT_TRUE(ParseGpuBind(s, b, &err)) << err;
  return b;
}

TEST(GpuBind, Parses) {
  auto b = Parse("verbose,map_gpu:0*2,1");
  EXPECT_TRUE(b.verbose);
  EXPECT_EQ(b.type, "map");
  EXPECT_EQ(b.entries, (std::vector<uint64_t>{0, 0, 1}));
  EXPECT_EQ(Parse("mask_gpu:0x3,c").entries, (std::vector<uint64_t>{3, 12}));
  EXPECT_EQ(Parse("single:2").n, 2u);
  EXPECT_EQ(Parse("none").type, "");
  GpuBind x;
  std::string err;
  EXPECT_FALSE(ParseGpuBind("single:0", x, &err));
  EXPECT_EQ(err, "Invalid --gpu-bind argument: single:0");
  EXPECT_FALSE(ParseGpuBind("bogus", x, &err));
  EXPECT_FALSE(ParseGpuBind("map_gpu:a", x, &err));
}

TEST(GpuBind, SingleMapMaskPerTask) {
  auto g = Gpus({0, 1});
  EXPECT_EQ(TaskGpus(Parse("single:1"), 2, g, {}, false), (P{{0}, {1}}));
  EXPECT_EQ(TaskGpus(Parse("single:2"), 4, g, {}, false), (P{{0}, {0}, {1}, {1}}));
  EXPECT_EQ(TaskGpus(Parse("map_gpu:1,0"), 3, g, {}, false), (P{{1}, {0}, {1}}));
  EXPECT_EQ(TaskGpus(Parse("mask_gpu:0x3,0x2"), 2, g, {}, false), (P{{0, 1}, {1}}));
  EXPECT_EQ(TaskGpus(Parse("per_task:1"), 2, g, {}, false), (P{{0}, {1}}));
  // One task or no binding: nothing per task.
  EXPECT_TRUE(TaskGpus(Parse("single:1"), 1, g, {}, false).empty());
  EXPECT_TRUE(TaskGpus(Parse("none"), 2, g, {}, false).empty());
}

TEST(GpuBind, MapIdsAreGlobalUnlessConstrained) {
  auto g = Gpus({2, 3});
  EXPECT_EQ(TaskGpus(Parse("map_gpu:3,2"), 2, g, {}, false), (P{{1}, {0}}));
  EXPECT_EQ(TaskGpus(Parse("map_gpu:1,0"), 2, g, {}, true), (P{{1}, {0}}));
  EXPECT_EQ(TaskGpus(Parse("map_gpu:0"), 2, g, {}, false), (P{{}, {}}));  // 0 not held
}

TEST(GpuBind, ClosestUsesCores) {
  auto g = Gpus({0, 1, 2, 3});
  EXPECT_EQ(TaskGpus(Parse("closest"), 2, g, {{0}, {3}}, false), (P{{0, 1}, {2, 3}}));
  EXPECT_EQ(TaskGpus(Parse("single:1"), 2, g, {{0}, {3}}, false), (P{{0}, {3}}));
}

TEST(GpuBind, EnvironmentGlobalOrLocal) {
  auto g = Gpus({1, 3});
  EXPECT_EQ(GpuEnvironmentVars(g, {}, true, false),
            (V{"SLURM_JOB_GPUS=1,3", "CUDA_VISIBLE_DEVICES=1,3", "GPU_DEVICE_ORDINAL=1,3",
               "ROCR_VISIBLE_DEVICES=1,3", "ZE_AFFINITY_MASK=1,3"}));
  EXPECT_EQ(GpuEnvironmentVars(g, {1}, false, true)[0], "SLURM_STEP_GPUS=1,3");
  EXPECT_EQ(GpuEnvironmentVars(g, {1}, false, true)[1], "CUDA_VISIBLE_DEVICES=1");
  EXPECT_EQ(GpuEnvironmentVars(g, {1}, false, false)[1], "CUDA_VISIBLE_DEVICES=3");
  EXPECT_TRUE(GpuEnvironmentVars({}, {}, true, false).empty());
  V env{"A=1", "CUDA_VISIBLE_DEVICES=9"};
  OverrideEnv(env, {"CUDA_VISIBLE_DEVICES=0", "B=2"});
  EXPECT_EQ(env, (V{"A=1", "CUDA_VISIBLE_DEVICES=0", "B=2"}));
  EXPECT_EQ(GpuBindVerboseLine("n1", 1, g, {1}),
            "gpu-bind: usable_gres=0x2; node=n1; task_id=1; global_list=3; local_list=1\n");
  EXPECT_EQ(ParseCpuList("0-2,5"), (std::vector<int>{0, 1, 2, 5}));
}

}  // namespace
}  // namespace shoal::noded
