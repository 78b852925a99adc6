#include "sched/assoc_limits.h"

#include <gtest/gtest.h>

#include <functional>

namespace shoal::sched {
namespace {

pb::AcctAssoc* AddAssoc(pb::AssocSnapshot& s, uint32_t id, const std::string& account,
                        const std::string& user, const std::string& parent = "") {
  pb::AcctAssoc* a = s.add_assocs();
  a->set_id(id);
  a->set_account(account);
  a->set_user(user);
  a->set_parent_account(parent);
  a->set_shares(1);
  return a;
}

// root(1) -> proj(2) -> {alice(10), bob(11)}; QOS normal and limited.
struct Fixture {
  pb::AssocSnapshot snap;
  Fixture() {
    AddAssoc(snap, 1, "root", "")->add_qos("normal");
    AddAssoc(snap, 2, "proj", "", "root");
    AddAssoc(snap, 10, "proj", "alice");
    AddAssoc(snap, 11, "proj", "bob");
    snap.add_qos()->set_name("normal");
    pb::AcctQos* q = snap.add_qos();
    q->set_name("limited");
  }
  pb::AcctLimits* Assoc(uint32_t id) {
    for (auto& a : *snap.mutable_assocs())
      if (a.id() == id) return a.mutable_limits();
    return nullptr;
  }
  pb::AcctQos* Qos(const std::string& name) {
    for (auto& q : *snap.mutable_qos())
      if (q.name() == name) return &q;
    return nullptr;
  }
  void AllowLimited() { snap.mutable_assocs(0)->add_qos("limited"); }
  AssocTree Tree() const { return AssocTree::Build(snap); }
};

constexpr EnforceFlags kAll{true, true, true, false};

SubmitJob Job(const std::string& user, const std::string& account = "proj",
              const std::string& qos = "") {
  SubmitJob j;
  j.user = user;
  j.account = account;
  j.qos = qos;
  j.shape.cpus = 2;
  j.shape.time_limit_min = 30;
  return j;
}

CountedJob Counted(uint32_t assoc, const std::string& user, const std::string& qos,
                   uint32_t cpus = 1) {
  CountedJob c;
  c.assoc_id = assoc;
  c.user = user;
  c.account = "proj";
  c.qos = qos;
  c.shape.cpus = cpus;
  c.shape.mem_mb = 100 * cpus;
  c.shape.time_limit_min = 60;
  return c;
}

TEST(ParseEnforce, Flags) {
  auto f = ParseEnforce("limits,qos");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->associations && f->limits && f->qos && !f->safe);
  f = ParseEnforce("safe");
  EXPECT_TRUE(f->associations && f->limits && f->safe && !f->qos);
  EXPECT_FALSE(ParseEnforce("")->associations);
  EXPECT_EQ(ParseEnforce("bogus").error(), "Invalid AccountingStorageEnforce: bogus");
}

TEST(ValidateSubmit, ResolvesAssociationAndDefaultQos) {
  Fixture f;
  AssocTree t = f.Tree();
  auto r = ValidateSubmit(t, {}, Job("alice"), kAll);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->assoc_id, 10u);
  EXPECT_EQ(r->account, "proj");
  EXPECT_EQ(r->qos, "normal");
}

TEST(ValidateSubmit, InvalidAccount) {
  Fixture f;
  AssocTree t = f.Tree();
  auto r = ValidateSubmit(t, {}, Job("alice", "other"), kAll);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidAccount);
  EXPECT_EQ(r.error(), "Invalid account or account/partition combination specified");
  r = ValidateSubmit(t, {}, Job("carol"), kAll);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidAccount);
  // Not enforced: accepted without an association.
  r = ValidateSubmit(t, {}, Job("carol"), EnforceFlags{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->assoc_index, AssocTree::kNone);
}

TEST(ValidateSubmit, InvalidQos) {
  Fixture f;
  AssocTree t = f.Tree();
  auto r = ValidateSubmit(t, {}, Job("alice", "proj", "limited"), kAll);  // not allowed
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidQos);
  EXPECT_EQ(r.error(), "Invalid qos specification");
  EXPECT_EQ(ValidateSubmit(t, {}, Job("alice", "proj", "nope"), kAll).status().code(),
            ErrorCode::kInvalidQos);
  f.AllowLimited();
  EXPECT_TRUE(ValidateSubmit(f.Tree(), {}, Job("alice", "proj", "limited"), kAll).ok());
}

