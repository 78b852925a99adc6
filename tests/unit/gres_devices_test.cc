#include "noded/gres_devices.h"

#include <gtest/gtest.h>

namespace shoal::noded {
namespace {

using V = std::vector<std::string>;

std::vector<GresDevice> FourGpusAndNic() {
  std::vector<GresDevice> d;
  for (uint32_t i = 0; i < 4; ++i)
    d.push_back({"gpu", "a100", i, "/dev/nvidia" + std::to_string(i), i < 2 ? "0-1" : "2-3"});
  d.push_back({"nic", "", 0, "/dev/infiniband/uverbs0", ""});
  d.push_back({"bandwidth", "", 0, "", ""});
  return d;
}

TEST(GresDevices, ParsesAllocEntries) {
  auto m = ParseGresAllocEntry("gpu:0,1,nic:0");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m["gpu"], (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(m["nic"], (std::vector<uint32_t>{0}));
  EXPECT_TRUE(ParseGresAllocEntry("").empty());
  EXPECT_EQ(ParseGresAllocEntry("gpu:1-3")["gpu"], (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(ParseGresAllocEntry("gpu:a100:2")["gpu"], (std::vector<uint32_t>{2}));
  // Garbage tokens are ignored rather than granting anything.
  EXPECT_TRUE(ParseGresAllocEntry("0,1")["gpu"].empty());
}

TEST(GresDevices, DeniesEveryFileNotHeld) {
  auto d = FourGpusAndNic();
  EXPECT_EQ(DeniedDeviceFiles(d, "gpu:1,3"),
            (V{"/dev/infiniband/uverbs0", "/dev/nvidia0", "/dev/nvidia2"}));
  EXPECT_EQ(AllowedDeviceFiles(d, "gpu:1,3"), (V{"/dev/nvidia1", "/dev/nvidia3"}));
  EXPECT_EQ(DeniedDeviceFiles(d, ""), (V{"/dev/infiniband/uverbs0", "/dev/nvidia0", "/dev/nvidia1",
                                         "/dev/nvidia2", "/dev/nvidia3"}));
  EXPECT_EQ(DeniedDeviceFiles(d, "gpu:0,1,2,3,nic:0"), V{});
  EXPECT_TRUE(DeniedDeviceFiles({}, "gpu:0").empty());
}

TEST(GresDevices, SharedFileStaysReachableWhenOneHolderIsHeld) {
  std::vector<GresDevice> d = {{"gpu", "", 0, "/dev/nvidia0", ""},
                               {"mps", "", 0, "/dev/nvidia0", ""},
                               {"gpu", "", 1, "/dev/nvidia1", ""}};
  EXPECT_EQ(DeniedDeviceFiles(d, "gpu:0"), (V{"/dev/nvidia1"}));
  EXPECT_EQ(DeniedDeviceFiles(d, "mps:0"), (V{"/dev/nvidia1"}));
}

TEST(GresDevices, HeldDevicesInIndexOrder) {
  auto d = FourGpusAndNic();
  auto h = HeldDevices(d, "gpu:3,1", "gpu");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].index, 1u);
  EXPECT_EQ(h[1].file, "/dev/nvidia3");
  EXPECT_TRUE(HeldDevices(d, "gpu:3,1", "nic").empty());
}

TEST(GresDevices, SpoolFormatRoundTrips) {
  auto d = FourGpusAndNic();
  EXPECT_EQ(ParseGresDevices(FormatGresDevices(d)), d);
  EXPECT_TRUE(ParseGresDevices("bad line\n|x|0||\n").empty());
}

}  // namespace
}  // namespace shoal::noded
