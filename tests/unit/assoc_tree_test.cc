#include "sched/assoc_tree.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace shoal::sched {
namespace {

pb::AcctAssoc* AddAssoc(pb::AssocSnapshot& s, uint32_t id, const std::string& account,
                        const std::string& user, const std::string& parent = "",
                        const std::string& partition = "") {
  pb::AcctAssoc* a = s.add_assocs();
  a->set_id(id);
  a->set_cluster("c1");
  a->set_account(account);
  a->set_user(user);
  a->set_parent_account(parent);
  a->set_partition(partition);
  a->set_shares(1);
  return a;
}

// root -> physics -> {alice, bob, theory -> {alice}}, root -> chem -> {carol}
pb::AssocSnapshot Snapshot() {
  pb::AssocSnapshot s;
  s.set_version(7);
  AddAssoc(s, 1, "root", "")->add_qos("normal");
  AddAssoc(s, 2, "physics", "", "root");
  AddAssoc(s, 3, "chem", "", "root");
  AddAssoc(s, 4, "theory", "", "physics");
  AddAssoc(s, 10, "physics", "bob");
  AddAssoc(s, 11, "physics", "alice");
  AddAssoc(s, 12, "physics", "alice", "", "gpu");
  AddAssoc(s, 13, "theory", "alice");
  AddAssoc(s, 14, "chem", "carol");
  AddAssoc(s, 99, "chem", "dave")->set_deleted(true);
  pb::AcctAssoc* other = AddAssoc(s, 98, "chem", "erin");
  other->set_cluster("c2");
  pb::AcctUser* alice = s.add_users();
  alice->set_name("alice");
  alice->set_default_account("theory");
  pb::AcctQos* q = s.add_qos();
  q->set_name("normal");
  q = s.add_qos();
  q->set_name("High");
  return s;
}

TEST(ParseTres, CountsMemoryAndClear) {
  auto t = ParseTres("cpu=10,mem=20G,node=2,gres/gpu=4,billing=-1");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ((*t)["cpu"], 10u);
  EXPECT_EQ((*t)["mem"], 20480u);
  EXPECT_EQ((*t)["node"], 2u);
  EXPECT_EQ((*t)["gres/gpu"], 4u);
  EXPECT_FALSE(t->count("billing"));
  EXPECT_TRUE(ParseTres("").ok());
  EXPECT_EQ(ParseTres("CPU=1")->at("cpu"), 1u);
  EXPECT_FALSE(ParseTres("cpu").ok());
  EXPECT_EQ(ParseTres("cpu=x").error(), "Invalid TRES specification: cpu=x");
  EXPECT_EQ(FormatTres(*ParseTres("node=2,gres/gpu=1,cpu=4,mem=1G")),
            "cpu=4,mem=1G,node=2,gres/gpu=1");
}

TEST(AssocTree, BuildsTreeForCluster) {
  AssocTree t = AssocTree::Build(Snapshot(), "c1");
  EXPECT_EQ(t.version(), 7u);
  EXPECT_EQ(t.root(), 0);
  EXPECT_EQ(t.node(0).assoc.id(), 1u);
  EXPECT_EQ(t.IndexOfId(99), AssocTree::kNone);  // deleted
  EXPECT_EQ(t.IndexOfId(98), AssocTree::kNone);  // other cluster
  int theory = t.AccountIndex("THEORY");
  ASSERT_NE(theory, AssocTree::kNone);
  EXPECT_EQ(t.node(theory).depth, 2u);
  EXPECT_EQ(t.node(t.IndexOfId(13)).depth, 3u);
}

TEST(AssocTree, PreOrderListsUsersBeforeSubAccounts) {
  AssocTree t = AssocTree::Build(Snapshot(), "c1");
  std::vector<uint32_t> ids;
  for (int i : t.PreOrder()) ids.push_back(t.node(i).assoc.id());
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 3, 14, 2, 11, 12, 10, 4, 13}));
}

TEST(AssocTree, FindPrefersPartitionAssociation) {
  AssocTree t = AssocTree::Build(Snapshot(), "c1");
  EXPECT_EQ(t.node(t.Find("alice", "physics", "gpu")).assoc.id(), 12u);
  EXPECT_EQ(t.node(t.Find("alice", "physics", "cpu")).assoc.id(), 11u);
  EXPECT_EQ(t.node(t.Find("alice", "Physics", "")).assoc.id(), 11u);
  EXPECT_EQ(t.Find("bob", "physics", "gpu"), t.IndexOfId(10));
  EXPECT_EQ(t.Find("bob", "chem", ""), AssocTree::kNone);
  EXPECT_EQ(t.Find("nobody", "chem", ""), AssocTree::kNone);
}

