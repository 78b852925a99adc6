#include "cli/sacctmgr_format.h"

#include <gtest/gtest.h>

#include "common/units.h"

namespace shoal::cli::sacctmgr {
namespace {

pb::AcctAssoc A(const std::string& acct, const std::string& user, const std::string& parent) {
  pb::AcctAssoc a;
  a.set_cluster("obs");
  a.set_account(acct);
  a.set_user(user);
  a.set_parent_account(user.empty() ? parent : acct);
  a.set_shares(1);
  a.set_priority(-1);
  a.add_qos("normal");
  return a;
}

pb::AcctShowResponse Tree() {
  pb::AcctShowResponse r;
  *r.add_assocs() = A("root", "", "");
  *r.add_assocs() = A("root", "root", "");
  *r.add_assocs() = A("chem", "", "root");
  *r.add_assocs() = A("chem", "acctuser1", "");
  *r.add_assocs() = A("lim", "", "root");
  *r.add_assocs() = A("sub", "", "lim");
  return r;
}

std::string Show(const std::string& entity, const pb::AcctShowResponse& r,
                 std::vector<std::string> format, RenderOptions o = {}, bool with_assoc = false) {
  auto cols = ResolveColumns(entity, format, with_assoc, o.tree, false);
  EXPECT_TRUE(cols.ok()) << cols.error();
  return RenderShow(entity, r, *cols, o);
}

TEST(SacctmgrFormatTest, AssocTreeLayout) {
  RenderOptions o;
  o.tree = true;
  EXPECT_EQ(Show("association", Tree(), {"cluster", "account", "user", "share"}, o),
            "   Cluster Account                    User     Share \n"
            "---------- -------------------- ---------- --------- \n"
            "       obs root                                    1 \n"
            "       obs  root                      root         1 \n"
            "       obs  chem                                   1 \n"
            "       obs   chem                acctuser1         1 \n"
            "       obs  lim                                    1 \n"
            "       obs   sub                                   1 \n");
}

TEST(SacctmgrFormatTest, DefaultAssocColumns) {
  auto cols = ResolveColumns("association", {}, false, false, false);
  ASSERT_TRUE(cols.ok());
  std::string header;
  for (const auto& c : *cols) header += c.header + ",";
  EXPECT_EQ(header,
            "Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,"
            "GrpTRESMins,MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,"
            "Def QOS,GrpTRESRunMin,");
  std::string out = Show("association", Tree(), {});
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "   Cluster    Account       User  Partition     Share   Priority GrpJobs       "
            "GrpTRES GrpSubmit     GrpWall   GrpTRESMins MaxJobs       MaxTRES MaxTRESPerNode "
            "MaxSubmit     MaxWall   MaxTRESMins                  QOS   Def QOS GrpTRESRunMin ");
}

TEST(SacctmgrFormatTest, UsersParsableAndTruncation) {
  pb::AcctShowResponse r;
  pb::AcctUser* u = r.add_users();
  u->set_name("root");
  u->set_default_account("root");
  u->set_admin_level("Administrator");
  u = r.add_users();
  u->set_name("acctuser1");
  u->set_admin_level("None");
  EXPECT_EQ(Show("user", r, {}),
            "      User   Def Acct     Admin \n"
            "---------- ---------- --------- \n"
            "      root       root Administ+ \n"
            " acctuser1                 None \n");
  RenderOptions p2;
  p2.parsable = 2;
  EXPECT_EQ(Show("user", r, {}, p2),
            "User|Def Acct|Admin\nroot|root|Administrator\nacctuser1||None\n");
  RenderOptions p1;
  p1.parsable = 1;
  p1.noheader = true;
  EXPECT_EQ(Show("user", r, {}, p1), "root|root|Administrator|\nacctuser1||None|\n");
}

TEST(SacctmgrFormatTest, QosWidthsAndValues) {
  pb::AcctShowResponse r;
  pb::AcctQos* q = r.add_qos();
  q->set_name("normal");
  q->set_usage_factor(1.0);
  q->set_preempt_mode("cluster");
  q = r.add_qos();
  q->set_name("high");
  q->set_priority(10);
  q->set_usage_factor(1.0);
  q->add_preempt("normal");
  q->mutable_limits()->set_max_wall_minutes(90);
  q->mutable_limits()->set_max_jobs(1);
  EXPECT_EQ(Show("qos", r, {"name%-20", "priority%3"}),
            "Name                 Pri \n"
            "-------------------- --- \n"
            "normal                 0 \n"
            "high                  10 \n");
  EXPECT_EQ(Show("qos", r, {"name", "gracetime", "preempt", "usagefactor", "maxwall", "maxjobspu"}),
            "      Name  GraceTime    Preempt UsageFactor     MaxWall MaxJobsPU \n"
            "---------- ---------- ---------- ----------- ----------- --------- \n"
            "    normal   00:00:00               1.000000                       \n"
            "      high   00:00:00     normal    1.000000    01:30:00         1 \n");
  auto cols = ResolveColumns("qos", {}, false, false, false);
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->size(), 26u);
}

TEST(SacctmgrFormatTest, TresAndUnknownField) {
  pb::AcctShowResponse r;
  for (const char* t : {"cpu", "mem", "fs/disk", "gres/gpu"}) r.add_tres(t);
  EXPECT_EQ(Show("tres", r, {}),
            "    Type            Name     ID \n"
            "-------- --------------- ------ \n"
            "     cpu                      1 \n"
            "     mem                      2 \n"
            "      fs            disk      6 \n"
            "    gres             gpu   1001 \n");
  auto bad = ResolveColumns("user", {"foo"}, false, false, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "Unknown field 'foo'");
  EXPECT_EQ(MinutesText(30), "00:30:00");
  EXPECT_EQ(MinutesText(1500), "1-01:00:00");
}

TEST(SacctmgrFormatTest, ShareParentAndPriority) {
  pb::AcctShowResponse r;
  pb::AcctAssoc a = A("chem", "bob", "");
  a.set_shares(kSharesParent);
  a.set_priority(5);
  a.mutable_limits()->set_grp_tres("cpu=4,mem=2G");
  *r.add_assocs() = a;
  RenderOptions p;
  p.parsable = 2;
  p.noheader = true;
  EXPECT_EQ(Show("association", r, {"user", "share", "priority", "grptres", "qos"}, p),
            "bob|parent|5|cpu=4,mem=2G|normal\n");
}

}  // namespace
}  // namespace shoal::cli::sacctmgr
