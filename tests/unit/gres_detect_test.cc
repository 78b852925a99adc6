#include "noded/gres_detect.h"

#include <gtest/gtest.h>

namespace shoal::noded {
namespace {

const char* kCsv =
    "1, NVIDIA A100-SXM4-40GB, GPU-bbbb, 00000000:0B:00.0\n"
    "0, NVIDIA A100-SXM4-40GB, GPU-aaaa, 00000000:07:00.0\n";

const char* kQ =
    "==============NVSMI LOG==============\n"
    "Attached GPUs                             : 2\n"
    "GPU 00000000:07:00.0\n"
    "    Product Name                          : NVIDIA A100-SXM4-40GB\n"
    "    Minor Number                          : 3\n"
    "GPU 00000000:0B:00.0\n"
    "    Minor Number                          : 5\n";

TEST(GresDetect, ParsesNvidiaSmiQueryAndMinors) {
  auto g = ParseNvidiaSmiQuery(kCsv);
  ASSERT_TRUE(g.ok()) << g.error();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].index, 0u);
  EXPECT_EQ((*g)[0].uuid, "GPU-aaaa");
  EXPECT_EQ((*g)[1].pci_bus_id, "00000000:0B:00.0");
  EXPECT_EQ((*g)[0].minor, -1);
  ApplyNvidiaSmiMinors(kQ, *g);
  EXPECT_EQ((*g)[0].minor, 3);
  EXPECT_EQ((*g)[1].minor, 5);
  EXPECT_TRUE(ParseNvidiaSmiQuery("")->empty());
  EXPECT_FALSE(ParseNvidiaSmiQuery("NVIDIA-SMI has failed because it couldn't communicate").ok());
}

TEST(GresDetect, TypesAndBusIds) {
  EXPECT_EQ(GpuTypeFromName("Tesla V100-SXM2-16GB"), "tesla_v100-sxm2-16gb");
  EXPECT_EQ(SysfsBusId("00000000:0B:00.0"), "0000:0b:00.0");
}

TEST(GresDetect, AutodetectedGpusReplaceConfiguredOnesAndKeepOthers) {
  NodeGresConf conf;
  conf.autodetect = "nvidia";
  GresConfLine nic;
  nic.name = "nic";
  nic.files = {"/dev/infiniband/uverbs0"};
  nic.count = 1;
  conf.lines.push_back(nic);
  auto gpus = *ParseNvidiaSmiQuery(kCsv);
  ApplyNvidiaSmiMinors(kQ, gpus);
  auto info = BuildNodeGres(conf, gpus, true, "gpu:2,license:3");
  EXPECT_TRUE(info.detected);
  EXPECT_EQ(info.gres, "gpu:nvidia_a100-sxm4-40gb:2,nic:1,license:3");
  ASSERT_EQ(info.devices.size(), 3u);
  EXPECT_EQ(info.devices[0].file, "/dev/nvidia3");
  EXPECT_EQ(info.devices[1].index, 1u);
  EXPECT_EQ(info.devices[1].file, "/dev/nvidia5");
}

TEST(GresDetect, ConfiguredFilesWhenDetectionFailsOrIsOff) {
  NodeGresConf conf;
  conf.autodetect = "nvml";
  GresConfLine gpu;
  gpu.name = "gpu";
  gpu.files = {"/dev/f0", "/dev/f1"};
  gpu.count = 2;
  gpu.cores = "0-1";
  conf.lines.push_back(gpu);
  auto info = BuildNodeGres(conf, {}, false, "gpu:a100:2");
  EXPECT_TRUE(info.detected);
  EXPECT_EQ(info.gres, "gpu:a100:2");  // untyped line inherits slurm.conf's only type
  ASSERT_EQ(info.devices.size(), 2u);
  EXPECT_EQ(info.devices[1], (GresDevice{"gpu", "a100", 1, "/dev/f1", "0-1"}));

  // Nothing in gres.conf and no detection: slurm.conf's Gres is reported as is, not "detected".
  auto none = BuildNodeGres(NodeGresConf{}, {}, false, "gpu:4");
  EXPECT_FALSE(none.detected);
  EXPECT_EQ(none.gres, "gpu:4");
  EXPECT_TRUE(none.devices.empty());
}

TEST(GresDetect, FewerDetectedThanConfiguredIsReportedAsDetected) {
  NodeGresConf conf;
  conf.autodetect = "nvidia";
  auto gpus = *ParseNvidiaSmiQuery("0, Tesla T4, GPU-x, 00000000:01:00.0\n");
  auto info = BuildNodeGres(conf, gpus, true, "gpu:4");
  EXPECT_EQ(info.gres, "gpu:tesla_t4:1");
  EXPECT_EQ(info.devices[0].file, "/dev/nvidia0");  // no minor known: the index
}

}  // namespace
}  // namespace shoal::noded