TEST(ValidateSubmit, SubmitJobLimits) {
  Fixture f;
  f.Assoc(2)->set_max_submit_jobs(2);  // inherited by alice and bob, counted per user
  f.Assoc(2)->set_grp_submit_jobs(3);  // proj and its users together
  AssocTree t = f.Tree();
  UsageCounters c;
  CountSubmitted(c, t, Counted(10, "alice", "normal"), +1);
  CountSubmitted(c, t, Counted(10, "alice", "normal"), +1);
  auto r = ValidateSubmit(t, c, Job("alice"), kAll);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "Job violates accounting/QOS policy (job submit limit, user's size and/or time "
            "limits)");
  EXPECT_EQ(r.status().code(), kAcctPolicyError);
  EXPECT_TRUE(ValidateSubmit(t, c, Job("bob"), kAll).ok());
  CountSubmitted(c, t, Counted(11, "bob", "normal"), +1);
  EXPECT_FALSE(ValidateSubmit(t, c, Job("bob"), kAll).ok());  // GrpSubmitJobs=3 reached
  CountSubmitted(c, t, Counted(10, "alice", "normal"), -1);
  EXPECT_TRUE(ValidateSubmit(t, c, Job("alice"), kAll).ok());
  // Limits not enforced: accepted.
  CountSubmitted(c, t, Counted(10, "alice", "normal"), +1);
  EXPECT_TRUE(ValidateSubmit(t, c, Job("alice"), EnforceFlags{true, false, true, false}).ok());
}

TEST(ValidateSubmit, QosSubmitLimits) {
  Fixture f;
  f.AllowLimited();
  f.Qos("limited")->mutable_limits()->set_max_submit_jobs(1);  // MaxSubmitJobsPerUser
  f.Qos("limited")->mutable_limits()->set_grp_submit_jobs(2);
  AssocTree t = f.Tree();
  UsageCounters c;
  CountSubmitted(c, t, Counted(10, "alice", "limited"), +1);
  EXPECT_EQ(ValidateSubmit(t, c, Job("alice", "proj", "limited"), kAll).status().code(),
            kAcctPolicyError);
  EXPECT_TRUE(ValidateSubmit(t, c, Job("alice", "proj", "normal"), kAll).ok());
  EXPECT_TRUE(ValidateSubmit(t, c, Job("bob", "proj", "limited"), kAll).ok());
  CountSubmitted(c, t, Counted(11, "bob", "limited"), +1);
  f.Qos("limited")->mutable_limits()->set_max_submit_jobs(5);
  t = f.Tree();
  EXPECT_FALSE(ValidateSubmit(t, c, Job("bob", "proj", "limited"), kAll).ok());  // Grp=2
}

TEST(ValidateSubmit, DenyOnLimitRejectsOversizedJobs) {
  Fixture f;
  f.AllowLimited();
  pb::AcctQos* q = f.Qos("limited");
  q->mutable_limits()->set_max_tres_per_job("cpu=4");
  q->mutable_limits()->set_max_wall_minutes(60);
  AssocTree t = f.Tree();
  SubmitJob big = Job("alice", "proj", "limited");
  big.shape.cpus = 8;
  EXPECT_TRUE(ValidateSubmit(t, {}, big, kAll).ok());  // pends instead
  q->add_flags("DenyOnLimit");
  t = f.Tree();
  EXPECT_EQ(ValidateSubmit(t, {}, big, kAll).status().code(), kAcctPolicyError);
  SubmitJob longer = Job("alice", "proj", "limited");
  longer.shape.time_limit_min = 120;
  EXPECT_FALSE(ValidateSubmit(t, {}, longer, kAll).ok());
  EXPECT_TRUE(ValidateSubmit(t, {}, Job("alice", "proj", "limited"), kAll).ok());
  // Association per-job limits count too under DenyOnLimit.
  f.Assoc(2)->set_max_tres_per_job("node=1");
  t = f.Tree();
  SubmitJob wide = Job("alice", "proj", "limited");
  wide.shape.nodes = 2;
  EXPECT_FALSE(ValidateSubmit(t, {}, wide, kAll).ok());
}

// Each pending reason, one limit at a time.
struct ReasonCase {
  const char* name;
  std::function<void(Fixture&)> set;
  std::function<void(UsageCounters&, const AssocTree&)> load;  // running jobs
  uint32_t cpus;
  const char* want;
};

