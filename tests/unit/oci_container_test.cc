// oci.conf create/start support (state parser, spool-dir mounts, MountSpoolDir), the bundle's
// config.json merge, and the pending power-down node flag.
#include <gtest/gtest.h>

#include "common/states.h"
#include "noded/oci_conf.h"
#include "noded/oci_config_json.h"

namespace shoal {
namespace {

TEST(OciState, ParsesRuncState) {
  auto st = noded::ParseOciState(
      "{\n  \"ociVersion\": \"1.0.2-dev\",\n  \"id\": \"n1.u.5.0.0\",\n  \"pid\": 4242,\n"
      "  \"status\": \"running\",\n  \"bundle\": \"/tmp/x\"\n}\n");
  EXPECT_EQ(st.status, "running");
  EXPECT_EQ(st.pid, 4242);
  auto stopped = noded::ParseOciState("{\"status\":\"stopped\",\"pid\":0}");
  EXPECT_EQ(stopped.status, "stopped");
  EXPECT_EQ(stopped.pid, 0);
  auto empty = noded::ParseOciState("container does not exist");
  EXPECT_EQ(empty.status, "");
  EXPECT_EQ(empty.pid, 0);
}

TEST(OciConf, MountSpoolDirExplicitOrDefault) {
  auto d = noded::ParseOciConf("RunTimeRun=x\n");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->mount_spool_dir, "/var/run/slurm/");
  EXPECT_FALSE(d->mount_spool_dir_set);
  auto e = noded::ParseOciConf("RunTimeRun=x\nMountSpoolDir=/spool\nRunTimeEnvExclude=^SECRET_\n");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->mount_spool_dir, "/spool");
  EXPECT_TRUE(e->mount_spool_dir_set);
  ASSERT_EQ(e->runtime_env_exclude.size(), 1u);
}

TEST(OciConfig, BindMountsFollowTheStandardOnes) {
  noded::OciProcessSpec spec;
  spec.rootfs = "/b/rootfs";
  spec.argv = {"/var/run/slurm/slurm_script"};
  spec.binds.emplace_back("/tmp/shoal-oci-5", "/var/run/slurm");
  std::string c = noded::GenerateOciConfig(spec);
  size_t sys = c.find("\"destination\": \"/sys\"");
  size_t bind = c.find("\"destination\": \"/var/run/slurm\"");
  ASSERT_NE(sys, std::string::npos);
  ASSERT_NE(bind, std::string::npos);
  EXPECT_LT(sys, bind);
  EXPECT_NE(c.find("\"source\": \"/tmp/shoal-oci-5\""), std::string::npos);
  EXPECT_NE(c.find("\"args\": [\"/var/run/slurm/slurm_script\"]"), std::string::npos);
  // Without binds the mounts array still closes properly.
  noded::OciProcessSpec plain;
  plain.rootfs = "/r";
  std::string p = noded::GenerateOciConfig(plain);
  EXPECT_NE(p.find("\"ro\"]}\n  ],\n  \"linux\""), std::string::npos);
}

TEST(OciConfigJson, ParsesAndSerializesRoundTrip) {
  auto v = noded::ParseJson(
      R"({"a": [1, -2.5e3, true, false, null], "s": "q\"\\\n\u00e9\ud83d\ude00", "o": {}})");
  ASSERT_TRUE(v.ok()) << v.error();
  ASSERT_EQ(v->members.size(), 3u);
  EXPECT_EQ(v->members[0].second.items[1].text, "-2.5e3");
  EXPECT_EQ(v->Find("s")->text, "q\"\\\n\xc3\xa9\xf0\x9f\x98\x80");
  auto again = noded::ParseJson(noded::SerializeJson(*v));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(noded::SerializeJson(*again), noded::SerializeJson(*v));
  EXPECT_FALSE(noded::ParseJson("{\"a\": }").ok());
  EXPECT_FALSE(noded::ParseJson("[1, 2").ok());
  EXPECT_FALSE(noded::ParseJson("{} x").ok());
}

