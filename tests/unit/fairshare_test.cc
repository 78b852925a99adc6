#include "sched/fairshare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <queue>

namespace shoal::sched {
namespace {

pb::AcctAssoc* AddAssoc(pb::AssocSnapshot& s, uint32_t id, const std::string& account,
                        const std::string& user, const std::string& parent = "",
                        uint32_t shares = 1) {
  pb::AcctAssoc* a = s.add_assocs();
  a->set_id(id);
  a->set_account(account);
  a->set_user(user);
  a->set_parent_account(parent);
  a->set_shares(shares);
  return a;
}

std::shared_ptr<const AssocTree> Tree(const pb::AssocSnapshot& s) {
  return std::make_shared<const AssocTree>(AssocTree::Build(s));
}

FairShareConfig Config(bool fair_tree, int64_t half_life = 7 * 86400) {
  FairShareConfig c;
  c.fair_tree = fair_tree;
  c.decay_half_life_s = half_life;
  return c;
}

// The tree of the real Slurm 22.05 cluster observed in docs/notes: root has user root and
// accounts bio{acctuser2}, chem{acctuser1, acctuser2}, lim{acctuser3}, physics{}.
pb::AssocSnapshot ObservedTree() {
  pb::AssocSnapshot s;
  AddAssoc(s, 1, "root", "");
  AddAssoc(s, 2, "root", "root");
  AddAssoc(s, 8, "bio", "", "root");
  AddAssoc(s, 11, "bio", "acctuser2");
  AddAssoc(s, 15, "chem", "", "root");
  AddAssoc(s, 16, "chem", "acctuser1");
  AddAssoc(s, 17, "chem", "acctuser2");
  AddAssoc(s, 18, "lim", "", "root");
  AddAssoc(s, 19, "lim", "acctuser3");
  AddAssoc(s, 3, "physics", "", "root");
  return s;
}

TEST(FairShareConfig, DefaultsAndFlags) {
  auto c = ParseFairShareConfig({});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->fair_tree);  // Slurm's default since 19.05
  EXPECT_EQ(c->decay_half_life_s, 7 * 86400);
  EXPECT_EQ(c->calc_period_s, 300);
  c = ParseFairShareConfig({{"PriorityFlags", "ACCRUE_ALWAYS,NO_FAIR_TREE"},
                            {"PriorityDecayHalfLife", "1-12"},
                            {"PriorityUsageResetPeriod", "weekly"},
                            {"PriorityCalcPeriod", "1"}});
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c->fair_tree);
  EXPECT_EQ(c->decay_half_life_s, 36 * 3600);
  EXPECT_EQ(c->reset_period, UsageResetPeriod::kWeekly);
  EXPECT_EQ(c->calc_period_s, 60);
  EXPECT_FALSE(ParseFairShareConfig({{"PriorityFlags", "DEPTH_OBLIVIOUS"}})->fair_tree);
  EXPECT_EQ(ParseFairShareConfig({{"PriorityUsageResetPeriod", "often"}}).error(),
            "Invalid PriorityUsageResetPeriod value: often");
  EXPECT_EQ(ParseFairShareConfig({{"PriorityDecayHalfLife", "0"}})->decay_half_life_s, 0);
}

TEST(FairShare, HalfLifeHalvesUsage) {
  FairShare fs(Config(true, 3600));
  fs.SetTree(Tree(ObservedTree()));
  fs.Advance(1000);
  fs.Charge(16, "normal", 7200);
  fs.Advance(1000 + 3600);
  EXPECT_NEAR(fs.Values(16)->usage, 3600, 1e-6);
  EXPECT_NEAR(fs.Values(15)->usage, 3600, 1e-6);  // the account's subtree
  EXPECT_NEAR(fs.Values(1)->usage, 3600, 1e-6);
  fs.Advance(1000 + 3 * 3600);
  EXPECT_NEAR(fs.Values(16)->usage, 900, 1e-6);
  EXPECT_NEAR(fs.QosCpuMinutes("normal"), 15, 1e-9);
  EXPECT_NEAR(fs.AssocCpuMinutes(15), 15, 1e-9);

  FairShare none(Config(true, 0));  // no decay
  none.SetTree(Tree(ObservedTree()));
  none.Advance(1000);
  none.Charge(16, "", 100);
  none.Advance(1000 + 10 * 86400);
  EXPECT_NEAR(none.Values(16)->usage, 100, 1e-9);
}