TEST(PendingLimitReason, EachReason) {
  auto run_alice = [](int n, uint32_t cpus) {
    return [n, cpus](UsageCounters& c, const AssocTree& t) {
      for (int i = 0; i < n; ++i) {
        CountSubmitted(c, t, Counted(10, "alice", "limited", cpus), +1);
        CountRunning(c, t, Counted(10, "alice", "limited", cpus), +1);
      }
    };
  };
  auto run_bob = [](int n, uint32_t cpus) {
    return [n, cpus](UsageCounters& c, const AssocTree& t) {
      for (int i = 0; i < n; ++i) CountRunning(c, t, Counted(11, "bob", "limited", cpus), +1);
    };
  };
  auto none = [](UsageCounters&, const AssocTree&) {};
  auto qos = [](std::function<void(pb::AcctLimits*)> f) {
    return [f](Fixture& fx) { f(fx.Qos("limited")->mutable_limits()); };
  };
  auto assoc = [](uint32_t id, std::function<void(pb::AcctLimits*)> f) {
    return [id, f](Fixture& fx) { f(fx.Assoc(id)); };
  };
  std::vector<ReasonCase> cases = {
      {"none", [](Fixture&) {}, run_alice(3, 1), 1, ""},
      {"AssocMaxJobsLimit", assoc(2, [](auto* l) { l->set_max_jobs(2); }), run_alice(2, 1), 1,
       "AssocMaxJobsLimit"},
      {"AssocMaxJobs other user", assoc(2, [](auto* l) { l->set_max_jobs(2); }), run_bob(2, 1), 1,
       ""},
      {"AssocGrpJobsLimit", assoc(2, [](auto* l) { l->set_grp_jobs(2); }), run_bob(2, 1), 1,
       "AssocGrpJobsLimit"},
      {"AssocGrpCpuLimit", assoc(1, [](auto* l) { l->set_grp_tres("cpu=4"); }), run_bob(1, 3), 2,
       "AssocGrpCpuLimit"},
      {"AssocGrpMemLimit", assoc(2, [](auto* l) { l->set_grp_tres("mem=500M"); }), run_bob(1, 4), 2,
       "AssocGrpMemLimit"},
      {"AssocGrpNodeLimit", assoc(2, [](auto* l) { l->set_grp_tres("node=1"); }), run_bob(1, 1), 1,
       "AssocGrpNodeLimit"},
      {"AssocMaxCpuPerJobLimit", assoc(10, [](auto* l) { l->set_max_tres_per_job("cpu=2"); }), none,
       3, "AssocMaxCpuPerJobLimit"},
      {"AssocMaxNodePerJobLimit", assoc(2, [](auto* l) { l->set_max_tres_per_job("node=0"); }),
       none, 1, "AssocMaxNodePerJobLimit"},
      {"AssocMaxWallDurationPerJobLimit", assoc(1, [](auto* l) { l->set_max_wall_minutes(30); }),
       none, 1, "AssocMaxWallDurationPerJobLimit"},
      {"QOSMaxJobsPerUserLimit", qos([](auto* l) { l->set_max_jobs(3); }), run_alice(3, 1), 1,
       "QOSMaxJobsPerUserLimit"},
      {"QOSMaxJobsPerUser other user", qos([](auto* l) { l->set_max_jobs(3); }), run_bob(3, 1), 1,
       ""},
      {"QOSGrpJobsLimit", qos([](auto* l) { l->set_grp_jobs(3); }), run_bob(3, 1), 1,
       "QOSGrpJobsLimit"},
      {"QOSGrpCpuLimit", qos([](auto* l) { l->set_grp_tres("cpu=4"); }), run_bob(1, 3), 2,
       "QOSGrpCpuLimit"},
      {"QOSMaxCpuPerJobLimit", qos([](auto* l) { l->set_max_tres_per_job("cpu=1"); }), none, 2,
       "QOSMaxCpuPerJobLimit"},
      {"QOSMaxWallDurationPerJobLimit", qos([](auto* l) { l->set_max_wall_minutes(59); }), none, 1,
       "QOSMaxWallDurationPerJobLimit"},
      {"QOSMaxCpuPerUserLimit", qos([](auto* l) { l->set_max_tres_per_user("cpu=4"); }),
       run_alice(1, 3), 2, "QOSMaxCpuPerUserLimit"},
      {"QOSMaxNodePerUserLimit", qos([](auto* l) { l->set_max_tres_per_user("node=1"); }),
       run_alice(1, 1), 1, "QOSMaxNodePerUserLimit"},
      {"QOS before association",
       [](Fixture& fx) {
         fx.Qos("limited")->mutable_limits()->set_grp_jobs(1);
         fx.Assoc(2)->set_grp_jobs(1);
       },
       run_bob(1, 1), 1, "QOSGrpJobsLimit"},
  };
  for (const ReasonCase& rc : cases) {
    Fixture f;
    f.AllowLimited();
    rc.set(f);
    AssocTree t = f.Tree();
    UsageCounters c;
    rc.load(c, t);
    CountedJob job = Counted(10, "alice", "limited", rc.cpus);
    EXPECT_EQ(PendingLimitReason({t, c}, job), rc.want) << rc.name;
  }
}

