#include "dbd/assoc_admin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/units.h"

namespace shoal::dbd {
namespace {

using ::testing::HasSubstr;

pb::AcctAdminRequest Req(pb::AcctAdminRequest::Verb verb, const std::string& entity,
                         std::vector<std::string> names,
                         std::vector<std::pair<std::string, std::string>> set = {},
                         std::vector<std::pair<std::string, std::string>> where = {}) {
  pb::AcctAdminRequest r;
  r.set_verb(verb);
  r.set_entity(entity);
  for (auto& n : names) r.add_names(n);
  auto add = [](auto* list, const std::pair<std::string, std::string>& kv) {
    pb::AcctKeyValue* x = list->Add();
    std::string key = kv.first, op = "=";
    if (key.back() == '+' || key.back() == '-') {
      op = std::string(1, key.back()) + "=";
      key.pop_back();
    }
    x->set_key(key);
    x->set_op(op);
    x->set_value(kv.second);
  };
  for (auto& kv : set) add(r.mutable_set(), kv);
  for (auto& kv : where) add(r.mutable_where(), kv);
  return r;
}

constexpr auto ADD = pb::AcctAdminRequest::ADD;
constexpr auto MODIFY = pb::AcctAdminRequest::MODIFY;
constexpr auto DELETE = pb::AcctAdminRequest::DELETE;

std::string Joined(const pb::AcctAdminResponse& r) {
  std::string out;
  for (const auto& l : r.lines()) out += l + "\n";
  return out;
}

class AssocAdminTest : public ::testing::Test {
 protected:
  void SetUp() override { EnsureCluster(state, "tux", 100, nullptr); }

  Result<pb::AcctAdminResponse> Apply(const pb::AcctAdminRequest& r,
                                      const AdminCaller& who = Root()) {
    changes = AssocChanges{};
    return ApplyAdmin(state, r, who, 200, &changes);
  }
  static AdminCaller Root() { return AdminCaller{0, "root", true}; }
  const pb::AcctAssoc* Assoc(const std::string& acct, const std::string& user) {
    for (const auto& a : state.assocs) {
      if (!a.deleted() && a.account() == acct && a.user() == user) return &a;
    }
    return nullptr;
  }