TEST(FairShare, RunningJobsAccrueWithUsageFactor) {
  pb::AssocSnapshot s = ObservedTree();
  pb::AcctQos* q = s.add_qos();
  q->set_name("double");
  q->set_usage_factor(2.0);
  FairShare fs(Config(true, 0));
  fs.SetTree(Tree(s));
  fs.Advance(100);
  ChargedJob j;
  j.assoc_id = 16;
  j.qos = "double";
  j.cpus = 4;
  j.start_time = 100;
  j.time_limit_min = 10;
  fs.JobStarted(1, j);
  fs.Advance(160);
  EXPECT_NEAR(fs.Values(16)->usage, 4 * 60 * 2, 1e-9);
  pb::ShareQueryRequest all;
  all.set_all_users(true);
  auto resp = fs.Shares(all, "", 160);
  // 9 minutes left x 4 CPUs.
  EXPECT_EQ(resp.records(0).tres_run_mins(),
            "cpu=36,mem=0,energy=0,node=9,billing=36,fs/disk=0,vmem=0,pages=0");
  fs.JobEnded(1, 190);
  EXPECT_NEAR(fs.Values(16)->usage, 4 * 60 * 2, 1e-9);  // charged, shown at the next Advance
  fs.Advance(200);
  EXPECT_NEAR(fs.Values(16)->usage, 4 * 90 * 2, 1e-9);
}

TEST(FairShare, ExportImportKeepsUsage) {
  FairShare fs(Config(true, 3600));
  fs.SetTree(Tree(ObservedTree()));
  fs.Advance(50);
  fs.Charge(19, "normal", 500);
  fs.Advance(60);
  UsageState st = fs.Export();
  EXPECT_EQ(st.last_update, 60);
  ASSERT_EQ(st.assoc_usage.size(), 1u);
  EXPECT_EQ(st.assoc_usage[0].first, 19u);

  FairShare back(Config(true, 3600));
  back.SetTree(Tree(ObservedTree()));
  back.Import(st);
  EXPECT_NEAR(back.Values(18)->usage, fs.Values(18)->usage, 1e-9);
  // A job that ran before the restart is charged only from the saved time on.
  ChargedJob j;
  j.assoc_id = 19;
  j.start_time = 0;
  back.JobStarted(7, j);
  back.Advance(60 + 3600);
  EXPECT_NEAR(back.Values(19)->usage, fs.Values(19)->usage / 2 + 3600, 1e-6);

  FairShareConfig now = Config(true);
  now.reset_period = UsageResetPeriod::kNow;
  FairShare reset(now);
  reset.SetTree(Tree(ObservedTree()));
  reset.Import(st);
  EXPECT_EQ(reset.Values(19)->usage, 0);
}

TEST(FairShare, UsageResetPeriod) {
  FairShareConfig c = Config(true, 0);
  c.reset_period = UsageResetPeriod::kDaily;
  FairShare fs(c);
  fs.SetTree(Tree(ObservedTree()));
  int64_t t0 = NextUsageReset(UsageResetPeriod::kDaily, 1700000000) - 3600;  // 23:00
  fs.Advance(t0);
  fs.Charge(16, "", 100);
  fs.Advance(t0 + 1800);
  EXPECT_EQ(fs.Values(16)->usage, 100);
  fs.Advance(t0 + 3601);
  EXPECT_EQ(fs.Values(16)->usage, 0);
  EXPECT_GT(NextUsageReset(UsageResetPeriod::kMonthly, t0), t0);
  EXPECT_EQ(NextUsageReset(UsageResetPeriod::kNone, t0), 0);
}

// The numbers Slurm 22.05 showed (sshare -l) for this tree and usage; see the layout test in
// sshare_format_test.cc for the same rows printed.
TEST(FairTree, MatchesObservedSlurm) {
  FairShare fs(Config(true, 0));
  fs.SetTree(Tree(ObservedTree()));
  fs.Advance(1);
  fs.Charge(2, "", 40);
  fs.Charge(11, "", 4);
  fs.Charge(16, "", 278);
  fs.Charge(17, "", 4);
  fs.Charge(19, "", 29);
  fs.Advance(2);
  EXPECT_DOUBLE_EQ(fs.Factor("acctuser2", "bio"), 1.0);
  EXPECT_DOUBLE_EQ(fs.Factor("acctuser3", "lim"), 0.8);
  EXPECT_DOUBLE_EQ(fs.Factor("root", "root"), 0.6);
  EXPECT_DOUBLE_EQ(fs.Factor("acctuser2", "chem"), 0.4);
  EXPECT_DOUBLE_EQ(fs.Factor("acctuser1", "chem"), 0.2);
  EXPECT_DOUBLE_EQ(fs.Factor("nobody", "chem"), 0.0);
  const ShareValues* chem = fs.Values(15);
  EXPECT_NEAR(chem->norm_shares, 0.2, 1e-12);
  EXPECT_NEAR(chem->effective_usage, 282.0 / 355, 1e-12);
  EXPECT_NEAR(chem->level_fs, 0.2 / (282.0 / 355), 1e-12);
  EXPECT_TRUE(std::isinf(fs.Values(3)->level_fs));  // physics: no usage
  EXPECT_NEAR(fs.Values(16)->effective_usage, 278.0 / 282, 1e-12);
}