TEST(PendingLimitReason, GresLimits) {
  Fixture f;
  f.AllowLimited();
  f.Assoc(2)->set_grp_tres("gres/gpu=2");
  AssocTree t = f.Tree();
  UsageCounters c;
  CountedJob running = Counted(11, "bob", "normal");
  running.shape.gres["gres/gpu"] = 2;
  CountRunning(c, t, running, +1);
  CountedJob job = Counted(10, "alice", "limited");
  EXPECT_EQ(PendingLimitReason({t, c}, job), "");  // no GPUs asked
  job.shape.gres["gres/gpu"] = 1;
  EXPECT_EQ(PendingLimitReason({t, c}, job), "AssocGrpGRES");
  CountRunning(c, t, running, -1);
  EXPECT_EQ(PendingLimitReason({t, c}, job), "");
  EXPECT_TRUE(c.assoc_tree[2].gres.empty());
}

class FixedMinutes : public UsageMinutesSource {
 public:
  double AssocCpuMinutes(uint32_t id) const override { return id == 2 ? 100 : 0; }
  double QosCpuMinutes(std::string_view) const override { return 0; }
};

TEST(PendingLimitReason, GrpCpuMinutes) {
  Fixture f;
  f.Assoc(2)->set_grp_tres_mins("cpu=100");
  AssocTree t = f.Tree();
  UsageCounters c;
  FixedMinutes used;
  CountedJob job = Counted(10, "alice", "normal");
  EXPECT_EQ(PendingLimitReason({t, c}, job), "");  // no usage source: not checked
  EXPECT_EQ(PendingLimitReason({t, c, &used}, job), "AssocGrpCPUMinutesLimit");
  f.Assoc(2)->set_grp_tres_mins("cpu=130");
  t = f.Tree();
  EXPECT_EQ(PendingLimitReason({t, c, &used}, job), "");
  EXPECT_EQ(PendingLimitReason({t, c, &used, /*safe=*/true}, job),
            "AssocGrpCPUMinutesLimit");  // 100 used + 60 wanted > 130
}

TEST(UsageCounters, IncrementalMatchesRecount) {
  Fixture f;
  AssocTree t = f.Tree();
  UsageCounters c;
  CountedJob a = Counted(10, "alice", "normal", 2), b = Counted(11, "bob", "normal", 3);
  CountSubmitted(c, t, a, +1);
  CountSubmitted(c, t, b, +1);
  CountRunning(c, t, b, +1);
  UsageCounters r = Recount(t, {a, b}, {b});
  EXPECT_EQ(c.assoc_tree[1].submitted, 2u);
  EXPECT_EQ(c.assoc_tree[2].running, 1u);
  EXPECT_EQ(c.assoc_tree[2].cpus, 3u);
  EXPECT_EQ(c.assoc_own[10].running, 0u);
  EXPECT_EQ(r.assoc_tree[1].submitted, c.assoc_tree[1].submitted);
  EXPECT_EQ(r.assoc_tree[1].cpus, c.assoc_tree[1].cpus);
  EXPECT_EQ((r.qos_user[{"normal", "bob"}].running), 1u);
  CountRunning(c, t, b, -1);
  CountRunning(c, t, b, -1);  // a second removal never wraps around
  EXPECT_EQ(c.assoc_tree[1].cpus, 0u);
  EXPECT_EQ(c.assoc_tree[1].running, 0u);
}

}  // namespace
}  // namespace shoal::sched
