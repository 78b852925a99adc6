#include "cli/sinfo_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "common/units.h"

namespace shoal::cli {
namespace {

const bool kUtc = [] {
  setenv("TZ", "UTC", 1);
  tzset();
  return true;
}();

constexpr int64_t kNow = 1700000000;  // 2023-11-14T22:13:20Z

pb::NodeRecord Node(const std::string& name, pb::NodeBaseState st, uint32_t cpus = 4,
                    uint32_t alloc = 0) {
  pb::NodeRecord n;
  n.set_name(name);
  n.set_base_state(st);
  n.set_responding(true);
  n.set_cpus(cpus);
  n.set_alloc_cpus(alloc);
  n.set_real_memory_mb(1000);
  n.set_sockets(1);
  n.set_cores_per_socket(cpus);
  n.set_threads_per_core(1);
  n.set_weight(1);
  return n;
}

pb::PartitionRecord Part(const std::string& name, std::vector<std::string> nodes,
                         uint32_t max_time = kTimeInfinite, bool is_default = false) {
  pb::PartitionRecord p;
  p.set_name(name);
  for (const auto& n : nodes) p.add_nodes(n);
  p.set_max_time(max_time);
  p.set_default_time(kTimeNoVal);
  p.set_is_default(is_default);
  p.set_state("UP");
  p.set_max_nodes(0xffffffffu);
  p.set_allow_groups("ALL");
  p.set_over_subscribe("NO");
  return p;
}

// debug*: n[1-4] (30 min); batch: n[3-8]; empty: no nodes; hidden: n1.
pb::NodeQueryResponse Cluster() {
  pb::NodeQueryResponse r;
  *r.add_nodes() = Node("n1", pb::NODE_IDLE);
  *r.add_nodes() = Node("n2", pb::NODE_IDLE);
  *r.add_nodes() = Node("n3", pb::NODE_ALLOCATED, 4, 4);
  *r.add_nodes() = Node("n4", pb::NODE_MIXED, 4, 2);
  pb::NodeRecord n5 = Node("n5", pb::NODE_IDLE);
  n5.set_drain(true);
  n5.set_reason("bad disk");
  n5.set_reason_uid(0);
  n5.set_reason_time(kNow - 100);
  *r.add_nodes() = n5;
  pb::NodeRecord n6 = Node("n6", pb::NODE_DOWN);
  n6.set_responding(false);
  n6.set_reason("Not responding");
  n6.set_reason_time(kNow - 50);
  *r.add_nodes() = n6;
  *r.add_nodes() = Node("n7", pb::NODE_IDLE, 8);
  *r.add_nodes() = Node("n8", pb::NODE_ALLOCATED, 8, 8);
  *r.add_partitions() = Part("debug", {"n1", "n2", "n3", "n4"}, 30, true);
  *r.add_partitions() = Part("batch", {"n3", "n4", "n5", "n6", "n7", "n8"});
  *r.add_partitions() = Part("empty", {});
  pb::PartitionRecord hidden = Part("hidden", {"n1"});
  hidden.set_hidden(true);
  *r.add_partitions() = hidden;
  for (const pb::PartitionRecord& p : r.partitions()) {
    for (const std::string& name : p.nodes()) {
      for (pb::NodeRecord& n : *r.mutable_nodes()) {
        if (n.name() == name) n.add_partitions(p.name());
      }
    }
  }
  r.set_server_time(kNow);
  return r;
}

std::string Format(const SinfoFormatOptions& o, const SinfoFilter& f = {}) {
  auto r = FormatSinfo(Cluster(), o, f, kNow);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : std::string();
}

SinfoFormatOptions WithNames() {
  SinfoFormatOptions o;
  o.user_name = [](uint32_t uid) { return uid == 0 ? std::string("root") : std::string(); };
  return o;
}

TEST(SinfoFormat, DefaultGroupsByPartitionAndState) {
  EXPECT_EQ(Format({}),
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
            "debug*       up      30:00      1    mix n4\n"
            "debug*       up      30:00      1  alloc n3\n"
            "debug*       up      30:00      2   idle n[1-2]\n"
            "batch        up   infinite      1  down* n6\n"
            "batch        up   infinite      1  drain n5\n"
            "batch        up   infinite      1    mix n4\n"
            "batch        up   infinite      2  alloc n[3,8]\n"
            "batch        up   infinite      1   idle n7\n"
            "empty        up   infinite      0    n/a \n");
}

TEST(SinfoFormat, HiddenPartitionsAndLongNames) {
  SinfoFilter f;
  f.all_partitions = true;
  f.partitions = {"hidden", "debug"};
  SinfoFormatOptions o;
  o.no_header = true;
  EXPECT_EQ(Format(o, f),
            "debug*       up      30:00      1    mix n4\n"
            "debug*       up      30:00      1  alloc n3\n"
            "debug*       up      30:00      2   idle n[1-2]\n"
            "hidden       up   infinite      1   idle n1\n");
  pb::NodeQueryResponse r = Cluster();
  r.mutable_partitions(1)->set_name("a_very_long_partition");
  SinfoFilter g;
  g.partitions = {"a_very_long_partition"};
  g.states = *ParseSinfoStates("idle");
  auto text = FormatSinfo(r, {}, g, kNow);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "PARTITION             AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
            "a_very_long_partition    up   infinite      1  drain n5\n"
            "a_very_long_partition    up   infinite      1   idle n7\n");
}

TEST(SinfoFormat, NodeOriented) {
  SinfoFormatOptions o;
  o.node_oriented = true;
  EXPECT_EQ(Format(o),
            "NODELIST  NODES PARTITION STATE \n"
            "n1            1 debug*    idle  \n"
            "n2            1 debug*    idle  \n"
            "n3            1 debug*    alloc \n"
            "n3            1 batch     alloc \n"
            "n4            1 debug*    mix   \n"
            "n4            1 batch     mix   \n"
            "n5            1 batch     drain \n"
            "n6            1 batch     down* \n"
            "n7            1 batch     idle  \n"
            "n8            1 batch     alloc \n");
}

TEST(SinfoFormat, NodeOrientedLong) {
  SinfoFormatOptions o = WithNames();
  o.node_oriented = true;
  o.long_output = true;
  SinfoFilter f;
  f.nodes = {"n5", "n7"};
  EXPECT_EQ(Format(o, f),
            "NODELIST  NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE "
            "REASON              \n"
            "n5            1 batch         drained    4    1:4:1   1000        0      1   (null) "
            "bad disk            \n"
            "n7            1 batch            idle    8    1:8:1   1000        0      1   (null) "
            "none                \n");
}

TEST(SinfoFormat, Summarize) {
  SinfoFormatOptions o;
  o.summarize = true;
  EXPECT_EQ(Format(o),
            "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T)  NODELIST\n"
            "debug*       up      30:00          2/2/0/4  n[1-4]\n"
            "batch        up   infinite          3/1/2/6  n[3-8]\n"
            "empty        up   infinite          0/0/0/0  \n");
}

TEST(SinfoFormat, ListReasons) {
  SinfoFormatOptions o = WithNames();
  o.list_reasons = true;
  EXPECT_EQ(Format(o),
            "REASON               USER      TIMESTAMP           NODELIST\n"
            "Not responding       root      2023-11-14T22:12:30 n6\n"
            "bad disk             root      2023-11-14T22:11:40 n5\n");
  o.long_output = true;
  EXPECT_EQ(Format(o),
            "REASON               USER         TIMESTAMP           STATE  NODELIST\n"
            "Not responding       root(0)      2023-11-14T22:12:30 down*  n6\n"
            "bad disk             root(0)      2023-11-14T22:11:40 drain  n5\n");
}

TEST(SinfoFormat, LongPartitionLayout) {
  SinfoFormatOptions o;
  o.long_output = true;
  SinfoFilter f;
  f.partitions = {"debug"};
  EXPECT_EQ(Format(o, f),
            "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE "
            "NODELIST\n"
            "debug*       up      30:00 1-infinite   no       NO        all      1       mixed n4\n"
            "debug*       up      30:00 1-infinite   no       NO        all      1   allocated n3\n"
            "debug*       up      30:00 1-infinite   no       NO        all      2        idle "
            "n[1-2]\n");
}

TEST(SinfoFormat, PercentCodes) {
  SinfoFormatOptions o;
  o.format = "%R|%.3D|%C|%A|%c|%m|%z|%l|%L|%a";
  SinfoFilter f;
  f.partitions = {"batch"};
  f.states = *ParseSinfoStates("alloc,mix");
  EXPECT_EQ(Format(o, f),
            "PARTITION|NOD|CPUS(A/I/O/T)|NODES(A/I)|CPUS|MEMORY|S:C:T|TIMELIMIT|DEFAULTTIME|AVAIL\n"
            "batch|  3|14/2/0/16|3/0|4+|1000|1:4+:1|infinite|n/a|up\n");
}

TEST(SinfoFormat, ExactGrouping) {
  pb::NodeQueryResponse r;
  pb::NodeRecord a1 = Node("a1", pb::NODE_IDLE, 4);
  pb::NodeRecord a2 = Node("a2", pb::NODE_IDLE, 8);
  a2.set_real_memory_mb(2000);
  pb::NodeRecord a3 = Node("a3", pb::NODE_IDLE, 4);
  *r.add_nodes() = a1;
  *r.add_nodes() = a2;
  *r.add_nodes() = a3;
  *r.add_partitions() = Part("p", {"a1", "a2", "a3"}, 60, true);
  SinfoFormatOptions o;
  o.format = "%P %c %m %D %N";
  o.no_header = true;
  auto text = FormatSinfo(r, o, {}, kNow);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "p* 4+ 1000+ 3 a[1-3]\n");
  o.exact = true;
  text = FormatSinfo(r, o, {}, kNow);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "p* 4 1000 2 a[1,3]\np* 8 2000 1 a2\n");
}