TEST(FairTree, Ties) {
  // root -> a{u1,u2}, b{u3}: no usage anywhere, everything ties.
  pb::AssocSnapshot s;
  AddAssoc(s, 1, "root", "");
  AddAssoc(s, 2, "a", "", "root");
  AddAssoc(s, 3, "b", "", "root");
  AddAssoc(s, 4, "a", "u1");
  AddAssoc(s, 5, "a", "u2");
  AddAssoc(s, 6, "b", "u3");
  AddAssoc(s, 7, "root", "u4");
  FairShare fs(Config(true));
  fs.SetTree(Tree(s));
  fs.Advance(10);
  // u4 ties with the accounts: it gets their best rank; all tie at the top.
  for (auto [u, a] : {std::pair{"u1", "a"}, {"u2", "a"}, {"u3", "b"}, {"u4", "root"}})
    EXPECT_DOUBLE_EQ(fs.Factor(u, a), 1.0) << u;
  fs.Charge(4, "", 10);  // u1 used: a drops below b and u4
  fs.Advance(11);
  EXPECT_DOUBLE_EQ(fs.Factor("u3", "b"), 1.0);
  EXPECT_DOUBLE_EQ(fs.Factor("u4", "root"), 1.0);
  EXPECT_DOUBLE_EQ(fs.Factor("u2", "a"), 0.5);
  EXPECT_DOUBLE_EQ(fs.Factor("u1", "a"), 0.25);
}