TEST(OciConfigJson, MergeKeepsTheImageAndSetsTheProcess) {
  const std::string bundle_config = R"({
    "ociVersion": "1.0.2",
    "process": {"terminal": true, "user": {"uid": 0, "gid": 0}, "args": ["sh"],
                "env": ["PATH=/usr/bin:/bin", "IMAGE_ONLY=1", "HOME=/root"], "cwd": "/srv"},
    "root": {"path": "rootfs", "readonly": true},
    "hostname": "img",
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
    "linux": {"uidMappings": [{"containerID": 0, "hostID": 1001, "size": 1}]}
  })";
  auto cfg = noded::ParseJson(bundle_config);
  ASSERT_TRUE(cfg.ok());
  auto root = noded::OciConfigRootfs(*cfg, "/home/u/b");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(*root, "/home/u/b/rootfs");

  noded::OciProcessSpec spec;
  spec.rootfs = *root;
  spec.argv = {"/bin/echo", "hi there"};
  spec.env = {"HOME=/home/u", "SLURM_JOB_ID=5"};
  spec.cwd = "";  // work dir not in the image: keep the image's
  spec.binds.emplace_back("/tmp/spool", "/var/run/slurm");
  auto merged = noded::MergeOciConfig(bundle_config, spec);
  ASSERT_TRUE(merged.ok()) << merged.error();
  auto m = noded::ParseJson(*merged);
  ASSERT_TRUE(m.ok());
  auto strings = [](const noded::JsonValue* v) {
    std::vector<std::string> out;
    for (const auto& i : v->items) out.push_back(i.text);
    return out;
  };
  noded::JsonValue* process = m->Find("process");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(strings(process->Find("args")), (std::vector<std::string>{"/bin/echo", "hi there"}));
  EXPECT_EQ(strings(process->Find("env")),
            (std::vector<std::string>{"PATH=/usr/bin:/bin", "IMAGE_ONLY=1", "HOME=/home/u",
                                      "SLURM_JOB_ID=5"}));
  EXPECT_EQ(process->Find("cwd")->text, "/srv");
  EXPECT_FALSE(process->Find("terminal")->boolean);
  EXPECT_EQ(m->Find("root")->Find("path")->text, "/home/u/b/rootfs");
  EXPECT_TRUE(m->Find("root")->Find("readonly")->boolean);
  EXPECT_EQ(m->Find("hostname")->text, "img");
  ASSERT_EQ(m->Find("mounts")->items.size(), 2u);
  EXPECT_EQ(m->Find("mounts")->items[1].Find("destination")->text, "/var/run/slurm");
  EXPECT_EQ(m->Find("linux")->Find("uidMappings")->items[0].Find("hostID")->text, "1001");

  EXPECT_FALSE(noded::OciConfigRootfs(*noded::ParseJson("{}"), "/b").ok());

  // DisableHooks=prestart,poststop: those hook types are dropped, the others kept.
  auto hooked = noded::MergeOciConfig(
      R"({"root": {"path": "/r"}, "hooks": {"prestart": [{"path": "/a"}],
          "poststart": [{"path": "/b"}], "poststop": [{"path": "/c"}]}})",
      spec, "prestart,poststop");
  ASSERT_TRUE(hooked.ok());
  auto h = noded::ParseJson(*hooked);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->Find("hooks")->members.size(), 1u);
  EXPECT_EQ(h->Find("hooks")->members[0].first, "poststart");
}

TEST(PowerDownRequested, ShownWithBangAndPowerDownFlag) {
  pb::NodeRecord n;
  n.set_name("n1");
  n.set_cpus(4);
  n.set_base_state(pb::NODE_MIXED);
  n.set_responding(true);
  n.set_power_down_requested(true);
  EXPECT_EQ(NodeStateLong(n), "MIXED+POWER_DOWN");
  EXPECT_EQ(NodeStateCompact(n), "mix!");
  EXPECT_EQ(NodeStateLongLower(n), "mixed!");
}

}  // namespace
}  // namespace shoal