TEST(AssocTree, DefaultAccount) {
  AssocTree t = AssocTree::Build(Snapshot(), "c1");
  EXPECT_EQ(t.ResolveAccount("alice", ""), "theory");
  EXPECT_EQ(t.node(t.Find("alice", "", "")).assoc.id(), 13u);
  EXPECT_EQ(t.ResolveAccount("bob", ""), "");  // no user record, no is_default
  EXPECT_EQ(t.Find("bob", "", ""), AssocTree::kNone);
  pb::AssocSnapshot s = Snapshot();
  s.mutable_assocs(4)->set_is_default(true);  // bob's physics association
  AssocTree t2 = AssocTree::Build(s, "c1");
  EXPECT_EQ(t2.ResolveAccount("bob", ""), "physics");
}

TEST(AssocTree, ChainToRoot) {
  AssocTree t = AssocTree::Build(Snapshot(), "c1");
  std::vector<uint32_t> ids;
  for (int i : t.Chain(t.IndexOfId(13))) ids.push_back(t.node(i).assoc.id());
  EXPECT_EQ(ids, (std::vector<uint32_t>{13, 4, 2, 1}));
}

TEST(AssocTree, MaxLimitsInheritPerTres) {
  pb::AssocSnapshot s = Snapshot();
  // physics (2): MaxJobs=5, MaxTRESPerJob=cpu=8,node=2, MaxWall=60
  pb::AcctLimits* phys = s.mutable_assocs(1)->mutable_limits();
  phys->set_max_jobs(5);
  phys->set_max_tres_per_job("cpu=8,node=2");
  phys->set_max_wall_minutes(60);
  phys->set_grp_jobs(3);
  // theory (4): MaxTRESPerJob=cpu=4
  s.mutable_assocs(3)->mutable_limits()->set_max_tres_per_job("cpu=4");
  // alice in theory (13): MaxSubmitJobs=2
  s.mutable_assocs(7)->mutable_limits()->set_max_submit_jobs(2);
  AssocTree t = AssocTree::Build(s, "c1");
  EffectiveLimits e = t.Limits(t.IndexOfId(13));
  EXPECT_EQ(e.max_jobs, 5);
  EXPECT_EQ(e.max_submit_jobs, 2);
  EXPECT_EQ(e.max_wall_minutes, 60u);
  EXPECT_EQ(e.max_tres_per_job, (TresMap{{"cpu", 4}, {"node", 2}}));
  // carol (chem) inherits nothing from physics.
  EffectiveLimits c = t.Limits(t.IndexOfId(14));
  EXPECT_FALSE(c.max_jobs);
  EXPECT_TRUE(c.max_tres_per_job.empty());
}

TEST(AssocTree, QosListAndDefault) {
  pb::AssocSnapshot s = Snapshot();
  AssocTree t = AssocTree::Build(s, "c1");
  int alice = t.IndexOfId(13);
  EXPECT_EQ(t.AllowedQos(alice), (std::vector<std::string>{"normal"}));  // from root
  EXPECT_EQ(t.DefaultQos(alice), "normal");
  EXPECT_TRUE(t.QosAllowed(alice, "Normal"));
  EXPECT_FALSE(t.QosAllowed(alice, "high"));
  ASSERT_NE(t.Qos("HIGH"), nullptr);
  EXPECT_EQ(t.Qos("high")->name(), "High");
  EXPECT_EQ(t.Qos("none"), nullptr);

  s.mutable_assocs(1)->add_qos("high");  // physics: only high
  t = AssocTree::Build(s, "c1");
  alice = t.IndexOfId(13);
  EXPECT_EQ(t.AllowedQos(alice), (std::vector<std::string>{"high"}));
  EXPECT_EQ(t.DefaultQos(alice), "high");  // the only one allowed
  s.mutable_assocs(1)->add_qos("normal");
  s.mutable_assocs(3)->set_default_qos("High");  // theory
  t = AssocTree::Build(s, "c1");
  EXPECT_EQ(t.DefaultQos(t.IndexOfId(13)), "high");
  EXPECT_EQ(t.DefaultQos(t.IndexOfId(10)), "normal");  // two allowed, none set
}

TEST(AssocTree, MissingRootAndParentsStillFormATree) {
  pb::AssocSnapshot s;
  AddAssoc(s, 5, "orphan", "", "ghost");
  AddAssoc(s, 6, "orphan", "u");
  AddAssoc(s, 7, "lost", "u");  // account unknown: dropped
  AssocTree t = AssocTree::Build(s);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.node(0).account, "root");
  EXPECT_EQ(t.node(t.IndexOfId(5)).parent, 0);
  EXPECT_EQ(t.IndexOfId(7), AssocTree::kNone);
  EXPECT_TRUE(AssocTree::Build(pb::AssocSnapshot{}).empty());
}

}  // namespace
}  // namespace shoal::sched
