#include "noded/cpu_bind.h"

#include <gtest/gtest.h>

#include "noded/multi_prog.h"

namespace shoal::noded {
namespace {

using V = std::vector<std::string>;

TEST(CpuBind, NoneOrEmptyPinsNothing) {
  EXPECT_TRUE(TaskCpuMasks("", 2, 1, {0, 1}).empty());
  EXPECT_TRUE(TaskCpuMasks("none", 2, 1, {0, 1}).empty());
  EXPECT_TRUE(TaskCpuMasks("verbose,none", 2, 1, {0, 1}).empty());
  EXPECT_TRUE(TaskCpuMasks("cores", 2, 1, {}).empty());
  EXPECT_TRUE(TaskCpuMasks("bogus", 2, 1, {0, 1}).empty());
}

TEST(CpuBind, CoresTakeConsecutiveBlocksAndWrap) {
  EXPECT_EQ(TaskCpuMasks("cores", 3, 1, {0, 1}), (V{"0x1", "0x2", "0x1"}));
  EXPECT_EQ(TaskCpuMasks("verbose,threads", 2, 2, {0, 1, 2, 3}), (V{"0x3", "0xc"}));
  EXPECT_EQ(TaskCpuMasks("rank", 2, 1, {4, 5}), (V{"0x10", "0x20"}));
}

TEST(CpuBind, MapAndMaskLists) {
  EXPECT_EQ(TaskCpuMasks("map_cpu:3,1", 3, 1, {0, 1, 2, 3}), (V{"0x8", "0x2", "0x8"}));
  EXPECT_EQ(TaskCpuMasks("mask_cpu:0x3,c", 2, 1, {0, 1, 2, 3}), (V{"0x3", "0xc"}));
}

TEST(MultiProg, PicksTheLineOfTheTaskWithSubstitutions) {
  const char* conf =
      "# comment\n"
      "0      echo first %t\n"
      "1-3,5 echo 'rest of them' %t %o\n"
      "*     echo any %t\n";
  EXPECT_EQ(*MultiProgArgv(conf, 0, 0), (V{"echo", "first", "0"}));
  EXPECT_EQ(*MultiProgArgv(conf, 2, 0), (V{"echo", "rest of them", "2", "1"}));
  EXPECT_EQ(*MultiProgArgv(conf, 5, 0), (V{"echo", "rest of them", "5", "3"}));
  EXPECT_EQ(*MultiProgArgv(conf, 4, 0), (V{"echo", "any", "4"}));
  EXPECT_FALSE(MultiProgArgv("0 true\n", 1, 0).ok());
  EXPECT_FALSE(MultiProgArgv("x-y true\n", 0, 0).ok());
}

}  // namespace
}  // namespace shoal::noded
