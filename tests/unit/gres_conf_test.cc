#include "common/gres_conf.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(GresConf, ParsesNodeLinesFilesAndGlobalAutoDetect) {
  const char* text =
      "# comment\n"
      "AutoDetect=off\n"
      "NodeName=tux[0-1] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-3\n"
      "name=nic count=2   # trailing comment\n"
      "NodeName=tux2 AutoDetect=nvml\n"
      "NodeName=tux3 Name=gpu File=/dev/nvidia0 Links=-1,2 \\\n"
      "  Flags=nvidia_gpu_env\n"
      "Name=bandwidth Count=10G Flags=CountOnly\n";
  auto c = ParseGresConf(text, "/etc/slurm/gres.conf");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->autodetect, "off");
  ASSERT_EQ(c->lines.size(), 5u);
  const auto& g = c->lines[0];
  EXPECT_EQ(g.line, 3);
  EXPECT_EQ(g.nodes, (std::vector<std::string>{"tux0", "tux1"}));
  EXPECT_EQ(g.name, "gpu");
  EXPECT_EQ(g.type, "a100");
  EXPECT_EQ(g.files.size(), 4u);
  EXPECT_EQ(g.files[3], "/dev/nvidia3");
  EXPECT_EQ(g.count, 4u);
  EXPECT_EQ(g.cores, "0-3");
  EXPECT_EQ(c->lines[1].count, 2u);
  EXPECT_TRUE(c->lines[1].nodes.empty());
  EXPECT_EQ(c->lines[3].links, "-1,2");
  EXPECT_EQ(c->lines[3].flags, "nvidia_gpu_env");
  EXPECT_EQ(c->lines[4].count, 10ULL << 30);

  auto n0 = GresConfForNode(*c, "tux0");
  EXPECT_EQ(n0.autodetect, "off");
  ASSERT_EQ(n0.lines.size(), 3u);  // gpu, nic, bandwidth
  auto n2 = GresConfForNode(*c, "tux2");
  EXPECT_EQ(n2.autodetect, "nvml");  // node-local beats global
  EXPECT_EQ(n2.lines.size(), 2u);
}

TEST(GresConf, ErrorsNameFileLineAndKey) {
  auto e = ParseGresConf("Name=gpu\nName=gpu Bogus=1\n", "gres.conf");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), "gres.conf:2: unknown key 'Bogus'");
  e = ParseGresConf("Name=gpu Count=x\n", "g.conf");
  EXPECT_EQ(e.error(), "g.conf:1: invalid Count 'x'");
  e = ParseGresConf("Name=gpu File=/dev/nvidia[0-1] Count=3\n", "g");
  EXPECT_NE(e.error().find("g:1: Count 3 does not match"), std::string::npos);
  e = ParseGresConf("AutoDetect=magic\n", "g");
  EXPECT_EQ(e.error(), "g:1: unknown autodetect flag 'magic'");
  e = ParseGresConf("Name=gpu File=dev/nvidia0\n", "g");
  EXPECT_NE(e.error().find("not a fully qualified"), std::string::npos);
  e = ParseGresConf("Type=a100\n", "g");
  EXPECT_EQ(e.error(), "g:1: missing Name");
  e = ParseGresConf("Name=gpu Cores=a\n", "g");
  EXPECT_EQ(e.error(), "g:1: invalid Cores 'a'");
  e = ParseGresConf("Name=gpu Flags=fast\n", "g");
  EXPECT_EQ(e.error(), "g:1: invalid Flags 'fast'");
  e = ParseGresConf("NodeName=n[2-1] Name=gpu\n", "g");
  EXPECT_NE(e.error().find("g:1: invalid NodeName"), std::string::npos);
  e = ParseGresConf("garbage\n", "g");
  EXPECT_EQ(e.error(), "g:1: expected Key=Value, got 'garbage'");
}

TEST(GresConf, CountDefaultsAndSharing) {
  auto c = ParseGresConf("Name=gpu\nName=mps Count=200 File=/dev/nvidia[0-1]\n", "g");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->lines[0].count, 1u);
  EXPECT_EQ(c->lines[1].count, 200u);  // MPS counts are not file counts
  EXPECT_TRUE(ParseGresConf("", "g")->lines.empty());
}

}  // namespace
}  // namespace shoal