  AssocState state;
  AssocChanges changes;
};

TEST_F(AssocAdminTest, EnsureClusterCreatesRootRows) {
  EXPECT_EQ(state.clusters.size(), 1u);
  ASSERT_NE(Assoc("root", ""), nullptr);
  EXPECT_EQ(Assoc("root", "")->shares(), 1u);
  EXPECT_EQ(Assoc("root", "")->qos(0), "normal");
  ASSERT_NE(Assoc("root", "root"), nullptr);
  ASSERT_EQ(state.users.size(), 1u);
  EXPECT_EQ(state.users[0].admin_level(), "Administrator");
  EXPECT_EQ(state.qos[0].name(), "normal");
  uint64_t v = state.version;
  AssocChanges ch;
  EnsureCluster(state, "tux", 300, &ch);  // idempotent
  EXPECT_TRUE(ch.empty());
  EXPECT_EQ(state.version, v);
}

TEST_F(AssocAdminTest, AcceptanceFlow) {
  auto r = Apply(Req(ADD, "account", {"physics"}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r),
            " Adding Account(s)\n  physics\n Settings\n  Description     = Account Name\n"
            "  Organization    = Parent/Account Name\n Associations\n"
            "  A = physics    C = tux       \n");
  EXPECT_EQ(changes.accounts.size(), 1u);
  EXPECT_EQ(changes.assocs.size(), 1u);

  r = Apply(Req(ADD, "user", {"bob"}, {{"account", "physics"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r),
            " Adding User(s)\n  bob\n Associations =\n"
            "  U = bob       A = physics    C = tux       \n Non Default Settings\n");
  ASSERT_NE(Assoc("physics", "bob"), nullptr);
  EXPECT_EQ(state.users.back().default_account(), "physics");

  uint64_t v = state.version;
  r = Apply(Req(MODIFY, "user", {"bob"}, {{"MaxJobs", "2"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r),
            " Modified user associations...\n"
            "  C = tux        A = physics              U = bob      \n");
  EXPECT_EQ(Assoc("physics", "bob")->limits().max_jobs(), 2);
  EXPECT_EQ(state.version, v + 1);
  ASSERT_EQ(changes.assocs.size(), 1u);
  EXPECT_EQ(changes.assocs[0].limits().max_jobs(), 2);

  r = Apply(Req(MODIFY, "user", {}, {{"MaxJobs", "-1"}}, {{"name", "bob"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(Assoc("physics", "bob")->limits().has_max_jobs());

  r = Apply(Req(MODIFY, "user", {"bob"}, {{"MaxJobs", "-1"}}));  // no change
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Joined(*r), " Nothing modified\n");
  EXPECT_EQ(r->changed(), 0u);
  EXPECT_TRUE(changes.empty());

  r = Apply(Req(DELETE, "user", {"bob"}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r), " Deleting users...\n  bob\n");
  EXPECT_EQ(Assoc("physics", "bob"), nullptr);
  r = Apply(Req(DELETE, "user", {"bob"}));
  EXPECT_EQ(Joined(*r), " Nothing deleted\n");
}

TEST_F(AssocAdminTest, AddAccountWithSettings) {
  auto r = Apply(Req(ADD, "account", {"Chem,Bio"},
                     {{"Description", "chemistry dept"},
                      {"Organization", "science"},
                      {"Fairshare", "50"},
                      {"GrpTRES", "cpu=10,mem=2048"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_THAT(Joined(*r), HasSubstr("  chem\n  bio\n"));  // lowered
  EXPECT_THAT(Joined(*r), HasSubstr(" Settings\n  Parent        = root\n"));
  EXPECT_THAT(Joined(*r), HasSubstr("  GrpTRES       = cpu=10,mem=2G\n"));
  EXPECT_EQ(Assoc("chem", "")->shares(), 50u);
  EXPECT_EQ(Assoc("chem", "")->limits().grp_tres(), "cpu=10,mem=2G");
  r = Apply(Req(ADD, "account", {"sub"}, {{"parent", "chem"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Assoc("sub", "")->parent_account(), "chem");
  r = Apply(Req(ADD, "account", {"chem"}));
  EXPECT_EQ(Joined(*r), " Nothing new added.\n");
  r = Apply(Req(ADD, "account", {"x"}, {{"parent", "nosuch"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("Parent account 'nosuch' doesn't exist"));
}

TEST_F(AssocAdminTest, UnknownKeysAndBadValues) {
  auto r = Apply(Req(ADD, "account", {"x"}, {{"Foo", "bar"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), " Unknown option: Foo=bar\n Use keyword 'where' to modify condition");
  Apply(Req(ADD, "account", {"physics"}));
  r = Apply(Req(MODIFY, "account", {}, {{"MaxJobs", "1"}}, {{"colour", "red"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), " Unknown condition: colour=red\n Use keyword 'set' to modify value");
  r = Apply(Req(MODIFY, "account", {"physics"}, {{"MaxJobs", "lots"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("Bad MaxJobs value: lots"));
  r = Apply(Req(MODIFY, "account", {"physics"}, {{"GrpTRES", "cpus=4"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), " Invalid TRES: cpus=4");
  r = Apply(Req(MODIFY, "account", {"physics"}, {{"QOS", "nosuch"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("Invalid QOS name: nosuch"));
  r = Apply(Req(ADD, "user", {"bob"}, {{"account", "nosuch"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("This account 'nosuch' doesn't exist."));
  r = Apply(Req(ADD, "user", {"bob"}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("Need name of account"));
  r = Apply(Req(DELETE, "user", {}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), " No conditions given to remove, not executing.");
  r = Apply(Req(ADD, "frobnicator", {"x"}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("No valid entity in add command"));
}

TEST_F(AssocAdminTest, InjectionLookingNamesAreRejectedOrLiteral) {
  for (const char* bad : {"x'); DROP TABLE jobs; --", "a' OR '1'='1", "a b", "-x", ""}) {
    auto r = Apply(Req(ADD, "account", {bad}));
    EXPECT_FALSE(r.ok()) << bad;
    r = Apply(Req(ADD, "qos", {bad}));
    EXPECT_FALSE(r.ok()) << bad;
  }
  Apply(Req(ADD, "account", {"physics"}));
  Apply(Req(ADD, "user", {"bob"}, {{"account", "physics"}}));
  size_t accounts = state.accounts.size();
  // As conditions they match nothing (never a pattern, never everything).
  auto r = Apply(Req(MODIFY, "user", {}, {{"MaxJobs", "3"}}, {{"name", "a' OR '1'='1"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Joined(*r), " Nothing modified\n");
  r = Apply(Req(DELETE, "account", {"x'); DROP TABLE jobs; --"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Joined(*r), " Nothing deleted\n");
  EXPECT_EQ(state.accounts.size(), accounts);
  EXPECT_FALSE(Assoc("physics", "bob")->limits().has_max_jobs());
}

TEST_F(AssocAdminTest, PermissionsForNonAdminsAndCoordinators) {
  Apply(Req(ADD, "account", {"physics"}));
  Apply(Req(ADD, "account", {"chem"}));
  Apply(Req(ADD, "user", {"alice"}, {{"account", "physics"}}));
  Apply(Req(ADD, "user", {"bob"}, {{"account", "physics"}}));
  AdminCaller alice{1001, "alice", false};
  auto r = Apply(Req(ADD, "account", {"x2"}), alice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kAccessDenied);
  EXPECT_EQ(r.error(), " Problem adding accounts: Access/permission denied");
  r = Apply(Req(MODIFY, "user", {"alice"}, {{"MaxJobs", "5"}}), alice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), " Error with request: Access/permission denied");
  r = Apply(Req(MODIFY, "user", {"alice"}, {{"AdminLevel", "Administrator"}}), alice);
  EXPECT_FALSE(r.ok());
  r = Apply(Req(ADD, "qos", {"high"}), alice);
  EXPECT_FALSE(r.ok());

  // A coordinator of physics manages physics' users, not chem's.
  ASSERT_TRUE(Apply(Req(ADD, "coordinator", {"alice"}, {{"account", "physics"}})).ok());
  r = Apply(Req(MODIFY, "user", {"bob"}, {{"MaxJobs", "5"}}), alice);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Assoc("physics", "bob")->limits().max_jobs(), 5);
  r = Apply(Req(ADD, "user", {"carol"}, {{"account", "physics"}}), alice);
  EXPECT_TRUE(r.ok()) << r.error();
  r = Apply(Req(ADD, "user", {"dave"}, {{"account", "chem"}}), alice);
  EXPECT_FALSE(r.ok());
  r = Apply(Req(ADD, "user", {"erin"}, {{"account", "physics"}, {"AdminLevel", "Operator"}}),
            alice);
  EXPECT_FALSE(r.ok());

  // Operators administer, but can't make Administrators.
  ASSERT_TRUE(Apply(Req(MODIFY, "user", {"bob"}, {{"AdminLevel", "Operator"}})).ok());
  AdminCaller bob{1002, "bob", false};
  EXPECT_TRUE(Apply(Req(ADD, "account", {"ops"}), bob).ok());
  EXPECT_FALSE(Apply(Req(MODIFY, "user", {"carol"}, {{"AdminLevel", "Admin"}}), bob).ok());
}

TEST_F(AssocAdminTest, DeleteAccountCascadesAndGuardsDefaults) {
  Apply(Req(ADD, "account", {"chem,bio"}));
  Apply(Req(ADD, "user", {"u1"}, {{"account", "chem"}}));
  Apply(Req(ADD, "user", {"u2"}, {{"account", "chem,bio"}, {"DefaultAccount", "chem"}}));
  // u2 keeps bio: removing its default account chem is refused.
  auto r = Apply(Req(DELETE, "account", {"chem"}));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error(), HasSubstr("You can not remove the default account of a user"));
  ASSERT_TRUE(Apply(Req(MODIFY, "user", {"u2"}, {{"DefaultAccount", "bio"}})).ok());
  r = Apply(Req(DELETE, "account", {"chem"}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r), " Deleting accounts...\n  chem\n");
  EXPECT_EQ(Assoc("chem", "u1"), nullptr);
  EXPECT_EQ(Assoc("chem", ""), nullptr);
  EXPECT_NE(Assoc("bio", "u2"), nullptr);
  EXPECT_TRUE(std::any_of(changes.assocs.begin(), changes.assocs.end(),
                          [](const auto& a) { return a.deleted(); }));
  EXPECT_FALSE(Apply(Req(DELETE, "account", {"root"})).ok());
}

TEST_F(AssocAdminTest, QosLifecycle) {
  auto r = Apply(Req(ADD, "qos", {"high"}, {{"Priority", "10"}, {"MaxWall", "1-00:00:00"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_THAT(Joined(*r), HasSubstr(" Adding QOS(s)\n  high\n Settings\n"
                                    "  Description    = high\n"
                                    "  Priority                 = 10\n"));
  ASSERT_TRUE(Apply(Req(ADD, "qos", {"low"})).ok());
  r = Apply(Req(MODIFY, "qos", {"high"},
                {{"Preempt", "normal"},
                 {"PreemptMode", "requeue"},
                 {"Flags", "DenyOnLimit"},
                 {"GraceTime", "120"},
                 {"UsageFactor", "0.5"},
                 {"MaxTRESPerUser", "cpu=8"},
                 {"MaxJobsPerUser", "4"},
                 {"GrpJobs", "20"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r), " Modified qos...\n  high\n");
  r = Apply(Req(MODIFY, "qos", {"high"}, {{"Preempt+", "low"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  const pb::AcctQos* q = nullptr;
  for (const auto& x : state.qos) {
    if (x.name() == "high") q = &x;
  }
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->priority(), 10u);
  ASSERT_EQ(q->preempt_size(), 2);
  EXPECT_EQ(q->preempt(0), "low");
  EXPECT_EQ(q->preempt_mode(), "requeue");
  EXPECT_EQ(q->flags(0), "DenyOnLimit");
  EXPECT_EQ(q->grace_time_s(), 120u);
  EXPECT_DOUBLE_EQ(q->usage_factor(), 0.5);
  EXPECT_EQ(q->limits().max_tres_per_user(), "cpu=8");
  EXPECT_EQ(q->limits().max_jobs(), 4);
  EXPECT_EQ(q->limits().max_wall_minutes(), 1440u);
  ASSERT_TRUE(Apply(Req(MODIFY, "qos", {"high"}, {{"Preempt-", "normal"}})).ok());
  for (const auto& x : state.qos) {  // state was replaced: look again
    if (x.name() == "high") q = &x;
  }
  EXPECT_EQ(q->preempt_size(), 1);

  // Association QOS lists: =, +=, -=; DefaultQOS must exist.
  Apply(Req(ADD, "account", {"physics"}));
  ASSERT_TRUE(Apply(Req(MODIFY, "account", {"physics"}, {{"QOS+", "high"}})).ok());
  EXPECT_EQ(Assoc("physics", "")->qos_size(), 2);  // normal (inherited) + high
  ASSERT_TRUE(Apply(Req(MODIFY, "account", {"physics"}, {{"QOS-", "normal"}})).ok());
  ASSERT_EQ(Assoc("physics", "")->qos_size(), 1);
  EXPECT_EQ(Assoc("physics", "")->qos(0), "high");
  ASSERT_TRUE(Apply(Req(MODIFY, "account", {"physics"}, {{"DefaultQOS", "high"}})).ok());
  EXPECT_EQ(Assoc("physics", "")->default_qos(), "high");

  r = Apply(Req(DELETE, "qos", {"high"}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(Joined(*r), " Deleting QOS(s)...\n  high\n");
  EXPECT_EQ(Assoc("physics", "")->qos_size(), 0);  // scrubbed
  EXPECT_EQ(Assoc("physics", "")->default_qos(), "");
}

TEST_F(AssocAdminTest, AssociationLimits) {
  Apply(Req(ADD, "account", {"physics"}));
  Apply(Req(ADD, "user", {"bob"}, {{"account", "physics"}, {"partition", "debug"}}));
  auto r = Apply(Req(MODIFY, "user", {"bob"},
                     {{"GrpTRES", "cpu=4,gres/gpu:a100=2"},
                      {"MaxWall", "2:00:00"},
                      {"GrpTRESMins", "cpu=600"},
                      {"Fairshare", "parent"},
                      {"MaxTRESPerJob", "node=2"},
                      {"Priority", "7"},
                      {"GrpSubmitJobs", "9"}},
                     {{"partition", "debug"}}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_THAT(Joined(*r), HasSubstr("U = bob       P = debug"));
  auto bob = [&] { return Assoc("physics", "bob"); };  // state is replaced on every change
  const pb::AcctAssoc* a = bob();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->partition(), "debug");
  EXPECT_EQ(a->limits().grp_tres(), "cpu=4,gres/gpu:a100=2");
  EXPECT_EQ(a->limits().max_wall_minutes(), 120u);
  EXPECT_EQ(a->shares(), kSharesParent);
  EXPECT_EQ(a->priority(), 7);
  ASSERT_TRUE(Apply(Req(MODIFY, "user", {"bob"}, {{"GrpTRES", "cpu=-1,mem=1G"}})).ok());
  a = bob();
  EXPECT_EQ(a->limits().grp_tres(), "mem=1G,gres/gpu:a100=2");
  ASSERT_TRUE(Apply(Req(MODIFY, "association", {}, {{"MaxWall", "-1"}, {"Priority", "-1"}},
                        {{"user", "bob"}}))
                  .ok());
  a = bob();
  EXPECT_FALSE(a->limits().has_max_wall_minutes());
  EXPECT_EQ(a->priority(), -1);
}

TEST_F(AssocAdminTest, DryRunChangesNothing) {
  auto req = Req(ADD, "account", {"physics"});
  req.set_dry_run(true);
  uint64_t v = state.version;
  auto r = Apply(req);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->changed(), 0u);
  EXPECT_EQ(state.version, v);
  EXPECT_EQ(Assoc("physics", ""), nullptr);
  EXPECT_TRUE(changes.empty());
}

TEST_F(AssocAdminTest, ShowAssocHierarchyAndInheritance) {
  Apply(Req(ADD, "account", {"physics"}, {{"MaxJobs", "3"}}));
  Apply(Req(ADD, "account", {"astro"}, {{"parent", "physics"}}));
  Apply(Req(ADD, "user", {"bob"}, {{"account", "physics"}}));
  Apply(Req(ADD, "account", {"bio"}));
  pb::AcctShowRequest req;
  req.set_entity("association");
  auto r = ShowAdmin(state, req);
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<std::string> order;
  for (const auto& a : r->assocs()) order.push_back(a.account() + "/" + a.user());
  EXPECT_EQ(order, (std::vector<std::string>{"root/", "root/root", "bio/", "physics/",
                                             "physics/bob", "astro/"}));
  // bob and astro show physics' MaxJobs and root's QOS unless WOPLimits.
  EXPECT_EQ(r->assocs(4).limits().max_jobs(), 3);
  EXPECT_EQ(r->assocs(4).qos(0), "normal");
  EXPECT_TRUE(r->assocs(4).is_default());
  pb::AcctKeyValue* kv = req.add_where();
  kv->set_key("woplimits");
  kv = req.add_where();
  kv->set_key("user");
  kv->set_value("bob");
  r = ShowAdmin(state, req);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->assocs_size(), 1);
  EXPECT_FALSE(r->assocs(0).limits().has_max_jobs());

  pb::AcctShowRequest tres;
  tres.set_entity("tres");
  Apply(Req(MODIFY, "account", {"bio"}, {{"GrpTRES", "gres/gpu=2"}}));
  auto t = ShowAdmin(state, tres);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->tres_size(), 9);
  EXPECT_EQ(t->tres(8), "gres/gpu");

  pb::AcctShowRequest bad;
  bad.set_entity("user");
  kv = bad.add_where();
  kv->set_key("shoesize");
  kv->set_value("9");
  EXPECT_FALSE(ShowAdmin(state, bad).ok());
}

TEST_F(AssocAdminTest, SnapshotForCluster) {
  EnsureCluster(state, "other", 100, nullptr);
  Apply(Req(ADD, "account", {"physics"}, {{"cluster", "tux"}}));
  Apply(Req(ADD, "user", {"bob"}, {{"account", "physics"}}));
  Apply(Req(DELETE, "user", {"bob"}));
  pb::AssocSnapshot s = SnapshotFor(state, "tux");
  EXPECT_EQ(s.version(), state.version);
  for (const auto& a : s.assocs()) {
    EXPECT_EQ(a.cluster(), "tux");
    EXPECT_FALSE(a.deleted());
  }
  EXPECT_EQ(s.assocs_size(), 3);  // root, root/root, physics
  EXPECT_EQ(s.users_size(), 1);   // bob is deleted
}

TEST(TresTest, NormalizeAndMerge) {
  EXPECT_EQ(*NormalizeTres("node=2,CPU=4,mem=1024M,gres/gpu=1"), "cpu=4,mem=1G,node=2,gres/gpu=1");
  EXPECT_FALSE(NormalizeTres("gpu=1").ok());
  EXPECT_FALSE(NormalizeTres("cpu=abc").ok());
  EXPECT_FALSE(NormalizeTres("cpu").ok());
  EXPECT_FALSE(NormalizeTres("gres/=1").ok());
  EXPECT_EQ(*MergeTres("cpu=4,mem=1G", "cpu=8"), "cpu=8,mem=1G");
  EXPECT_EQ(*MergeTres("cpu=4,mem=1G", "mem=-1"), "cpu=4");
  EXPECT_EQ(*MergeTres("cpu=4", "-1"), "");
  EXPECT_TRUE(ValidAcctName("a.b-c_d9"));
  EXPECT_FALSE(ValidAcctName("a;b"));
}

}  // namespace
}  // namespace shoal::dbd