TEST(SinfoFormat, LongFormatFields) {
  SinfoFormatOptions o;
  o.long_format = "Partition,NodeList:10,StateLong:.12,CPUsState";
  SinfoFilter f;
  f.partitions = {"debug"};
  EXPECT_EQ(Format(o, f),
            "PARTITION           NODELIST         STATECPUS(A/I/O/T)       \n"
            "debug*              n4               mixed2/2/0/4             \n"
            "debug*              n3           allocated4/0/0/4             \n"
            "debug*              n[1-2]            idle0/8/0/8             \n");
  o.long_format = "Partition,Nope";
  auto r = FormatSinfo(Cluster(), o, f, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "Invalid job format specification: Nope");
}

TEST(SinfoFormat, CustomSort) {
  SinfoFormatOptions o;
  o.format = "%P %t";
  o.no_header = true;
  o.sort = "P,t";
  SinfoFilter f;
  f.partitions = {"debug", "batch"};
  EXPECT_EQ(Format(o, f),
            "batch idle\nbatch alloc\nbatch mix\nbatch drain\nbatch down*\n"
            "debug* idle\ndebug* alloc\ndebug* mix\n");
}

TEST(SinfoFilter, States) {
  auto bad = ParseSinfoStates("idle,foo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(),
            "Bad state string: \"foo\"\n"
            "sinfo: error: valid states: unknown,down,idle,allocated,?,mixed,future,drain,drained,"
            "draining,no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,"
            "power_down,powering_up,fail,maint,reboot,reboot^,unknown");
  pb::NodeRecord drng = Node("x", pb::NODE_MIXED, 4, 2);
  drng.set_drain(true);
  SinfoFilter f;
  f.states = *ParseSinfoStates("DRAINING");
  EXPECT_TRUE(SinfoNodeMatches(drng, f));
  f.states = *ParseSinfoStates("drained");
  EXPECT_FALSE(SinfoNodeMatches(drng, f));
  f.states = *ParseSinfoStates("drain&mix");
  EXPECT_TRUE(SinfoNodeMatches(drng, f));
  f.states = *ParseSinfoStates("drain&idle");
  EXPECT_FALSE(SinfoNodeMatches(drng, f));
  SinfoFilter d;
  d.dead_only = true;
  EXPECT_FALSE(SinfoNodeMatches(drng, d));
  d.dead_only = false;
  d.responding_only = true;
  EXPECT_TRUE(SinfoNodeMatches(drng, d));
}

TEST(SinfoFormat, FilteredOutPartitionsDisappear) {
  SinfoFilter f;
  f.states = *ParseSinfoStates("down");
  SinfoFormatOptions o;
  o.no_header = true;
  EXPECT_EQ(Format(o, f), "batch        up   infinite      1  down* n6\n");
}

TEST(SinfoFormat, Json) {
  std::string json = FormatSinfoJson(Cluster(), {}, kNow, "c1");
  EXPECT_EQ(json.rfind("{\"nodes\":[{", 0), 0u);
  EXPECT_NE(json.find("\"name\":\"n5\""), std::string::npos);
  EXPECT_NE(json.find("\"state\":[\"IDLE\",\"DRAIN\"]"), std::string::npos);
  EXPECT_NE(json.find("\"state\":[\"DOWN\",\"NOT_RESPONDING\"]"), std::string::npos);
  EXPECT_NE(json.find("\"partitions\":[\"debug\"]"), std::string::npos);
  EXPECT_EQ(json.back(), '\n');
}

}  // namespace
}  // namespace shoal::cli