TEST(FairTree, ParentShares) {
  pb::AssocSnapshot s;
  AddAssoc(s, 1, "root", "");
  AddAssoc(s, 2, "a", "", "root");
  AddAssoc(s, 3, "b", "", "root");
  AddAssoc(s, 4, "a", "u1");
  AddAssoc(s, 5, "a", "u2", "", kSharesParent);
  AddAssoc(s, 6, "b", "u3");
  FairShare fs(Config(true));
  fs.SetTree(Tree(s));
  fs.Advance(10);
  fs.Charge(6, "", 10);  // b used, a did not
  fs.Advance(11);
  EXPECT_DOUBLE_EQ(fs.Factor("u1", "a"), 1.0);
  EXPECT_DOUBLE_EQ(fs.Factor("u2", "a"), 1.0);  // its account's best rank
  EXPECT_NEAR(fs.Factor("u3", "b"), 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(fs.Values(4)->norm_shares, 1.0);  // u2 is not a sibling for shares
}

TEST(Classic, FormulaValues) {
  // root -> a(1){u1(1), u2(3)}, b(3){u3}
  pb::AssocSnapshot s;
  AddAssoc(s, 1, "root", "");
  AddAssoc(s, 2, "a", "", "root", 1);
  AddAssoc(s, 3, "b", "", "root", 3);
  AddAssoc(s, 4, "a", "u1", "", 1);
  AddAssoc(s, 5, "a", "u2", "", 3);
  AddAssoc(s, 6, "b", "u3");
  AddAssoc(s, 7, "b", "u4", "", kSharesParent);
  FairShare fs(Config(false, 0));
  fs.SetTree(Tree(s));
  fs.Advance(1);
  fs.Charge(4, "", 30);
  fs.Charge(5, "", 10);
  fs.Charge(6, "", 60);
  fs.Advance(2);
  const ShareValues* a = fs.Values(2);
  EXPECT_DOUBLE_EQ(a->norm_shares, 0.25);
  EXPECT_DOUBLE_EQ(a->norm_usage, 0.4);
  EXPECT_DOUBLE_EQ(a->effective_usage, 0.4);  // under root: the actual usage
  const ShareValues* u1 = fs.Values(4);
  EXPECT_DOUBLE_EQ(u1->norm_shares, 0.0625);
  EXPECT_DOUBLE_EQ(u1->effective_usage, 0.3 + (0.4 - 0.3) * 0.25);
  EXPECT_DOUBLE_EQ(fs.Factor("u1", "a"), std::exp2(-u1->effective_usage / 0.0625));
  EXPECT_DOUBLE_EQ(fs.Factor("u4", "b"), fs.Values(3)->fairshare);  // Fairshare=parent
  EXPECT_DOUBLE_EQ(fs.Values(6)->norm_shares, 0.75);
}

TEST(FairShare, SharesRowsFilterAndIndent) {
  FairShare fs(Config(true));
  fs.SetTree(Tree(ObservedTree()));
  fs.Advance(1);
  pb::ShareQueryRequest req;
  auto resp = fs.Shares(req, "acctuser1", 1);
  EXPECT_TRUE(resp.fair_tree());
  std::vector<std::string> rows;
  for (const auto& r : resp.records())
    rows.push_back(std::string(r.depth(), ' ') + r.account() + "|" + r.user());
  EXPECT_EQ(rows, (std::vector<std::string>{"root|", " bio|", " chem|", "  chem|acctuser1", " lim|",
                                            " physics|"}));
  EXPECT_EQ(resp.records(0).raw_shares(), kNoRawShares);
  EXPECT_TRUE(std::isnan(resp.records(0).norm_usage()));
  EXPECT_TRUE(std::isnan(resp.records(1).fairshare()));  // accounts: no factor in Fair Tree

  req.add_accounts("CHEM");
  req.add_accounts("bio");
  req.set_all_users(true);
  resp = fs.Shares(req, "acctuser1", 1);
  rows.clear();
  for (const auto& r : resp.records())
    rows.push_back(std::string(r.depth(), ' ') + r.account() + "|" + r.user());
  EXPECT_EQ(rows, (std::vector<std::string>{"bio|", " bio|acctuser2", "chem|", " chem|acctuser1",
                                            " chem|acctuser2"}));
}

// Two accounts with Fairshare 1:3 on a saturated cluster: both always have 1-CPU jobs
// waiting; each time CPUs free, the waiting job with the highest multifactor priority
// (fair-share only) starts. The CPU time each account gets converges to 1:3.
double SimulateShareRatio(bool fair_tree) {
  pb::AssocSnapshot s;
  AddAssoc(s, 1, "root", "");
  AddAssoc(s, 2, "small", "", "root", 1);
  AddAssoc(s, 3, "big", "", "root", 3);
  AddAssoc(s, 10, "small", "alice");
  AddAssoc(s, 11, "big", "bob");
  FairShare fs(Config(fair_tree, 12 * 3600));
  fs.SetTree(Tree(s));

  PriorityConfig pcfg;
  pcfg.type = PriorityType::kMultifactor;
  pcfg.weight_fairshare = 1000000;
  PriorityContext ctx;
  constexpr uint32_t kCpus = 32;
  ctx.total_cpus = kCpus;

  struct Ending {
    int64_t end;
    uint32_t job_id;
    bool operator>(const Ending& o) const { return end > o.end; }
  };
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> running;
  uint32_t next_id = 1;
  uint64_t rng = 12345;
  auto duration = [&rng] {  // 30 minutes to 3 hours, deterministic
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t(1800 + (rng >> 33) % (150 * 60));
  };
  std::map<uint32_t, std::pair<uint32_t, int64_t>> started;  // job -> (assoc, start)
  double delivered[2] = {0, 0};                              // small, big in the window
  constexpr int64_t kEnd = 20 * 86400, kWindow = 10 * 86400;
  int64_t now = 0;
  fs.Advance(now);
  uint32_t free_cpus = kCpus;
  while (now < kEnd) {
    // Fill every free CPU, one job at a time, each by current priority.
    while (free_cpus > 0) {
      PriorityJob pa{next_id, "alice", "small"}, pb_{next_id + 1, "bob", "big"};
      uint32_t pri_a = MultifactorPriority(pcfg, ctx, pa, fs).priority;
      uint32_t pri_b = MultifactorPriority(pcfg, ctx, pb_, fs).priority;
      bool pick_b = pri_b > pri_a || (pri_b == pri_a && (next_id % 2));
      uint32_t id = next_id;
      next_id += 2;
      uint32_t assoc = pick_b ? 11 : 10;
      ChargedJob rj;
      rj.assoc_id = assoc;
      rj.start_time = now;
      fs.JobStarted(id, rj);
      started[id] = {assoc, now};
      running.push({now + duration(), id});
      --free_cpus;
      fs.Advance(now);  // the factor reflects the new job at once (Slurm: next calc period)
    }
    Ending e = running.top();
    running.pop();
    now = e.end;
    fs.JobEnded(e.job_id, now);
    auto [assoc, start] = started[e.job_id];
    started.erase(e.job_id);
    int64_t from = std::max(start, kEnd - kWindow);
    if (now > from) delivered[assoc == 11 ? 1 : 0] += double(now - from);
    ++free_cpus;
    fs.Advance(now);
  }
  return delivered[1] / delivered[0];
}

TEST(FairShareConvergence, FairTreeOneToThree) {
  double ratio = SimulateShareRatio(true);
  EXPECT_NEAR(ratio, 3.0, 0.3) << ratio;
  std::printf("big:small CPU time = %.3f\n", ratio);
}

TEST(FairShareConvergence, ClassicOneToThree) {
  double ratio = SimulateShareRatio(false);
  EXPECT_NEAR(ratio, 3.0, 0.3) << ratio;
  std::printf("big:small CPU time = %.3f\n", ratio);
}

}  // namespace
}  // namespace shoal::sched
